#!/usr/bin/env python3
"""PEFT's LoRA trajectories for the LoRA parity test (issue 53): for each of
tests/models/dynamo/<model>_plain (a Llama and a BERT exported by
tools/export_dynamo_models.py), the PyTorch module is rebuilt with the file's
weights, PEFT adds rank-4 adapters on the attention projections (B drawn
non-zero, so both A and B get gradients from step 1), and AdamW trains them
10 steps on the folder's batch. Written into <folder>/lora/:

  start/adapter_model.safetensors, start/adapter_config.json   what both start from (--adapters)
  final/adapter_model.safetensors                              PEFT's adapters after the 10 steps
  trajectory.json                                              the losses, each before its update; the settings
  lora.yaml                                                    the description ort_train trains with

Needs torch, transformers, peft and onnx (a venv: pip install torch
transformers peft onnx onnxscript).
    tools/peft_reference.py [--models llama bert]
"""
import argparse
import json
import os
import shutil
import sys

import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_dynamo_models  # noqa: E402

STEPS = 10
RANK, ALPHA = 4, 8
OPTIMIZER = {"lr": 1e-2, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}
TARGETS = {"llama": ["q_proj", "v_proj"], "bert": ["query", "value"]}
GLOBS = {"llama": ["*q_proj.weight", "*v_proj.weight"], "bert": ["*self.query.weight", "*self.value.weight"]}


def load_module(name, folder):
    """The exported module, with the ONNX file's weights and the folder's batch."""
    torch.manual_seed(0)
    module, _, input_names = export_dynamo_models.MODELS[name]()
    model = onnx.load(os.path.join(folder, "model.onnx"))
    weights = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in model.graph.initializer}
    state = module.state_dict()
    loaded = {k: weights[k] for k in state if k in weights}
    # A tied weight (BERT's decoder and word embeddings) is in the file once, under one of its names.
    loaded_storage = {state[k].data_ptr() for k in loaded}
    missing = [k for k in state if k not in weights and not k.endswith("inv_freq")
               and state[k].data_ptr() not in loaded_storage]
    if missing:
        raise SystemExit(f"{folder}: the file lacks {missing[:4]}")
    module.load_state_dict(loaded, strict=False)
    batch = os.path.join(folder, "train_batches", "0")
    args = tuple(torch.from_numpy(numpy_helper.to_array(onnx.load_tensor(os.path.join(batch, f"{n}.pb"))).copy())
                 for n in input_names)
    return module, args


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=list(TARGETS), choices=list(TARGETS))
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", "tests", "models", "dynamo"))
    args = ap.parse_args()
    torch.backends.mkldnn.enabled = False
    from peft import LoraConfig, get_peft_model
    for name in args.models:
        folder = os.path.join(args.root, f"{name}_plain")
        out = os.path.join(folder, "lora")
        shutil.rmtree(out, ignore_errors=True)
        module, batch = load_module(name, folder)
        module.train()
        peft = get_peft_model(module, LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0,
                                                 target_modules=TARGETS[name]))
        torch.manual_seed(1)
        with torch.no_grad():
            for n, p in peft.named_parameters():
                if "lora_B" in n:
                    p.copy_(torch.randn_like(p) * 0.05)
        peft.save_pretrained(os.path.join(out, "start"))
        params = [p for p in peft.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=OPTIMIZER["lr"], betas=tuple(OPTIMIZER["betas"]), eps=OPTIMIZER["eps"],
                                weight_decay=OPTIMIZER["weight_decay"])
        losses = []
        for _ in range(STEPS):
            opt.zero_grad(set_to_none=True)
            loss = peft(*batch)
            losses.append(loss.item())
            loss.backward()
            opt.step()
        peft.save_pretrained(os.path.join(out, "final"))
        os.remove(os.path.join(out, "final", "adapter_config.json"))  # the same as start's
        for sub in ("start", "final"):  # PEFT writes a model card; the test needs none
            card = os.path.join(out, sub, "README.md")
            if os.path.exists(card):
                os.remove(card)
        with open(os.path.join(out, "trajectory.json"), "w") as f:
            json.dump({"steps": STEPS, "rank": RANK, "alpha": ALPHA, "optimizer": OPTIMIZER, "losses": losses,
                       "torch": torch.__version__, "peft": __import__("peft").__version__}, f, indent=1)
        with open(os.path.join(out, "lora.yaml"), "w") as f:
            f.write(f"# tools/peft_reference.py: PEFT's LoraConfig(r={RANK}, lora_alpha={ALPHA}, "
                    f"target_modules={TARGETS[name]}) on this model\n"
                    "model: ../model.onnx\nloss: {output: loss}\n"
                    f"lora: {{targets: {json.dumps(GLOBS[name])}, rank: {RANK}, alpha: {ALPHA}}}\n"
                    f"optimizer: {{name: AdamW, lr: {OPTIMIZER['lr']}, betas: {OPTIMIZER['betas']}, "
                    f"eps: {OPTIMIZER['eps']}, weight_decay: {OPTIMIZER['weight_decay']}}}\n")
        print(f"wrote {out}: losses {losses[0]:.6f} .. {losses[-1]:.6f}")


if __name__ == "__main__":
    main()
