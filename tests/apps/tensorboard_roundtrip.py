#!/usr/bin/env python3
"""--tensorboard round trip (CTest: apps.tensorboard_roundtrip): trains the
bundled MLP a few steps with --tensorboard, --metrics and --eval-every, reads the event
file back with the real `tensorboard` package's reader (PyPI; installed by
tools/install_deps.sh), and checks every scalar equals --metrics (as float32,
TensorBoard's scalar type) at the same step, and that the command line is
there as text. Exit 77 (skipped) only where the package is missing.

    tensorboard_roundtrip.py --ort-train build/ort_train --model-dir tests/models/mlp --work /tmp/x
"""
import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import sys


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        print("ORT_TRAIN_TEST_SKIPPED: the tensorboard package is not installed (pip install tensorboard)")
        sys.exit(77)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    board, metrics = os.path.join(args.work, "tb"), os.path.join(args.work, "m.jsonl")
    m = args.model_dir
    cmd = [args.ort_train, "--model", f"{m}/model.onnx", "--config", f"{m}/training.yaml", "--data",
           f"{m}/train_batches", "--eval-data", f"{m}/train_batches", "--eval-every", "3", "--steps", "7", "--device", "cpu",
           "--tensorboard", board, "--metrics", metrics]
    subprocess.run(cmd, check=True, capture_output=True)
    files = glob.glob(os.path.join(board, "events.out.tfevents.*"))
    if len(files) != 1:
        sys.exit(f"expected one event file in {board}, found {files}")
    ea = EventAccumulator(board, size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    want = {}
    with open(metrics) as f:
        for line in f:
            row = json.loads(line)
            for k, v in row.items():
                if k != "step":
                    want.setdefault(k, {})[row["step"]] = v
    failures = 0
    for tag, by_step in sorted(want.items()):
        got = {e.step: e.value for e in ea.Scalars(tag)}
        bad = [s for s in by_step if s not in got or got[s] != f32(by_step[s])]
        failures += bool(bad) or len(got) != len(by_step)
        print(f"{'ok  ' if not bad and len(got) == len(by_step) else 'FAIL'} {tag}: {len(got)} events, "
              f"{len(by_step)} in --metrics{'; differ at steps ' + str(bad) if bad else ''}")
    texts = ea.Tags().get("tensors", [])
    text_ok = any(t.startswith("command_line") for t in texts)
    if text_ok:
        tag = [t for t in texts if t.startswith("command_line")][0]
        value = ea.Tensors(tag)[0].tensor_proto.string_val[0].decode()
        text_ok = "--tensorboard" in value and "--steps 7" in value
    print(f"{'ok  ' if text_ok else 'FAIL'} command line as text")
    # --eval-every 3 over 7 steps: held-out figures at steps 3, 6 and 7.
    eval_steps = sorted(want.get("eval_loss", {}))
    print(f"{'ok  ' if eval_steps == [3, 6, 7] else 'FAIL'} held-out evaluations at steps {eval_steps}")
    sys.exit(1 if failures or not text_ok or eval_steps != [3, 6, 7] else 0)


if __name__ == "__main__":
    main()
