#!/usr/bin/env python3
"""Does the measured kernel choice pick the faster attention? (runtime/kernel_choice.h)

For each shape, a model of one com.ort_train Attention over trainable Q, K, V
(loss: the mean of O squared) is trained for one step by `ort_train train`,
which times the candidates (CPU: flash and gemm; GPU: cublas and tiled) for
Attention and AttentionGrad and logs its choice. Then each candidate is
forced through a --kernel-choices file and each op is timed with `--repeat
--profile`, rounds interleaved. The table says which candidate the choice
kept and which one was faster for each op (--profile's time per run).

  python3 bench/bench_attention_choice.py [--ort-train build/ort_train] [--device cpu] [--rounds 3] [--repeat 7]

Needs the onnx Python package (Debian's python3-onnx: run it with /usr/bin/python3).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# (batch, heads, queries = keys, head size, causal mask)
SHAPES = [
    (1, 2, 2048, 64, False),
    (16, 4, 32, 16, False),
    (4, 12, 128, 64, False),
    (1, 12, 1024, 64, True),
]
CANDIDATES = {"cpu": ["flash", "gemm"], "cuda": ["cublas", "tiled"]}


def attention_model(path, b, h, t, d, causal):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.uniform(-1, 1, (b, h, t, d)).astype(np.float32), n) for n in "QKV"]
    inputs = ["Q", "K", "V"]
    if causal:
        inits.append(numpy_helper.from_array(np.tril(np.ones((t, t), dtype=bool))[None, None], "mask"))
        inputs += ["", "mask"]
    nodes = [
        helper.make_node("Attention", inputs, ["O", "LSE"], domain="com.ort_train", name="attention",
                         scale=1.0 / np.sqrt(d), mask_fill=-1e9),
        helper.make_node("Mul", ["O", "O"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0),
    ]
    graph = helper.make_graph(nodes, "attention", [], [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.ort_train", 1)])
    onnx.save(model, path)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
    return p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", default="build/ort_train")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    ot = os.path.abspath(args.ort_train)
    names = CANDIDATES[args.device]
    ops = ["Attention", "AttentionGrad"]
    print("| shape [B, H, T=S, D] | op | " + " | ".join(f"{n} ms, median [range]" for n in names)
          + " | faster | chosen by the run | its timing |")
    print("|---|---|" + "---|" * len(names) + "---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for (b, h, t, d, causal) in SHAPES:
            model = os.path.join(tmp, "m.onnx")
            attention_model(model, b, h, t, d, causal)
            base = [ot, "train", "--model", model, "--optimizer", "Sgd", "--device", args.device]
            choices = os.path.join(tmp, "choices.json")
            if os.path.exists(choices):
                os.remove(choices)
            log = run(base + ["--steps", "1", "--kernel-choices", choices])
            timing = {m.group(1): m.group(2) for m in re.finditer(r"kernel choice: (\w+) on \S+ \S+ -> (.*)", log)}
            made = json.load(open(choices))
            chosen = {k.split("|")[0].split(".")[-1]: v for k, v in made["choices"].items()}
            # Each candidate forced for both ops; --profile gives each op's time per run.
            times = {(op, n): [] for op in ops for n in names}
            for _ in range(args.rounds):
                for n in names:
                    forced = os.path.join(tmp, f"{n}.json")
                    json.dump({"device": made["device"], "choices": {k: n for k in made["choices"]}}, open(forced, "w"))
                    out = run(base + ["--repeat", str(args.repeat), "--profile", "--kernel-choices", forced])
                    for op in ops:
                        times[(op, n)].append(float(re.search(rf"^{op}\s+([0-9.]+)", out, re.M).group(1)))
            shape = f"[{b}, {h}, {t}, {d}]" + (" causal" if causal else "")
            for op in ops:
                med = {n: statistics.median(times[(op, n)]) for n in names}
                fastest = min(med, key=med.get)
                cells = " | ".join(f"{med[n]:.2f} [{min(times[(op, n)]):.2f}-{max(times[(op, n)]):.2f}]" for n in names)
                print(f"| {shape} | {op} | {cells} | {fastest} | {chosen.get(op)} | {timing.get(op, '')} |", flush=True)


if __name__ == "__main__":
    main()
