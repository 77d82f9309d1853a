#!/usr/bin/env python3
"""ort_train's exported adapters loaded into PEFT (issue 53): ort_train
fine-tunes tests/models/dynamo/<model>_plain with lora/lora.yaml from PEFT's
start adapters, writes --export-adapters and the merged --export; then
PeftModel.from_pretrained loads those adapters onto the PyTorch module, and its
forward (the loss on the folder's batch) must equal `ort_train run` of the
merged model within 1e-4. Needs torch, transformers and peft: run by a python
that has them (ORT_TRAIN_TORCH_PYTHON names one); skipped (exit 77) without."""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--models", nargs="*", default=["llama_plain", "bert_plain"])
    args = ap.parse_args()
    try:
        import onnx  # noqa: F401
        import peft  # noqa: F401
        import torch
        import transformers  # noqa: F401
    except ImportError as e:
        other = os.environ.pop("ORT_TRAIN_TORCH_PYTHON", None)  # popped: tried once
        if other:
            os.execve(other, [other, *sys.argv], os.environ)
        print(f"skipped: {e} (set ORT_TRAIN_TORCH_PYTHON to a python with torch, transformers and peft)")
        return 77
    from onnx import numpy_helper
    from peft import PeftModel
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import peft_reference
    torch.backends.mkldnn.enabled = False
    failed = False
    for folder_name in args.models:
        folder = os.path.join(ROOT, "tests", "models", "dynamo", folder_name)
        name = folder_name.split("_")[0]
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([args.ort_train, "--config", f"{folder}/lora/lora.yaml", "--data", f"{folder}/train_batches",
                            "--adapters", f"{folder}/lora/start/adapter_model.safetensors", "--steps", "10",
                            "--device", "cpu", "--log-level", "error", "--export", f"{tmp}/merged.onnx",
                            "--export-adapters", f"{tmp}/adapters/adapter_model.safetensors"], check=True)
            subprocess.run([args.ort_train, "run", "--model", f"{tmp}/merged.onnx", "--inputs",
                            f"{folder}/train_batches/0", "--outputs", f"{tmp}/out", "--log-level", "error"], check=True)
            merged_loss = float(numpy_helper.to_array(onnx.load_tensor(f"{tmp}/out/loss.pb")))
            module, batch = peft_reference.load_module(name, folder)
            model = PeftModel.from_pretrained(module, f"{tmp}/adapters")
            model.train()
            with torch.no_grad():
                peft_loss = model(*batch).item()
        ok = abs(peft_loss - merged_loss) < 1e-4
        failed |= not ok
        print(f"{folder_name}: PEFT with ort_train's adapters {peft_loss:.7f}, ort_train run of the merged model "
              f"{merged_loss:.7f}: {'ok' if ok else 'MISMATCH'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
