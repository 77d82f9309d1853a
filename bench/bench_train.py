#!/usr/bin/env python3
"""Training speed, ort_train vs PyTorch eager on CPU, side by side in one run:
the same model (exported once), the same batch, Adam, the same thread count.

  /usr/bin/python3 bench/bench_train.py [--threads 2] [--steps 20]

Models: an MLP 784-500-10 (batch 64, softmax cross-entropy) and a BERT-style
encoder (tools/export_models.py's Bert: 4 layers, hidden 256, 4 heads,
intermediate 1024, vocab 30522, seq 128, batch 8, MLM cross-entropy over the
vocabulary). Prints ms/step (median after 3 warm-up steps; ort_train's from its
--metrics step_ms), samples/s, each framework's peak RSS (measured from outside
the process) and the ratios. --baseline BINARY adds an older ort_train build
timed in the same run on the same exported model (before/after comparisons);
--grad-accum N runs ort_train with N micro-batches per step; --ort-args and
--baseline-args add flags to each (one binary, two settings); --clip MAX
clips the gradient norm in every framework (clip_grad_norm_). ort_train's rows
also give the time it took to build the training graph (its log's "built in")
and its update_ms (from the summed gradients to the updated weights: the norm
and the optimizer's pass), where the binary reports it.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import bench_forward  # noqa: E402  (the RSS wrapper)

WARMUP = 3


def build(name):
    import torch
    import torch.nn as nn
    from export_models import Bert
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    if name == "mlp":
        model = nn.Sequential(nn.Linear(784, 500), nn.ReLU(), nn.Linear(500, 10))
        inputs = {"x": torch.randn(64, 784, generator=g)}
        labels = torch.randint(0, 10, (64,), generator=g)
        return model, inputs, labels, ["logits"]
    model = Bert(vocab=30522, hidden=256, layers=4, heads=4, inter=1024, max_pos=512)
    inputs = {"input_ids": torch.randint(0, 30522, (8, 128), generator=g),
              "attention_mask": torch.ones(8, 128, dtype=torch.int64),
              "token_type_ids": torch.zeros(8, 128, dtype=torch.int64)}
    labels = torch.randint(0, 30522, (8, 128), generator=g)
    return model, inputs, labels, ["logits"]


def description(name, clip=None):
    extra = f"optimizer: {{max_grad_norm: {clip}}}\n" if clip else ""
    if name == "mlp":
        return ("inputs: [{name: x, dtype: float32, shape: [64, 784]}]\n"
                "labels: [{name: labels, dtype: int64, shape: [64]}]\n"
                "loss: {type: softmax_cross_entropy, input: logits, target: labels}\n" + extra)
    ins = "".join(f"  - {{name: {n}, dtype: int64, shape: [8, 128]}}\n"
                  for n in ["input_ids", "attention_mask", "token_type_ids"])
    return ("inputs:\n" + ins + "labels: [{name: labels, dtype: int64, shape: [8, 128]}]\n"
            "loss: {type: softmax_cross_entropy, input: logits, target: labels}\n" + extra)


def worker_torch(args):
    import torch
    torch.set_num_threads(args.threads)
    model, inputs, labels, _ = build(args.model)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    times = []
    for i in range(args.steps + WARMUP):
        t = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = model(*inputs.values())
        loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), labels.reshape(-1))
        loss.backward()
        if args.clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        if i >= WARMUP:
            times.append((time.perf_counter() - t) * 1000)
    print(json.dumps({"ms": statistics.median(times), "version": torch.__version__}))


def export(name, folder, clip=None):
    import torch
    from export_models import write_tensor
    model, inputs, labels, outputs = build(name)
    model.eval()
    torch.onnx.export(model, tuple(inputs.values()), os.path.join(folder, "model.onnx"), input_names=list(inputs),
                      output_names=outputs, opset_version=17, do_constant_folding=True)
    batch = os.path.join(folder, "data", "0")
    os.makedirs(batch)
    for k, v in list(inputs.items()) + [("labels", labels)]:
        write_tensor(v.numpy(), k, os.path.join(batch, f"{k}.pb"))
    with open(os.path.join(folder, "desc.yaml"), "w") as f:
        f.write(description(name, clip))
    return inputs[next(iter(inputs))].shape[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ort-train", default="build/ort_train")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--models", default="mlp,bert")
    ap.add_argument("--baseline", help="another ort_train binary (an older build) timed in the same run on the "
                    "same exported model: its row and the current/baseline ratio are added")
    ap.add_argument("--grad-accum", type=int, default=1, help="micro-batches per step for ort_train")
    ap.add_argument("--ort-args", default="", help="more ort_train train flags, e.g. \"--precision bf16\"")
    ap.add_argument("--baseline-args", default="", help="more flags for the --baseline binary (which may be the same "
                    "binary: flag against flag)")
    ap.add_argument("--rounds", type=int, default=1, help="repeat every framework this many times, interleaved")
    ap.add_argument("--clip", type=float, help="max_grad_norm: clip the gradients' norm every step")
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker_torch(args)
    rows = []
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory() as folder:
            batch = export(name, folder, args.clip)

            def run_binary(binary, extra):
                # Timed from --metrics in one run, peak RSS from a second run without the metrics file.
                metrics = os.path.join(folder, "m.jsonl")
                if os.path.exists(metrics):
                    os.remove(metrics)
                common = [binary, "train", "--model", os.path.join(folder, "model.onnx"),
                          "--config", os.path.join(folder, "desc.yaml"), "--data", os.path.join(folder, "data"),
                          "--optimizer", "adam", "--lr", "1e-3", "--steps", str(args.steps + WARMUP),
                          "--threads", str(args.threads)]
                if args.grad_accum > 1:
                    common += ["--grad-accum", str(args.grad_accum)]
                common += extra.split()
                out, _, _ = bench_forward.measured(common + ["--log-level", "info", "--metrics", metrics],
                                                   f"{binary} ({name})")
                built = re.search(r"built in ([\d.]+) ms", out)
                _, _, rss = bench_forward.measured(common + ["--log-level", "warn"], f"{binary} ({name})")
                lines = [json.loads(line) for line in open(metrics)][WARMUP:]
                steps = [m["step_ms"] for m in lines]
                update = statistics.median([m["update_ms"] for m in lines]) if "update_ms" in lines[0] else float("nan")
                return statistics.median(steps), rss, float(built.group(1)) if built else float("nan"), update

            def run_torch():
                tout, _, rss = bench_forward.measured(
                    [sys.executable, os.path.abspath(__file__), "--worker", "--model", name, "--threads",
                     str(args.threads), "--steps", str(args.steps)] + (["--clip", str(args.clip)] if args.clip else []),
                    f"PyTorch ({name})")
                t = json.loads(tout.strip().splitlines()[-1])
                return t["ms"], rss, t["version"]

            # Round by round, each framework once per round, so drift on a shared machine hits all alike;
            # the order rotates every round, since a run just after PyTorch's (1.3 GB) measured slower.
            runs = {"ort": [], "base": [], "torch": []}
            jobs = [("ort", lambda: run_binary(args.ort_train, args.ort_args))]
            if args.baseline:
                jobs.append(("base", lambda: run_binary(args.baseline, args.baseline_args)))
            jobs.append(("torch", run_torch))
            for r in range(args.rounds):
                for key, job in jobs[r % len(jobs):] + jobs[:r % len(jobs)]:
                    runs[key].append(job())
        rows.append((name, batch, runs))

    def summary(results):  # median of the per-round medians, their range, the largest peak RSS, the build time, update_ms
        ms = [r[0] for r in results]
        build = statistics.median(r[2] for r in results) if len(results[0]) > 2 and not isinstance(results[0][2], str) \
            else None
        update = statistics.median(r[3] for r in results) if len(results[0]) > 3 else None
        return statistics.median(ms), min(ms), max(ms), max(r[1] for r in results), build, update

    print(f"Adam training steps, {args.threads} threads, median of {args.steps} after {WARMUP} warm-up per round; "
          f"{args.rounds} round(s): median of the rounds [range]")
    print(f"{'model':8}{'framework':26}{'ms/step':>10}{'range':>20}{'samples/s':>12}{'peak RSS MiB':>14}"
          f"{'graph build ms':>16}{'update_ms':>11}")
    for name, batch, runs in rows:
        version = runs["torch"][0][2]
        entries = [("PyTorch " + version, summary(runs["torch"])), ("ort_train", summary(runs["ort"]))]
        if runs["base"]:
            entries.append(("ort_train baseline", summary(runs["base"])))
        for i, (label, (ms, lo, hi, rss, build, update)) in enumerate(entries):
            print(f"{name if i == 0 else '':8}{label:26}{ms:10.2f}{f'[{lo:.2f}, {hi:.2f}]':>20}"
                  f"{batch * 1000 / ms:12.1f}{rss:14.0f}{'' if build is None else f'{build:16.1f}'}"
                  f"{'' if update is None else f'{update:11.2f}'}")
        t, o = entries[0][1], entries[1][1]
        print(f"{'':8}{'ratio ort_train/PyTorch':26}{o[0] / t[0]:10.2f}{'':32}{o[3] / t[3]:14.2f}")
        if runs["base"]:
            b_ = entries[2][1]
            print(f"{'':8}{'ratio ort_train/baseline':26}{o[0] / b_[0]:10.2f}{'':32}{o[3] / b_[3]:14.2f}"
                  f"{'':16}{o[5] / b_[5]:11.2f}")

if __name__ == "__main__":
    main()
