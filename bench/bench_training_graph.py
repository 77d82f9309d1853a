#!/usr/bin/env python3
"""BERT-style encoder training graph: build time, and one forward+backward pass
in ort_train and in PyTorch eager side by side (same threads, same model and
batch, loss = softmax cross-entropy over the vocabulary).

  /usr/bin/python3 bench/bench_training_graph.py [--layers 12 --hidden 768 ...]

The model is exported by tools/export_models.py's Bert class (opset 17) into a
temporary folder; nothing is written into the repository. Prints one table:
training-graph build time (from `ort_train inspect`), ms per forward+backward
(median of --repeat runs after one warm-up) for both, their ratio, and each
framework's peak RSS. --baseline BINARY adds an older ort_train build, timed
in the same run on the same exported model (before/after comparisons).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import bench_forward  # noqa: E402  (shares the model builder and the RSS wrapper)

DESCRIPTION = """inputs:
  - {{name: input_ids, dtype: int64, shape: [batch, {seq}]}}
  - {{name: attention_mask, dtype: int64, shape: [batch, {seq}]}}
  - {{name: token_type_ids, dtype: int64, shape: [batch, {seq}]}}
labels:
  - {{name: labels, dtype: int64, shape: [batch, {seq}]}}
loss: {{type: softmax_cross_entropy, input: logits, target: labels}}
"""


def worker_torch(args):
    import torch
    torch.set_num_threads(args.threads)
    model, inputs = bench_forward.build(args)
    model.train()
    g = torch.Generator().manual_seed(2)
    labels = torch.randint(0, args.vocab, (args.batch, args.seq), generator=g)

    def step():
        model.zero_grad(set_to_none=True)
        logits = model(*inputs.values())
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        loss.backward()
    step()
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        step()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    print(json.dumps({"ms": times[len(times) // 2], "version": torch.__version__}))


def export(args, folder):
    import torch
    bench_forward.worker_export(args, folder)
    from export_models import write_tensor
    g = torch.Generator().manual_seed(2)
    labels = torch.randint(0, args.vocab, (args.batch, args.seq), generator=g)
    batch = os.path.join(folder, "data", "0")
    os.makedirs(batch)
    for f in os.listdir(os.path.join(folder, "inputs")):
        os.rename(os.path.join(folder, "inputs", f), os.path.join(batch, f))
    write_tensor(labels.numpy(), "labels", os.path.join(batch, "labels.pb"))
    with open(os.path.join(folder, "desc.yaml"), "w") as f:
        f.write(DESCRIPTION.format(seq=args.seq))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ort-train", default="build/ort_train")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--intermediate", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1, help="repeat every framework this many times, interleaved")
    ap.add_argument("--baseline", help="another ort_train binary (an older build) timed in the same run, "
                    "after the current one: its row and the current/baseline ratio are added")
    ap.add_argument("--worker", choices=["torch"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.intermediate = args.intermediate or 4 * args.hidden
    if args.worker == "torch":
        return worker_torch(args)
    with tempfile.TemporaryDirectory() as folder:
        export(args, folder)
        model, desc = os.path.join(folder, "model.onnx"), os.path.join(folder, "desc.yaml")
        def run_binary(binary):
            r = subprocess.run([binary, "inspect", "--model", model, "--config", desc, "--batch-size",
                                str(args.batch)], capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{binary} inspect failed:\n{r.stdout}\n{r.stderr}")
            info = {"built": float(re.search(r"built in ([0-9.]+) ms", r.stdout).group(1)),
                    "nodes": re.search(r"training graph: (.*) built", r.stdout).group(1)}
            ready = re.search(r"gradient bytes final after 25% / 50% / 75% of the backward nodes: (.*)", r.stdout)
            info["ready"] = ready.group(1) if ready else "not reported"
            out, err, info["rss"] = bench_forward.measured(
                [binary, "train", "--model", model, "--config", desc, "--data", os.path.join(folder, "data"),
                 "--threads", str(args.threads), "--repeat", str(args.repeat + 1)], f"{binary} train")
            times = re.search(r"forward\+backward: median ([0-9.]+) ms", out + err)
            if not times:
                sys.exit(f"{binary} train printed no timing:\n{out[-2000:]}\n{err[-2000:]}")
            info["ms"] = float(times.group(1))
            return info

        own = [sys.executable, os.path.abspath(__file__), "--worker", "torch"]
        skip = False
        for a in sys.argv[1:]:  # the worker gets the model options only
            if skip:
                skip = False
                continue
            if a.split("=")[0] in ("--ort-train", "--baseline", "--rounds"):
                skip = "=" not in a
                continue
            own.append(a)
        # Round by round, each framework once per round: drift on a shared machine hits all alike.
        ort_runs, base_runs, torch_runs = [], [], []
        for _ in range(args.rounds):
            ort_runs.append(run_binary(args.ort_train))
            if args.baseline:
                base_runs.append(run_binary(args.baseline))
            tout, _, torch_rss = bench_forward.measured(own, "PyTorch")
            torch_runs.append(dict(json.loads(tout.strip().splitlines()[-1]), rss=torch_rss))

        def summary(runs):  # the round with the median time, and the range of times
            ranked = sorted(runs, key=lambda r: r["ms"])
            mid = dict(ranked[len(ranked) // 2])
            mid["range"] = f"[{ranked[0]['ms']:.1f}, {ranked[-1]['ms']:.1f}]"
            mid["rss"] = max(r["rss"] for r in runs)
            return mid

        ort = summary(ort_runs)
        base = summary(base_runs) if base_runs else None
        t = summary(torch_runs)
        torch_rss = t["rss"]
        built, nodes, ort_ms, ort_rss = ort["built"], ort["nodes"], ort["ms"], ort["rss"]
    print(f"BERT-style encoder: {args.layers} layers, hidden {args.hidden}, seq {args.seq}, batch {args.batch}, "
          f"{args.threads} threads")
    print(f"training graph: {nodes} built in {built:.0f} ms")
    print(f"gradient bytes final after 25% / 50% / 75% of the backward nodes: {ort['ready']}")
    print(f"{args.rounds} round(s): the median round [range of rounds]")
    print(f"{'':28}{'ms/fwd+bwd':>12}{'range':>20}{'peak RSS MiB':>14}")
    print(f"{'PyTorch ' + t['version'] + ' eager':28}{t['ms']:12.1f}{t['range']:>20}{torch_rss:14.0f}")
    print(f"{'ort_train':28}{ort_ms:12.1f}{ort['range']:>20}{ort_rss:14.0f}")
    if base:
        print(f"{'ort_train baseline':28}{base['ms']:12.1f}{base['range']:>20}{base['rss']:14.0f}")
    print(f"ratio ort_train / PyTorch: time {ort_ms / t['ms']:.2f}, memory {ort_rss / torch_rss:.2f}")
    if base:
        print(f"baseline ({args.baseline}): graph {base['nodes']} built in {base['built']:.0f} ms; "
              f"ratio ort_train / baseline: time {ort_ms / base['ms']:.2f}, memory {ort_rss / base['rss']:.2f}")


if __name__ == "__main__":
    main()
