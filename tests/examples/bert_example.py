#!/usr/bin/env python3
"""examples/bert as the README runs it (CTest: examples.bert_small): the data
script builds the MLM data from /usr/share/common-licenses, the headline
command trains the committed small BERT, and the held-out MLM loss falls
below the untrained model's; the description runs it too, and synthetic
data of its symbolic dims (--dim seq=64).

    bert_example.py --ort-train build/ort_train --example examples/bert --work /tmp/x
"""
import argparse
import os
import re
import subprocess
import sys


def held_out(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    text = out.stdout + out.stderr
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{text}")
    m = re.search(r"held-out \(.*\): loss ([\d.]+)", text)
    return float(m[1]) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--example", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    if not os.path.isdir("/usr/share/common-licenses"):
        print("ORT_TRAIN_TEST_SKIPPED: no /usr/share/common-licenses (not a Debian machine)")
        sys.exit(77)
    data = os.path.join(args.work, "data")
    subprocess.run([sys.executable, os.path.join(args.example, "make_mlm_data.py"), "--out", data], check=True)
    model = os.path.join(args.example, "bert.onnx")
    npz = ["--data", os.path.join(data, "train.npz"), "--eval-data", os.path.join(data, "eval.npz")]
    common = [args.ort_train, "--model", model, "--optimizer", "Lamb"] + npz + ["--device", "cpu"]
    # The untrained model's held-out loss (lr 0: one step that changes nothing).
    before = held_out(common + ["--lr", "0", "--steps", "1"])
    # The headline, 100 steps.
    after = held_out(common + ["--lr", "1e-4", "--steps", "100"])
    print(f"held-out MLM loss: untrained {before:.4f}, after 100 LAMB steps at lr 1e-4 {after:.4f}")
    ok = after < before
    # The description: NPZ data (overriding its data: paths), and synthetic data of its dims.
    described = [args.ort_train, "--config", os.path.join(args.example, "bert.yaml"), "--device", "cpu", "--steps", "5"]
    ok = held_out(described + npz) is not None and ok
    # Synthetic data needs the size of every symbolic dim: seq from --dim.
    synthetic = [args.ort_train, "--model", model, "--data", "synthetic", "--dim", "seq=64", "--batch-size", "4",
                 "--steps", "2", "--device", "cpu"]
    held_out(synthetic)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
