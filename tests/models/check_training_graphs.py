#!/usr/bin/env python3
"""Saves the training graph of every bundled model with a training.yaml
(`ort_train train --save-training-graph`) and checks it with onnx's checker
(full check, shape inference included): the saved file must be valid ONNX,
declare the com.ort_train domain it uses, and name every gradient output.

Needs the onnx Python package (Debian's python3-onnx); exits 77 (skipped)
when it is missing, as on a machine without it.
"""
import argparse
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--models", required=True)
    args = ap.parse_args()
    try:
        import onnx
    except ImportError:
        print("SKIPPED: the onnx Python package is not installed (tools/install_deps.sh --python)")
        return 77
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(os.listdir(args.models)):
            folder = os.path.join(args.models, name)
            desc = os.path.join(folder, "training.yaml")
            if not os.path.isfile(desc):
                continue
            out = os.path.join(tmp, f"{name}.onnx")
            r = subprocess.run([args.ort_train, "--log-level", "warn", "train", "--model",
                                os.path.join(folder, "model.onnx"), "--config", desc, "--save-training-graph", out],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name:16} FAILED to save: {r.stderr.strip()}")
                failures += 1
                continue
            model = onnx.load(out)
            try:
                onnx.checker.check_model(model, full_check=True)
            except Exception as e:  # the checker raises several exception types
                print(f"{name:16} REJECTED by onnx.checker: {str(e).splitlines()[0]}")
                failures += 1
                continue
            domains = {o.domain for o in model.opset_import}
            custom = {n.domain for n in model.graph.node if n.domain not in ("", "ai.onnx")}
            grads = [o.name for o in model.graph.output if o.name.endswith("_grad")]
            missing = custom - domains
            if missing or not grads:
                print(f"{name:16} FAILED: undeclared domains {sorted(missing)}, {len(grads)} gradient outputs")
                failures += 1
                continue
            print(f"{name:16} ok: {len(model.graph.node)} nodes, {len(grads)} gradient outputs, "
                  f"domains {sorted(d or 'ai.onnx' for d in domains)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
