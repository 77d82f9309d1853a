#!/usr/bin/python3
"""Forward-pass benchmark: a BERT-style encoder in ort_train and in PyTorch eager,
side by side in one run, at the same thread count.

Needs PyTorch and onnx (Debian's python3-torch / python3-onnx, installed by
`tools/install_deps.sh --python`), so run it with /usr/bin/python3 — the pyenv
`python3` on PATH has no torch:

    /usr/bin/python3 bench/bench_forward.py --ort-train build/ort_train [--threads 2]
        [--layers 12 --hidden 768 --heads 12 --intermediate 3072 --vocab 30522
         --seq 128 --batch 8 --repeat 5]

Defaults are BERT-base; a quick smoke test:
    /usr/bin/python3 bench/bench_forward.py --layers 1 --hidden 64 --heads 4 --vocab 500 --seq 16 --batch 2

Exports the model (tools/export_models.py's Bert) with torch.onnx.export at
opset 17 into a temporary folder with its inputs, then times each framework in
its own subprocess: PyTorch eager under torch.no_grad() (one warm-up, then
--repeat runs) and `ort_train run --repeat` (its "forward: median X ms" line;
it is given one extra run, which the median absorbs, in place of a warm-up).
Each one's peak RSS is measured from outside: a small wrapper process starts it
and reads getrusage(RUSAGE_CHILDREN).ru_maxrss, so nothing the parent or the
export step holds is counted. Prints a markdown table with the time ratio
ort_train / PyTorch and ort_train's memory log lines.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))

# Runs argv[1:] and prints its exit code and peak RSS (KiB on Linux) as JSON on stderr's last line.
# The wrapper itself never imports torch, and its only child is the measured one.
RSS_WRAPPER = ("import json, resource, subprocess, sys\n"
               "rc = subprocess.run(sys.argv[1:]).returncode\n"
               "kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
               "print(json.dumps({'rc': rc, 'rss_kib': kib}), file=sys.stderr)\n")


def build(args):
    import torch
    from export_models import Bert
    torch.manual_seed(0)
    model = Bert(vocab=args.vocab, hidden=args.hidden, layers=args.layers, heads=args.heads,
                 inter=args.intermediate, max_pos=max(512, args.seq)).eval()
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
    print(json.dumps({"ms": times[len(times) // 2], "version": torch.__version__}))


def worker_export(args, folder):
    import torch
    from export_models import write_tensor
    model, inputs = build(args)
    torch.onnx.export(model, tuple(inputs.values()), os.path.join(folder, "model.onnx"), input_names=list(inputs),
                      output_names=["logits"], opset_version=17, do_constant_folding=True)
    data = os.path.join(folder, "inputs")
    os.makedirs(data)
    for k, v in inputs.items():
        write_tensor(v.numpy(), k, os.path.join(data, f"{k}.pb"))


def measured(cmd, what):
    """Runs cmd under the RSS wrapper; returns (stdout, stderr, peak RSS MiB). Exits on failure."""
    r = subprocess.run([sys.executable, "-c", RSS_WRAPPER] + cmd, capture_output=True, text=True)
    lines = r.stderr.rstrip().splitlines()
    try:
        report = json.loads(lines[-1])
    except (IndexError, ValueError):
        sys.exit(f"{what}: the RSS wrapper failed:\n{r.stderr}")
    stderr = "\n".join(lines[:-1])
    if report["rc"] != 0:
        sys.exit(f"{what} failed (exit {report['rc']}):\n{r.stdout[-3000:]}\n{stderr[-3000:]}")
    return r.stdout, stderr, report["rss_kib"] / 1024


def main():
    ap = argparse.ArgumentParser(description="BERT-style encoder forward: ort_train vs PyTorch eager")
    ap.add_argument("--ort-train", default="build/ort_train")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="for both frameworks (default: all cores)")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--intermediate", type=int, default=0, help="feed-forward size (default: 4 * hidden)")
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--worker", choices=["torch", "export"], help=argparse.SUPPRESS)
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.intermediate = args.intermediate or 4 * args.hidden
    if args.hidden % args.heads:
        ap.error("--hidden must be a multiple of --heads")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.worker == "torch":
        return worker_torch(args)
    if args.worker == "export":
        return worker_export(args, args.folder)
    if not os.access(args.ort_train, os.X_OK):
        sys.exit(f"ort_train binary not found: {args.ort_train} (build it, or pass --ort-train)")

    common = [f"--{k}={getattr(args, k)}"
              for k in ["threads", "layers", "hidden", "heads", "intermediate", "vocab", "seq", "batch", "repeat"]]
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", "export", "--folder", tmp] + common,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"export failed:\n{r.stderr[-3000:]}")
        out, err, ort_rss = measured(
            [args.ort_train, "--log-level", "info", "run", "--model", os.path.join(tmp, "model.onnx"),
             "--inputs", os.path.join(tmp, "inputs"), "--threads", str(args.threads), "--repeat", str(args.repeat + 1)],
            "ort_train run")
    log = out + "\n" + err
    median = re.search(r"forward: median ([\d.]+) ms over (\d+) runs", log)
    if not median:
        sys.exit(f"ort_train printed no 'forward: median' line:\n{log[-3000:]}")
    ort_ms = float(median.group(1))
    memory_lines = [line.strip() for line in log.splitlines() if re.search(r"peak (activations|intermediate)", line)]

    out, _, torch_rss = measured([sys.executable, os.path.abspath(__file__), "--worker", "torch"] + common,
                                 "PyTorch worker")
    t = json.loads(out.strip().splitlines()[-1])

    print(f"BERT-style encoder forward: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, "
          f"intermediate {args.intermediate}, vocab {args.vocab}, seq {args.seq}, batch {args.batch}; "
          f"{args.threads} threads; median of {args.repeat} runs after a warm-up\n")
    print("| framework | median ms | sequences/s | peak RSS MiB | time ratio (ort_train / PyTorch) |")
    print("|---|---|---|---|---|")
    print(f"| PyTorch {t['version']} eager, no_grad | {t['ms']:.1f} | {args.batch * 1000 / t['ms']:.1f} | "
          f"{torch_rss:.0f} | 1.00 |")
    print(f"| ort_train run | {ort_ms:.1f} | {args.batch * 1000 / ort_ms:.1f} | {ort_rss:.0f} | "
          f"{ort_ms / t['ms']:.2f} |")
    if memory_lines:
        print("\nort_train's memory log:")
        for line in memory_lines:
            print(f"    {line}")


if __name__ == "__main__":
    main()
