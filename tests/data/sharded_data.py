#!/usr/bin/env python3
"""Data read from disk by row (CTest: data.*; spec section 3, issue 31).

  sharded_data.py --ort-train build/ort_train --source . --check shards|tokens|memory

shards: the mlp test model trained on one NPZ and on the same rows cut into
shards of uneven sizes (one empty, one deflated) as a folder, a glob and a
list file: the same losses bit for bit; a run stopped after 4 steps and
resumed equals the uninterrupted run bit for bit (across an epoch boundary);
--prefetch 0 and 4 change nothing; a bad shard is named.

tokens: the README's character model trained on an llm.c token file (labels
= input_ids, as the model shifts them): the loss falls, a resume is bit for
bit, and a token file's windows give the losses of the same windows as NPZ
rows (--deterministic: the attention kernel is otherwise chosen by timing,
and two choices round differently).

memory: 24 shards of 10 MB against one: peak RSS within 100 MB (the data is
read by row, never whole: here under 1 MB more; loading it would add 230 MB).

Standard library only.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npz_files  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from peak_rss import measured  # noqa: E402


def metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f if '"loss"' in line and '"eval_loss"' not in line]


def run(cmd, expect_ok=True):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if expect_ok and r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return r


def losses(rows):
    return [(r["step"], r["loss"], r.get("grad_norm")) for r in rows]


def check_shards(args, work):
    failures = []
    model = os.path.join(args.source, "tests/models/mlp")
    one = os.path.join(work, "one.npz")
    npz_files.write_npz(one, npz_files.mlp_rows(0, 96))
    shards = npz_files.write_mlp_shards(os.path.join(work, "shards"), [10, 0, 37, 49], compressed={2})
    listing = os.path.join(work, "list", "shards.txt")
    os.makedirs(os.path.dirname(listing))
    with open(listing, "w") as f:
        f.write("# the same shards, by relative path\n" + "\n".join(os.path.relpath(p, os.path.dirname(listing))
                                                                  for p in shards) + "\n")

    def train(name, data, extra=(), steps=8):
        m = os.path.join(work, name + ".jsonl")
        run([args.ort_train, "--log-level", "warn", "train", "--model", os.path.join(model, "model.onnx"), "--config",
             os.path.join(model, "training.yaml"), "--optimizer", "Adam", "--lr", "0.01", "--data", data,
             "--batch-size", "8", "--grad-accum", "3", "--steps", str(steps), "--threads", "1", "--metrics", m,
             # kernels chosen by timing (the GEMM library) chosen once, by the first run, for all
             "--kernel-choices", os.path.join(work, "kernel_choices.json")]
            + list(extra))
        return losses(metrics(m))

    # 96 rows, 12 micro-batches an epoch, 3 a step: 8 steps are two epochs.
    want = train("one", one)
    for label, data in (("folder", os.path.join(work, "shards")), ("glob", os.path.join(work, "shards", "*.npz")),
                        ("list file", listing)):
        got = train(label.replace(" ", "_"), data)
        print(f"{label}: {len(got)} steps, equal to one NPZ: {got == want}")
        if got != want:
            failures.append(f"{label}: {got} != one NPZ's {want}")
    for prefetch in ("0", "4"):
        got = train("prefetch" + prefetch, os.path.join(work, "shards"), ["--prefetch", prefetch])
        if got != want:
            failures.append(f"--prefetch {prefetch} changed the losses")
    # Stopped after step 4 (mid-epoch: micro-batch 12 starts epoch 2 at step 5) and resumed.
    ck = os.path.join(work, "ck")
    train("first", os.path.join(work, "shards"), ["--checkpoint-dir", ck], steps=4)
    second = train("second", os.path.join(work, "shards"), ["--checkpoint-dir", ck, "--resume"])
    print(f"resumed after step 4: steps {[s for s, _, _ in second]}, bit for bit: {second == want[4:]}")
    if second != want[4:]:
        failures.append(f"resume: {second} != {want[4:]}")
    # The epochs differ (reshuffled), and shuffle: false reads rows in order.
    epoch1, epoch2 = [l for _, l, _ in want[:4]], [l for _, l, _ in want[4:]]
    if epoch1 == epoch2:
        failures.append("the second epoch repeated the first one's order")
    # A bad shard is named before training starts.
    bad = os.path.join(work, "bad")
    npz_files.write_mlp_shards(bad, [8, 8])
    with open(os.path.join(bad, "shard_001.npz"), "r+b") as f:
        f.truncate(300)
    r = run([args.ort_train, "train", "--model", os.path.join(model, "model.onnx"), "--config",
             os.path.join(model, "training.yaml"), "--optimizer", "Adam", "--data", bad, "--steps", "1"],
            expect_ok=False)
    print(f"truncated shard: exit {r.returncode}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}")
    if r.returncode == 0 or "shard_001.npz" not in r.stderr:
        failures.append(f"a truncated shard was not named: exit {r.returncode} {r.stderr[-400:]}")
    return failures


def char_ids(source):
    text = ""
    for name in sorted(os.listdir(source)):
        p = os.path.join(source, name)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, encoding="utf-8", errors="replace") as f:
                text += " ".join(f.read().split()) + " "
    return [ord(c) - 32 if 32 <= ord(c) < 128 else 0 for c in text]


def check_tokens(args, work):
    if not os.path.isdir("/usr/share/common-licenses"):
        print("ORT_TRAIN_TEST_SKIPPED: no /usr/share/common-licenses (not a Debian machine)")
        sys.exit(77)
    failures = []
    ids = char_ids("/usr/share/common-licenses")
    tokens = os.path.join(work, "train.bin")
    npz_files.write_llmc_tokens(tokens, ids)
    desc = os.path.join(work, "char_lm_tokens.yaml")
    with open(os.path.join(args.source, "examples/char_lm/char_lm.yaml")) as f:
        base = f.read()
    with open(desc, "w") as f:
        # A schedule of its own length, so a run stopped early follows the same one.
        f.write(base.replace("model: model.onnx", "model: " + os.path.abspath(os.path.join(args.source, "examples/char_lm/model.onnx")))
                .replace("schedule: {type: cosine, warmup_steps: 50}", "schedule: {type: cosine, warmup_steps: 5, total_steps: 40}")
                + "\ndata: {train: train.bin, tokens: {shift_labels: false}}\n")

    def train(name, extra=(), steps=40):
        m = os.path.join(work, name + ".jsonl")
        run([args.ort_train, "--log-level", "warn", "train", "--config", desc, "--steps", str(steps),
             "--metrics", m, "--threads", "1", "--deterministic"] + list(extra))
        return losses(metrics(m))

    want = train("tokens")
    first, last = want[0][1], want[-1][1]
    print(f"token file ({len(ids)} tokens): loss {first:.4f} -> {last:.4f} in {len(want)} steps")
    if not last < first - 0.5:
        failures.append(f"the loss did not fall on the token file: {first} -> {last}")
    ck = os.path.join(work, "ck")
    train("first", ["--checkpoint-dir", ck], steps=20)
    second = train("second", ["--checkpoint-dir", ck, "--resume"])
    print(f"resumed after step 20: bit for bit: {second == want[20:]}")
    if second != want[20:]:
        failures.append(f"a token-file resume is not bit for bit: {second[:3]} vs {want[20:23]}")
    # The windows as NPZ rows (each window's first seq tokens; the model shifts
    # its labels itself), shuffled alike: the same losses.
    seq = 32
    rows = (len(ids) - 1) // seq
    flat = [ids[r * seq + k] for r in range(rows) for k in range(seq)]
    npz = os.path.join(work, "windows.npz")
    npz_files.write_npz(npz, {"input_ids": ("q", "<i8", flat, (rows, seq)), "labels": ("q", "<i8", flat, (rows, seq))})
    got = train("npz", ["--data", npz], steps=10)
    print(f"the same windows from an NPZ: equal: {got == want[:10]}")
    if got != want[:10]:
        failures.append(f"token windows differ from the same rows as NPZ: {got[:2]} vs {want[:2]}")
    # An input the token file cannot fill is named: here the labels, left out.
    with open(desc, "w") as f:
        f.write(base.replace("model: model.onnx", "model: " + os.path.abspath(os.path.join(args.source, "examples/char_lm/model.onnx")))
                + "\ndata: {train: train.bin, tokens: {labels: targets}}\n")
    r = run([args.ort_train, "train", "--config", desc, "--steps", "1"], expect_ok=False)
    print(f"unfilled input: exit {r.returncode}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}")
    if r.returncode == 0 or "labels" not in r.stderr:
        failures.append(f"an input the token file cannot fill was not named: {r.stderr[-300:]}")
    return failures


def peak_rss_mb(cmd):
    return measured(cmd)[0]


def check_memory(args, work):
    model = os.path.join(args.source, "tests/models/mlp")
    rows = 10 * 2 ** 20 // (42 * 4)  # 10 MB of rows of 42 floats
    one = npz_files.write_mlp_shards(os.path.join(work, "one"), [rows])
    many_dir = os.path.join(work, "many")
    os.makedirs(many_dir)
    for i in range(24):  # the same shard 24 times: content does not matter here, size does
        os.link(one[0], os.path.join(many_dir, f"shard_{i:03d}.npz"))
    cmd = [args.ort_train, "--log-level", "warn", "train", "--model", os.path.join(model, "model.onnx"), "--config",
           os.path.join(model, "training.yaml"), "--optimizer", "Adam", "--steps", "200", "--batch-size", "8",
           "--threads", "1", "--data"]
    small, large = peak_rss_mb(cmd + [one[0]]), peak_rss_mb(cmd + [many_dir])
    total = 24 * os.path.getsize(one[0]) / 2 ** 20
    print(f"peak RSS: one {os.path.getsize(one[0]) / 2**20:.0f} MB shard {small:.1f} MB, 24 shards ({total:.0f} MB) "
          f"{large:.1f} MB")
    # The bound, 100 MB: loading the shards would add 230 MB; reading by
    # row adds under 1 MB (more under the sanitizers' allocator, alike for both runs).
    return [] if large - small < 100 else [f"24 shards took {large - small:.1f} MB more than one"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--check", choices=["shards", "tokens", "memory"], required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ort_train_data_")
    try:
        failures = {"shards": check_shards, "tokens": check_tokens, "memory": check_memory}[args.check](args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
