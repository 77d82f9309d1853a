#!/usr/bin/env python3
"""Data read from disk (docs/data.md, issue 31): memory and throughput.

    python3 bench/bench_data.py --ort-train build/ort_train [--work /tmp/ort_train_bench_data] [--keep]

memory: the mlp test model trains 200 steps on 24 uncompressed NPZ shards of
100 MB (2.4 GB) and on one 24 MB shard of the same rows' layout: peak RSS of
each (measured from a small wrapper process, so this script's own memory is not counted).

throughput: with --prefetch 0 the step reads its micro-batches itself, so
`data_ms` in --metrics is the time to read and assemble them; beside the
training's own samples/s it shows how much faster the data comes than the
step consumes it. Rows per second and GB/s (bytes of the rows delivered,
from the page cache: each file is read once before), medians over the
steps after the first. Sources: the 2.4 GB of NPZ shards (random rows),
the same shards with shuffle off, and a 1 GB token file (the GPT-2 example,
windows of 64+1 uint16 tokens).

tokens: the GPT-2 example trains 200 steps on a 1 GB token file
(tools/make_token_file.py over examples/gpt2/data/vocab.txt) and on a 10 MB
one: peak RSS of each.

Standard library only; the data (3.4 GB) is written under --work and removed
unless --keep.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "data"))
import npz_files  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tools"))
from peak_rss import measured  # noqa: E402


def peak_rss_mb(cmd):
    return measured(cmd)[0]


def warm(paths):
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f if '"data_ms"' in line]


def mlp_cmd(args, data, extra=()):
    model = os.path.join(ROOT, "tests/models/mlp")
    return [args.ort_train, "--log-level", "warn", "train", "--model", os.path.join(model, "model.onnx"), "--config",
            os.path.join(model, "training.yaml"), "--optimizer", "Adam", "--steps", "200", "--batch-size", "8",
            "--threads", "2", "--data", data] + list(extra)


def shards(work):
    folder = os.path.join(work, "shards")
    rows = 100 * 10 ** 6 // (42 * 4)
    if not os.path.isdir(folder):
        os.makedirs(folder)
        first = os.path.join(folder, "shard_00.npz")
        npz_files.write_mlp_npz_of_size(first, rows)
        for i in range(1, 24):  # separate files (and page-cache pages), the same rows
            shutil.copyfile(first, os.path.join(folder, f"shard_{i:02d}.npz"))
    small = os.path.join(work, "small.npz")
    if not os.path.exists(small):
        npz_files.write_mlp_npz_of_size(small, 24 * 10 ** 6 // (42 * 4))
    return folder, small


def tokens(args, work, mb, name):
    vocab = os.path.join(ROOT, "examples/gpt2/data/vocab.txt")
    if not os.path.exists(vocab):
        subprocess.run([sys.executable, os.path.join(ROOT, "examples/gpt2/make_lm_data.py")], check=True,
                       stdout=subprocess.DEVNULL)
    path = os.path.join(work, name)
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools/make_token_file.py"), "--vocab", vocab, "--out", path,
                        "--min-mb", str(mb)], check=True, stdout=subprocess.DEVNULL)
    desc = os.path.join(work, name + ".yaml")
    with open(desc, "w") as f:
        f.write(f"model: {os.path.join(ROOT, 'examples/gpt2/gpt2.onnx')}\ndims: {{seq: 64}}\nbatch_size: 8\n"
                f"data: {{train: {path}, tokens: {{shift_labels: false, fill: {{attention_mask: 1}}}}}}\n")
    return path, desc


def throughput(label, cmd, row_bytes, work):
    m = os.path.join(work, "m.jsonl")
    subprocess.run(cmd + ["--prefetch", "0", "--metrics", m], check=True, capture_output=True)
    rows = metrics(m)[1:]
    batch = 8
    data_ms = statistics.median(r["data_ms"] for r in rows)
    step_ms = statistics.median(r["step_ms"] for r in rows)
    rows_per_s = batch / (data_ms / 1000)
    print(f"| {label} | {data_ms:.3f} | {rows_per_s:,.0f} | {rows_per_s * row_bytes / 1e9:.2f} | "
          f"{batch / (step_ms / 1000):,.0f} | {step_ms / data_ms:,.0f}x |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--work", default="/tmp/ort_train_bench_data")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    try:
        folder, small = shards(args.work)
        big_tokens, big_desc = tokens(args, args.work, 1024, "train_1g.bin")
        small_tokens, small_desc = tokens(args, args.work, 10, "train_10m.bin")
        warm([os.path.join(folder, f) for f in os.listdir(folder)] + [big_tokens])
        total = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)) / 1e9
        print("memory (peak RSS, MB):\n")
        print("| data | peak RSS |\n|---|---|")
        print(f"| one NPZ shard, {os.path.getsize(small) / 1e6:.0f} MB | {peak_rss_mb(mlp_cmd(args, small)):.1f} |")
        print(f"| 24 NPZ shards, {total:.2f} GB | {peak_rss_mb(mlp_cmd(args, folder)):.1f} |")
        gpt = [args.ort_train, "--log-level", "warn", "train", "--optimizer", "AdamW", "--lr", "1e-3", "--steps",
               "200", "--threads", "2", "--config"]
        print(f"| GPT-2 example, token file {os.path.getsize(small_tokens) / 1e6:.0f} MB | "
              f"{peak_rss_mb(gpt + [small_desc]):.1f} |")
        print(f"| GPT-2 example, token file {os.path.getsize(big_tokens) / 1e9:.2f} GB | "
              f"{peak_rss_mb(gpt + [big_desc]):.1f} |")
        print("\nthroughput (--prefetch 0, page cache warm; medians over steps 2-200):\n")
        print("| source | data_ms per micro-batch of 8 | rows/s | GB/s | the step consumes rows/s | data faster by |")
        print("|---|---|---|---|---|---|")
        throughput("24 NPZ shards, shuffled", mlp_cmd(args, folder), 42 * 4, args.work)
        unshuffled = os.path.join(args.work, "unshuffled.yaml")
        with open(os.path.join(ROOT, "tests/models/mlp/training.yaml")) as f, open(unshuffled, "w") as g:
            g.write(f.read() + "\ndata: {shuffle: false}\n")
        cmd = mlp_cmd(args, folder)
        cmd[cmd.index("--config") + 1] = unshuffled
        throughput("24 NPZ shards, in order", cmd, 42 * 4, args.work)
        throughput("GPT-2 token file 1 GB (64+1 tokens a row)", gpt + [big_desc], 65 * 2, args.work)
    finally:
        if not args.keep:
            shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
