#!/usr/bin/env python3
"""Trains exports of tools/export_dynamo_models.py with `ort_train train` and
compares each step's loss with PyTorch's trajectory (trajectories.json): the
by-hand form of tests/models/dynamo_exports_test.cc, for exports too large to
commit (torchvision's ResNet-18). Standard library only.

    python3 tools/train_against_trajectories.py --ort-train build/ort_train --exports /tmp/exports [folder ...]

Prints the worst relative loss difference per folder, configuration and
trajectory (`losses`: PyTorch's module; `losses_inference_batch_norm`: its
BatchNorm in eval mode, what an inference-mode file says), and exits 1 when
a run fails or the trajectory the file should follow (the second where the
file has one) differs by more than --rtol (default 1e-5, the suite's).
Where the export recorded PyTorch's trajectory in float64 too
(export_dynamo_models.py --float64), a model whose float32 rounding grows
past that in 10 steps is judged against it instead: ort_train's distance from
the float64 trajectory must be at most twice PyTorch's own float32 distance.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ort-train", default="build/ort_train")
    ap.add_argument("--exports", default="tests/models/dynamo")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("folders", nargs="*")
    args = ap.parse_args()
    folders = args.folders or sorted(d for d in os.listdir(args.exports)
                                     if os.path.isfile(os.path.join(args.exports, d, "trajectories.json")))
    failed = 0
    for name in folders:
        folder = os.path.join(args.exports, name)
        with open(os.path.join(folder, "trajectories.json")) as f:
            record = json.load(f)
        with open(os.path.join(folder, "training.yaml")) as f:
            base = f.read()
        for key, cfg in record["configs"].items():
            with tempfile.TemporaryDirectory() as tmp:
                desc, metrics = os.path.join(tmp, "d.yaml"), os.path.join(tmp, "m.jsonl")
                with open(desc, "w") as f:
                    f.write(base + "optimizer: " + json.dumps(cfg["optimizer"]) + "\n")
                r = subprocess.run([args.ort_train, "--log-level", "error", "train", "--model",
                                    os.path.join(folder, "model.onnx"), "--config", desc, "--data",
                                    os.path.join(folder, "train_batches"), "--steps", str(record["steps"]),
                                    "--device", "cpu", "--metrics", metrics], capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{name:24} {key:12} FAILED: {r.stderr.strip()[:300]}")
                    failed += 1
                    break
                with open(metrics) as f:
                    got = [json.loads(line)["loss"] for line in f]
            def worst(a, b):
                return max(abs(x - y) / abs(y) for x, y in zip(a, b))
            # A file with inference-mode BatchNorm trains as it says: judged by that trajectory.
            judged = "losses_inference_batch_norm" if "losses_inference_batch_norm" in cfg else "losses"
            for which in (k for k in cfg if k.startswith("losses")):
                print(f"{name:24} {key:12} {which:28} worst relative loss difference {worst(got, cfg[which]):.2e}")
            if "losses_float64" in cfg:
                ours, torch32 = worst(got, cfg["losses_float64"]), worst(cfg["losses"], cfg["losses_float64"])
                print(f"{name:24} {key:12} from float64: ort_train {ours:.2e}, PyTorch float32 {torch32:.2e}")
                if worst(got, cfg[judged]) > args.rtol and ours > 2 * torch32:
                    failed += 1
            elif worst(got, cfg[judged]) > args.rtol:
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
