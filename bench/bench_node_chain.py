#!/usr/bin/env python3
"""How planning and training scale with the number of nodes (issue 33, item 8):
a chain of N nodes (Add of a shared 4-element weight, then Relu, alternating,
then ReduceSum as the loss) trained for 2 steps on synthetic data, for each N.

  /usr/bin/python3 bench/bench_node_chain.py [--sizes 10000,100000] [--ort-train build/ort_train]
  /usr/bin/python3 bench/bench_node_chain.py --sizes 100000 --baseline OLD/ort_train --rounds 5

Prints, per N, the training graph's build time (its log's "built in": autodiff
and the graph passes), the first step (it runs every shape rule and records
the replay plan and its arena), the second step (replayed), the whole run's
wall time and peak RSS, and each against the smallest N as a ratio to the node
count ratio (1.0 = linear). --baseline BINARY times an older build on the same
models, the two alternating round by round (--rounds, default 5), and prints
each figure's median and range for both.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def chain_model(n, path):
    w = numpy_helper.from_array(np.full([4], 0.001, np.float32), "w")
    nodes, prev = [], "x"
    for i in range(n):
        out = f"h{i}"
        if i % 2 == 0:
            nodes.append(helper.make_node("Add", [prev, "w"], [out], name=f"n{i}"))
        else:
            nodes.append(helper.make_node("Relu", [prev], [out], name=f"n{i}"))
        prev = out
    nodes.append(helper.make_node("ReduceSum", [prev], ["loss"], name="sum", keepdims=0))
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def stamp(line):
    m = re.match(r"\[(\d\d:\d\d:\d\d\.\d+)\]", line)
    return datetime.strptime(m.group(1), "%H:%M:%S.%f") if m else None


def run(binary, model, config):
    cmd = ["/usr/bin/time", "-f", "RSS_KB %M", binary, "--log-level", "info", "--model", model, "--config", config,
           "--steps", "2", "--device", "cpu", "--threads", "1"]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"ort_train failed on {model}:\n{r.stderr[-2000:]}")
    lines = r.stdout.splitlines() + r.stderr.splitlines()
    built = float(re.search(r"built in ([\d.]+) ms", r.stderr + r.stdout).group(1))
    started = next(stamp(l) for l in lines if "] training: device" in l)
    step1 = next(stamp(l) for l in lines if "step 1/2" in l)
    step2 = next(stamp(l) for l in lines if "step 2/2" in l)
    rss = int(re.search(r"RSS_KB (\d+)", r.stderr).group(1))
    return {"built_ms": built, "step1_ms": (step1 - started).total_seconds() * 1000,
            "step2_ms": (step2 - step1).total_seconds() * 1000, "wall_s": wall, "rss_mib": rss / 1024}


def compare(args, sizes, tmp, config):
    binaries = [("ort_train", args.ort_train), ("baseline", args.baseline)]
    keys = ("built_ms", "step1_ms", "step2_ms", "wall_s", "rss_mib")
    print("| nodes | binary | build (ms) | first step (ms) | second step (ms) | wall (s) | peak RSS (MiB) |")
    print("|---|---|---|---|---|---|---|")
    for n in sizes:
        model = os.path.join(tmp, f"chain{n}.onnx")
        chain_model(n, model)
        runs = {label: [] for label, _ in binaries}
        for r in range(args.rounds):
            for label, binary in (binaries if r % 2 == 0 else binaries[::-1]):
                runs[label].append(run(binary, model, config))
            print(f"measured {n} nodes, round {r + 1}", file=sys.stderr)
        for label, _ in binaries:
            cells = []
            for k in keys:
                v = [x[k] for x in runs[label]]
                cells.append(f"{statistics.median(v):,.1f} [{min(v):,.1f}, {max(v):,.1f}]")
            print(f"| {n:,} | {label} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--ort-train", default=os.path.join(HERE, "..", "build", "ort_train"))
    ap.add_argument("--baseline", help="an older ort_train binary, timed round by round with --ort-train")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "chain.yaml")
        with open(config, "w") as f:
            f.write("inputs:\n  - {name: x, dtype: float32, shape: [4]}\ndata: synthetic\n")
        if args.baseline:
            return compare(args, sizes, tmp, config)
        for n in sizes:
            model = os.path.join(tmp, f"chain{n}.onnx")
            chain_model(n, model)
            rows.append((n, run(args.ort_train, model, config)))
            print(f"measured {n} nodes", file=sys.stderr)
    base_n, base = rows[0]
    print("| nodes | build (ms) | first step (ms) | second step (ms) | wall (s) | peak RSS (MiB) | build / first / second vs linear |")
    print("|---|---|---|---|---|---|---|")
    for n, r in rows:
        k = n / base_n
        scale = " / ".join(f"{r[key] / base[key] / k:.2f}" for key in ("built_ms", "step1_ms", "step2_ms"))
        print(f"| {n:,} | {r['built_ms']:.0f} | {r['step1_ms']:.0f} | {r['step2_ms']:.1f} | {r['wall_s']:.1f} | "
              f"{r['rss_mib']:.0f} | {scale} |")


if __name__ == "__main__":
    main()
