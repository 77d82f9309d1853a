#!/usr/bin/env python3
"""Runs every bundled model forward through `ort_train run` and checks it
against PyTorch's outputs. Standard library only (CI's python3 has no numpy or
torch), so plain `python3` runs it:

    python3 tests/models/run_model_parity.py --ort-train build/ort_train --models tests/models

Every folder under --models holding model.onnx is one model; its inputs and
PyTorch's outputs (output_N.pb, written by tools/export_models.py) are in
test_data_set_0/. `ort_train run` does the comparison itself: per output it
prints "<name>: max abs err X, max rel err Y, max abs err / max |expected| Z ok"
(or MISMATCH, also for a dtype/shape difference) and exits non-zero on any
mismatch. This prints one table row per model and exits 1 if any model fails.
"""
import argparse
import os
import re
import subprocess
import sys

# ort_train's exit codes (apps/main.cc): 1 other error, 2 shape error, 3 unsupported op.
EXIT_REASONS = {2: "shape error", 3: "unsupported"}
ERR_LINE = re.compile(r"^(\S+): max abs err (\S+), max rel err (\S+), max abs err / max \|expected\| (\S+) (ok|MISMATCH)$",
                      re.M)
SHAPE_LINE = re.compile(r"^(\S+): MISMATCH got (.*)$", re.M)


def run_model(args, folder):
    """Returns (passed, result word, detail)."""
    cmd = [args.ort_train, "--log-level", "warn", "run", "--model", os.path.join(folder, "model.onnx"),
           "--inputs", os.path.join(folder, "test_data_set_0"), "--rtol", args.rtol, "--atol", args.atol]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return False, "TIMEOUT", f"no result after {args.timeout} s"
    except OSError as e:
        return False, "FAIL", f"cannot start {args.ort_train}: {e}"
    errs = ERR_LINE.findall(r.stdout)
    shape_errs = SHAPE_LINE.findall(r.stdout)
    details = [f"{n}: abs {a}, rel {rel}, abs/max|ref| {scaled}{'' if verdict == 'ok' else ' MISMATCH'}"
               for n, a, rel, scaled, verdict in errs]
    details += [f"{n}: got {what}" for n, what in shape_errs]
    compared = len(errs) + len(shape_errs)
    passed = r.returncode == 0 and compared > 0 and all(e[4] == "ok" for e in errs) and not shape_errs
    if passed:
        return True, "ok", "; ".join(details)
    if r.returncode == 0 and compared == 0:
        return False, "FAIL", "no output was compared (missing output_N.pb?)"
    if details:
        return False, "MISMATCH", "; ".join(details)
    message = " ".join(line.strip() for line in (r.stderr.strip() or r.stdout.strip()).splitlines())
    return False, EXIT_REASONS.get(r.returncode, "FAIL").upper(), (message or f"exit {r.returncode}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ort-train", required=True, help="the ort_train binary")
    ap.add_argument("--models", required=True, help="folder of <model>/model.onnx + <model>/test_data_set_0/")
    ap.add_argument("--only", default="", help="comma-separated model names to run (default: all)")
    ap.add_argument("--rtol", default="1e-4")
    ap.add_argument("--atol", default="1e-5")
    ap.add_argument("--threads", type=int, default=0, help="ort_train --threads (default: its own, all cores)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per model")
    args = ap.parse_args()
    if not os.path.isdir(args.models):
        print(f"models folder not found: {args.models}")
        return 1
    only = set(filter(None, args.only.split(",")))
    names = sorted(d for d in os.listdir(args.models)
                   if os.path.isfile(os.path.join(args.models, d, "model.onnx")) and (not only or d in only))
    if only - set(names):
        print(f"no such model(s): {', '.join(sorted(only - set(names)))}")
        return 1
    if not names:
        print(f"no models under {args.models}")
        return 1
    failed = 0
    width = max(len("model"), *(len(n) for n in names))
    print(f"{'model':{width}s}  {'result':11s}  worst errors (rtol {args.rtol}, atol {args.atol})")
    for name in names:
        passed, result, detail = run_model(args, os.path.join(args.models, name))
        failed += not passed
        print(f"{name:{width}s}  {result:11s}  {detail}", flush=True)
    print(f"\n{len(names) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
