#!/usr/bin/env python3
"""Does the measured kernel choice pick the faster attention? (runtime/kernel_choice.h)

For each shape, a model of one com.ort_train Attention over trainable Q, K, V
(loss: the mean of O squared) is trained for one step by `ort_train train`,
which times the candidates (CPU: flash and gemm; GPU: cublas and tiled) for
Attention and AttentionGrad and logs its choice. Then each candidate is
forced through a --kernel-choices file and forward+backward is timed with
`--repeat`, rounds interleaved. The table says which candidate the choice
kept and which one was faster on the whole step.

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
    print(f"| shape [B, H, T=S, D] | chosen (Attention / AttentionGrad) | choice's timings, ms | "
          + " | ".join(f"{n} fwd+bwd ms, median [range]" for n in names) + " | faster |")
    print("|---|---|---|" + "---|" * len(names) + "---|")
    with tempfile.TemporaryDirectory() as tmp:
        for (b, h, t, d, causal) in SHAPES:
            model = os.path.join(tmp, "m.onnx")
            attention_model(model, b, h, t, d, causal)
            base = [ot, "train", "--model", model, "--optimizer", "Sgd", "--device", args.device]
            choices = os.path.join(tmp, "choices.json")
            if os.path.exists(choices):
                os.remove(choices)
            log = run(base + ["--steps", "1", "--kernel-choices", choices])
            timings = "; ".join(re.sub(r"^.*kernel choice: (\S+) on \S+ \S+ ->", r"\1:", line).strip()
                                for line in log.splitlines() if "kernel choice:" in line)
            made = json.load(open(choices))
            chosen = {k.split("|")[0]: v for k, v in made["choices"].items()}
            times = {n: [] for n in names}
            for _ in range(args.rounds):
                for n in names:
                    forced = os.path.join(tmp, f"{n}.json")
                    json.dump({"device": made["device"], "choices": {k: n for k in made["choices"]}}, open(forced, "w"))
                    out = run(base + ["--repeat", str(args.repeat), "--kernel-choices", forced])
                    times[n].append(float(re.search(r"forward\+backward: median ([0-9.]+) ms", out).group(1)))
            med = {n: statistics.median(v) for n, v in times.items()}
            fastest = min(med, key=med.get)
            shape = f"[{b}, {h}, {t}, {d}]" + (" causal" if causal else "")
            print(f"| {shape} | {chosen.get('com.ort_train.Attention')} / {chosen.get('com.ort_train.AttentionGrad')} "
                  f"| {timings} | " + " | ".join(f"{med[n]:.1f} [{min(times[n]):.1f}-{max(times[n]):.1f}]" for n in names)
                  + f" | {fastest} |", flush=True)


if __name__ == "__main__":
    main()
