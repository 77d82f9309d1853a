#!/usr/bin/env python3
"""ONNX's ai.onnx.preview.training cases (Adam, Momentum, Adagrad, Gradient)
from ../shared/conformance/onnx_training_tests through `ort_train run`, which
compares against each case's expected outputs. Every case must pass. Exits 77
(skipped) when the folder is absent, as in a user's clone. Standard library only.
"""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--cases", required=True)
    args = ap.parse_args()
    if not os.path.isdir(args.cases):
        print(f"SKIPPED: ONNX training test cases not found at {args.cases} (they live in ../shared)")
        return 77
    failed = 0
    names = sorted(d for d in os.listdir(args.cases) if os.path.isfile(os.path.join(args.cases, d, "model.onnx")))
    for name in names:
        case = os.path.join(args.cases, name)
        r = subprocess.run([args.ort_train, "--log-level", "warn", "run", "--model", os.path.join(case, "model.onnx"),
                            "--inputs", os.path.join(case, "test_data_set_0"), "--rtol", "1e-4", "--atol", "1e-6"],
                           capture_output=True, text=True, timeout=60)
        ok = r.returncode == 0 and "MISMATCH" not in r.stdout
        failed += not ok
        detail = "" if ok else " " + (r.stderr.strip() or r.stdout.strip()).splitlines()[-1]
        print(f"{name:32} {'ok' if ok else 'FAILED'}{detail}")
    print(f"training-op conformance: {len(names) - failed} passed, {failed} failed")
    return 1 if failed or not names else 0


if __name__ == "__main__":
    sys.exit(main())
