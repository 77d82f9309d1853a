#!/usr/bin/env python3
"""Runs every bundled model (tests/models/<name>/model.onnx) forward through
`ort_train run` and checks PyTorch's outputs (output_N.pb beside the inputs)
within rtol 1e-4. Standard library only. Exits 1 if any model fails."""
import argparse
import os
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--rtol", default="1e-4")
    ap.add_argument("--atol", default="1e-5")
    args = ap.parse_args()
    names = sorted(d for d in os.listdir(args.models) if os.path.isfile(os.path.join(args.models, d, "model.onnx")))
    if not names:
        print(f"no models under {args.models}")
        return 1
    failed = 0
    print(f"{'model':16s} {'result':8s} worst errors")
    for name in names:
        d = os.path.join(args.models, name)
        r = subprocess.run([args.ort_train, "--log-level", "warn", "run", "--model", os.path.join(d, "model.onnx"),
                            "--inputs", os.path.join(d, "test_data_set_0"), "--rtol", args.rtol, "--atol", args.atol],
                           capture_output=True, text=True)
        errs = re.findall(r"^(\S+): max abs err ([^,\s]+), max rel err ([^,\s]+), max abs err / max \|expected\| ([^,\s]+)",
                          r.stdout, re.M)
        ok = r.returncode == 0 and errs and "MISMATCH" not in r.stdout
        failed += not ok
        detail = "; ".join(f"{n}: abs {a}, rel {rel}, abs/max|ref| {scaled}" for n, a, rel, scaled in errs) or (r.stderr.strip() or r.stdout.strip())
        print(f"{name:16s} {'ok' if ok else 'FAIL':8s} {detail}")
    print(f"\n{len(names) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
