#!/usr/bin/env python3
"""A language-model example as the README runs it (CTest: examples.bert_small,
examples.gpt2_small): the example's data script builds its data from
/usr/share/common-licenses, the README's command trains the committed small
model, and the held-out loss falls below the untrained model's; synthetic
data of its symbolic dims trains too (--dim seq=64), and so does its
description when it has one.

    lm_example.py --ort-train build/ort_train --example examples/bert --model bert.onnx
                  --data-script make_mlm_data.py --optimizer Lamb --lr 1e-4 [--config bert.yaml] --work /tmp/x
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
    ap.add_argument("--model", required=True)
    ap.add_argument("--data-script", required=True)
    ap.add_argument("--optimizer", required=True)
    ap.add_argument("--lr", required=True)
    ap.add_argument("--steps", default="100")
    ap.add_argument("--config")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    if not os.path.isdir("/usr/share/common-licenses"):
        print("ORT_TRAIN_TEST_SKIPPED: no /usr/share/common-licenses (not a Debian machine)")
        sys.exit(77)
    data = os.path.join(args.work, "data")
    subprocess.run([sys.executable, os.path.join(args.example, args.data_script), "--out", data], check=True)
    model = os.path.join(args.example, args.model)
    npz = ["--data", os.path.join(data, "train.npz"), "--eval-data", os.path.join(data, "eval.npz")]
    common = [args.ort_train, "--model", model, "--optimizer", args.optimizer] + npz + ["--device", "cpu"]
    # The untrained model's held-out loss (lr 0: one step that changes nothing).
    before = held_out(common + ["--lr", "0", "--steps", "1"])
    after = held_out(common + ["--lr", args.lr, "--steps", args.steps])
    print(f"held-out loss: untrained {before:.4f}, after {args.steps} {args.optimizer} steps at lr {args.lr} "
          f"{after:.4f}")
    ok = after < before
    if args.config:  # the description, with NPZ data overriding its data: paths
        described = [args.ort_train, "--config", os.path.join(args.example, args.config), "--device", "cpu",
                     "--steps", "5"]
        ok = held_out(described + npz) is not None and ok
    # Synthetic data needs the size of every symbolic dim: seq from --dim.
    held_out([args.ort_train, "--model", model, "--data", "synthetic", "--dim", "seq=64", "--batch-size", "4",
              "--steps", "2", "--device", "cpu"])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
