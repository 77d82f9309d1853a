#!/usr/bin/env python3
"""A model whose weights live in ONNX external data, trained with checkpoints:
peak RSS against the training state, and the pause a checkpoint costs the
step, written in place and in the background (--async-checkpoint).

    python3 bench/bench_checkpoint.py --ort-train build/ort_train [--params 100e6] [--work /tmp/ort_train_bench_ckpt]

The model (made here with onnx and numpy, its weights in one external-data
file): `layers` square MatMul + Relu layers of width `width` (sized to
--params), an MSE loss against labels, batch 4. Each configuration runs as
its own process, measured from a small wrapper process: 6 AdamW steps with
checkpoints after steps 3 and 6, in place and in the background; then resumes
from step 3 that must log steps 4-6 bit for bit, without and with --export. The state is parameters +
gradients + AdamW's two moments: 16 bytes a parameter.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from peak_rss import measured  # noqa: E402


def make_model(folder, params, width, linear=False):  # noqa: C901 (one straight recipe)
    """A chain of MatMul+Relu layers of width x width weights in external data.
    linear: each weight stored [out, in] and read through a Transpose, as
    torch.onnx.export (dynamo) writes nn.Linear."""
    import numpy as np
    from onnx import TensorProto, helper
    layers = max(1, round(params / (width * width)))
    rng = np.random.default_rng(0)
    os.makedirs(folder, exist_ok=True)
    nodes, inits, x = [], [], "x"
    # The weights go to weights.bin a layer at a time (a 655M-parameter model
    # would otherwise be held twice by numpy and onnx); the initializers point there.
    with open(os.path.join(folder, "weights.bin"), "wb") as f:
        for i in range(layers):
            w = (rng.standard_normal((width, width), dtype=np.float32) / np.sqrt(width)).astype(np.float32)
            t = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[width, width],
                            data_location=TensorProto.EXTERNAL)
            for k, v in (("location", "weights.bin"), ("offset", str(f.tell())), ("length", str(w.nbytes))):
                e = t.external_data.add()
                e.key, e.value = k, v
            f.write(w.tobytes())
            inits.append(t)
            read = f"w{i}"
            if linear:
                read = f"w{i}_t"
                nodes.append(helper.make_node("Transpose", [f"w{i}"], [read], name=f"transpose{i}", perm=[1, 0]))
            nodes.append(helper.make_node("MatMul", [x, read], [f"h{i}"], name=f"matmul{i}"))
            nodes.append(helper.make_node("Relu", [f"h{i}"], [f"a{i}"], name=f"relu{i}"))
            x = f"a{i}"
    graph = helper.make_graph(nodes, "wide", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", width])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    with open(os.path.join(folder, "training.yaml"), "w") as f:
        f.write(f"inputs:\n  - {{name: x, dtype: float32, shape: [batch, {width}]}}\n"
                f"labels:\n  - {{name: labels, dtype: float32, shape: [batch, {width}]}}\n"
                f"loss: {{type: mse, input: {x}, target: labels, reduction: mean}}\n"
                "optimizer: {name: AdamW, lr: 1.0e-4}\nbatch_size: 4\n")
    return layers * width * width


def losses(path):
    with open(path) as f:
        return [json.loads(l)["loss"] for l in f if '"loss"' in l and "eval" not in l]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--params", type=float, default=100e6)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--work", default="/tmp/ort_train_bench_ckpt")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-async", action="store_true",
                    help="leave out the --async-checkpoint run (it needs the state's size in memory again)")
    ap.add_argument("--async-only", action="store_true", help="the --async-checkpoint run alone")
    args = ap.parse_args()
    model_dir = os.path.join(args.work, f"model_{args.params:.0f}_{args.width}")
    for name in os.listdir(args.work) if os.path.isdir(args.work) else []:
        if not name.startswith("model_"):  # earlier runs' checkpoints; a model of this size is kept (--keep)
            shutil.rmtree(os.path.join(args.work, name), ignore_errors=True)
    if os.path.exists(os.path.join(model_dir, "training.yaml")):
        n = max(1, round(args.params / (args.width * args.width))) * args.width * args.width
    else:
        n = make_model(model_dir, args.params, args.width)
    state_mb = 16 * n / 2 ** 20
    print(f"{n / 1e6:.0f}M parameters: state (parameters, gradients, AdamW's two moments) {state_mb:,.0f} MiB, "
          f"weights file {os.path.getsize(os.path.join(model_dir, 'weights.bin')) / 2**20:,.0f} MiB\n")
    print("| run | peak RSS MiB | / state | checkpoint pause s | checkpoint write s |")
    print("|---|---|---|---|---|")
    base = [args.ort_train, "train", "--model", os.path.join(model_dir, "model.onnx"), "--config",
            os.path.join(model_dir, "training.yaml"), "--data", "synthetic", "--threads", "2", "--seed", "1",
            "--steps", "6"]
    want = None
    runs = ([] if args.async_only else [("checkpoints in place", [])]) + \
        ([] if args.no_async else [("--async-checkpoint", ["--async-checkpoint"])])
    for label, extra in runs:
        ck = os.path.join(args.work, "ck_" + str(len(extra)))
        m = os.path.join(args.work, f"m{len(extra)}.jsonl")
        rss, log = measured(base + ["--save-every", "3", "--keep", "3", "--checkpoint-dir", ck, "--metrics", m] + extra)
        writes = [float(s) for s in re.findall(r"written \([\d.]+ MiB in ([\d.]+) s", log)]
        # In place the step waits for the write; in the background for the snapshot's copy.
        pauses = [float(s) for s in re.findall(r"the step paused ([\d.]+) s", log)] if extra else writes
        print(f"| {label}: 6 steps, checkpoints after steps 3 and 6 | {rss:,.0f} | {rss / state_mb:.2f} | "
              f"{' and '.join(f'{p:.2f}' for p in pauses)} | {' and '.join(f'{w:.2f}' for w in writes)} |")
        if want is None:
            want = losses(m)
        else:
            if losses(m) != want:
                sys.exit("--async-checkpoint changed the losses")
            shutil.rmtree(ck)  # only the first run's checkpoints are resumed: disk for a large model
    if args.async_only:
        return
    ck = os.path.join(args.work, "ck_0")
    os.remove(os.path.join(ck, "ckpt-00000006.ortc"))
    for label, extra in (("resumed at step 3, steps 4-6", []),
                         ("resumed at step 3, steps 4-6, --export", ["--export", os.path.join(args.work, "out.onnx")])):
        r = os.path.join(args.work, "r.jsonl")
        # --save-every 100: the run's last checkpoint only (step 6), removed again after.
        rss, _ = measured(base + ["--checkpoint-dir", ck, "--resume", "--metrics", r, "--save-every", "100"] + extra)
        os.remove(os.path.join(ck, "ckpt-00000006.ortc"))
        got = losses(r)
        print(f"| {label} | {rss:,.0f} | {rss / state_mb:.2f} | | |")
        if got != want[3:]:
            sys.exit(f"the resume is not bit for bit: {got} vs {want[3:]}")
    print("\nresumes bit for bit: yes (steps 4-6 equal the uninterrupted run's)")
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
