#!/usr/bin/python3
"""Attention's batched GEMMs, unfused: ort_train's MatMul kernel against PyTorch's
torch.matmul on the same shapes and threads, side by side in one run.

    /usr/bin/python3 bench/bench_batched_matmul.py [--ort-train build/ort_train]
        [--threads 2] [--repeat 50] [--rounds 3]

Each shape is [batch, heads, seq, head_size]; the model is
scores = Q @ K^T, out = scores @ V (two MatMuls of many small GEMMs, what an
attention block does when attention_fusion does not apply). ort_train runs it
with `ort_train run --repeat` (its "forward: median" line; the expected output,
computed here in float64, is checked by `run` itself); PyTorch (the python3
running this script) times the same two matmuls under torch.no_grad() after
one warm-up. Rounds interleave the two, each in its own process; the table
gives the median over rounds and the range, and PyTorch / ort_train as a ratio.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = {  # [batch, heads, seq, head_size] of bench_peers.py's workloads
    "BERT-style": (8, 4, 128, 64),
    "GPT-style": (4, 6, 256, 64),
    "BERT-base": (8, 12, 128, 64),
}

TORCH_TIMER = r"""
import sys, time, statistics, numpy as np, torch
torch.set_num_threads(int(sys.argv[1])); repeat = int(sys.argv[2]); d = np.load(sys.argv[3])
q, kt, v = (torch.from_numpy(d[n]) for n in ("q", "kt", "v"))
with torch.no_grad():
    torch.matmul(torch.matmul(q, kt), v)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter(); torch.matmul(torch.matmul(q, kt), v); times.append(time.perf_counter() - t0)
print(statistics.median(times) * 1e3)
"""


def make_case(folder, shape, seed):
    b, h, s, d = shape
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((b, h, s, d), dtype=np.float32)
    kt = rng.standard_normal((b, h, d, s), dtype=np.float32)
    v = rng.standard_normal((b, h, s, d), dtype=np.float32)
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["q", "kt"], ["scores"], name="scores"),
         helper.make_node("MatMul", ["scores", "v"], ["out"], name="context")],
        "batched_matmul",
        [helper.make_tensor_value_info("q", f, list(q.shape)), helper.make_tensor_value_info("kt", f, list(kt.shape)),
         helper.make_tensor_value_info("v", f, list(v.shape))],
        [helper.make_tensor_value_info("out", f, [b, h, s, d])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    expected = np.matmul(np.matmul(q.astype(np.float64), kt.astype(np.float64)), v.astype(np.float64))
    for name, value in (("q", q), ("kt", kt), ("v", v), ("out", expected.astype(np.float32))):
        with open(os.path.join(folder, "inputs", f"{name}.pb"), "wb") as fh:
            fh.write(numpy_helper.from_array(value, name).SerializeToString())
    np.savez(os.path.join(folder, "inputs.npz"), q=q, kt=kt, v=v)


def time_ort_train(args, folder):
    p = subprocess.run([args.ort_train, "--log-level", "info", "run", "--model", os.path.join(folder, "model.onnx"),
                        "--inputs", os.path.join(folder, "inputs"), "--threads", str(args.threads),
                        "--repeat", str(args.repeat + 1), "--rtol", "1e-4", "--atol", "1e-3"],
                       capture_output=True, text=True)
    log = p.stdout + p.stderr
    if p.returncode != 0:
        sys.exit(f"ort_train run failed (exit {p.returncode}):\n{log[-3000:]}")
    m = re.search(r"forward: median ([\d.]+) ms", log)
    if not m:
        sys.exit(f"ort_train printed no 'forward: median' line:\n{log[-3000:]}")
    return float(m.group(1))


def time_torch(args, folder):
    p = subprocess.run([sys.executable, "-c", TORCH_TIMER, str(args.threads), str(args.repeat),
                        os.path.join(folder, "inputs.npz")], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"the PyTorch timer failed:\n{p.stderr[-3000:]}")
    return float(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ort-train", default=os.path.join(ROOT, "build", "ort_train"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import torch  # only to fail early, with a clear message, where PyTorch is missing
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, shape) in enumerate(SHAPES.items()):
            make_case(os.path.join(tmp, name), shape, seed=i)
        for _ in range(args.rounds):
            for name in SHAPES:
                folder = os.path.join(tmp, name)
                times.setdefault((name, "ort_train"), []).append(time_ort_train(args, folder))
                times.setdefault((name, "torch"), []).append(time_torch(args, folder))
    print(f"Q@K^T then @V, float32, {args.threads} threads, median of {args.rounds} rounds "
          f"(each a median of {args.repeat} runs); PyTorch {torch.__version__}\n")
    print("| shape [b, h, s, d] | ort_train ms [range] | PyTorch ms [range] | PyTorch / ort_train |")
    print("|---|---|---|---|")
    for name, shape in SHAPES.items():
        o, t = times[(name, "ort_train")], times[(name, "torch")]
        mo, mt = statistics.median(o), statistics.median(t)
        print(f"| {name} {list(shape)} | {mo:.2f} [{min(o):.2f}, {max(o):.2f}] | {mt:.2f} [{min(t):.2f}, {max(t):.2f}] "
              f"| {mt / mo:.2f} |")


if __name__ == "__main__":
    main()
