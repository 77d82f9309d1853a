#!/usr/bin/python3
"""Forward-pass benchmark: a BERT-style encoder in ort_train and in PyTorch eager,
side by side in one run, at the same thread count.

Needs PyTorch and onnx (Debian's python3-torch / python3-onnx; run with /usr/bin/python3):

    /usr/bin/python3 bench/bench_forward.py --ort-train build/ort_train [--threads 2]
        [--layers 12 --hidden 768 --heads 12 --seq 128 --batch 8 --repeat 5]

Exports the model (tools/export_models.py's Bert, default BERT-base size) to a
temporary folder, then times each framework in its own subprocess so each one's
peak RSS is its own: the median forward time over --repeat runs after a warm-up,
sequences/s, and peak RSS. Prints a markdown table with the ratio to PyTorch.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))


def build(args):
    import torch
    from export_models import Bert
    torch.manual_seed(0)
    model = Bert(vocab=args.vocab, hidden=args.hidden, layers=args.layers, heads=args.heads,
                 inter=4 * args.hidden, max_pos=max(512, args.seq)).eval()
    g = torch.Generator().manual_seed(1)
    inputs = {
        "input_ids": torch.randint(0, args.vocab, (args.batch, args.seq), generator=g),
        "attention_mask": torch.ones(args.batch, args.seq, dtype=torch.int64),
        "token_type_ids": torch.zeros(args.batch, args.seq, dtype=torch.int64),
    }
    return model, inputs


def worker_torch(args):
    import torch
    torch.set_num_threads(args.threads)
    model, inputs = build(args)
    times = []
    with torch.no_grad():
        model(*inputs.values())
        for _ in range(args.repeat):
            t = time.perf_counter()
            model(*inputs.values())
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    print(json.dumps({"ms": times[len(times) // 2], "version": torch.__version__,
                      "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def export(args, folder):
    import torch
    from export_models import write_tensor
    model, inputs = build(args)
    path = os.path.join(folder, "model.onnx")
    torch.onnx.export(model, tuple(inputs.values()), path, input_names=list(inputs), output_names=["logits"],
                      opset_version=17, do_constant_folding=True)
    data = os.path.join(folder, "inputs")
    os.makedirs(data)
    for k, v in inputs.items():
        write_tensor(v.numpy(), k, os.path.join(data, f"{k}.pb"))
    return path, data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", default="build/ort_train")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--worker", choices=["torch", "export"], help=argparse.SUPPRESS)
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker == "torch":
        return worker_torch(args)
    if args.worker == "export":
        return export(args, args.folder)

    common = [f"--{k}={getattr(args, k)}" for k in ["threads", "layers", "hidden", "heads", "vocab", "seq", "batch", "repeat"]]
    # This process never imports torch: a child's peak RSS includes what it inherited
    # at fork, so ort_train must be started from a small parent to measure its own.
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, __file__, "--worker", "export", "--folder", tmp] + common, check=True,
                       capture_output=True)
        model, data = os.path.join(tmp, "model.onnx"), os.path.join(tmp, "inputs")
        r = subprocess.run([args.ort_train, "run", "--model", model, "--inputs", data, "--threads", str(args.threads),
                            "--repeat", str(args.repeat + 1)], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"ort_train failed: {r.stderr}")
        ort_ms = float(re.search(r"forward: median ([\d.]+) ms", r.stdout).group(1))
        ort_rss = float(re.search(r"peak RSS ([\d.]+) MiB", r.stdout + r.stderr).group(1))
        inter = re.search(r"peak intermediate memory ([\d.]+) MiB", r.stdout + r.stderr)
    t = json.loads(subprocess.run([sys.executable, __file__, "--worker", "torch"] + common, capture_output=True,
                                  text=True, check=True).stdout)
    print(f"BERT-style encoder forward: {args.layers} layers, hidden {args.hidden}, seq {args.seq}, batch {args.batch}, "
          f"{args.threads} threads, median of {args.repeat}")
    print("| framework | median ms | sequences/s | peak RSS MiB | time ratio vs PyTorch |")
    print("|---|---|---|---|---|")
    print(f"| PyTorch {t['version']} eager (no_grad) | {t['ms']:.1f} | {args.batch * 1000 / t['ms']:.1f} | "
          f"{t['rss_mib']:.0f} | 1.00 |")
    print(f"| ort_train run | {ort_ms:.1f} | {args.batch * 1000 / ort_ms:.1f} | {ort_rss:.0f} | {ort_ms / t['ms']:.2f} |")
    if inter:
        print(f"\nort_train peak intermediate (activation) memory: {inter.group(1)} MiB")


if __name__ == "__main__":
    main()
