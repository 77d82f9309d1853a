#!/usr/bin/env python3
"""Data-parallel training through mpirun against one process (CTest: distributed.*).

  run_data_parallel.py --ort-train build/ort_train --model-dir tests/models/mlp [--check equal|error]

equal: for 2 and 3 ranks, every optimizer (Sgd with momentum, Adam, AdamW,
AdamW in Hugging Face mode, Lamb), with and without gradient clipping,
`mpirun -np N ort_train ... --grad-accum 1` must log the losses and gradient
norms of `ort_train ... --grad-accum N` on one process within 1e-6 relative,
and export the same weights within 1e-6 (compared by `ort_train run` on a
fixed input). Data: synthetic batches, a different one per micro-batch index.

With --deterministic the runs must equal one process bit for bit; with
small buckets (allreduces overlapping the backward) within 1e-6.

resume: a 2-rank run resumed at 2 ranks repeats bit for bit; checkpoints
written at 2 and 3 ranks resume at 3 ranks and 1 process and continue one
process's trajectory within 1e-6.

zero: --zero 1 equals --zero 0 for every optimizer (bit for bit with
--deterministic, except Lamb: its whole-tensor norms are summed from
per-share parts), and its checkpoints resume without ZeRO.

zero2: --zero 2 (gradients too kept as 1/N shares) equals --zero 0 at 2
and 3 ranks: within 1e-6, and bit for bit with --deterministic (except
Lamb, as above), with tiny buckets too (many reduce-scatters); with
--grad-accum 2 within 1e-6 (micro-batches are summed over the ranks one at a
time, then added); its checkpoints resume without ZeRO; the gradient bytes
per rank are logged at 1, 2 and 4 ranks and shrink with N.

kill: SIGKILL of one rank ends the job (non-zero, under 30 s) and its last
checkpoint resumes. timeout: a stopped rank makes --comm-timeout end the job
with a message naming the collective.

bf16: --allreduce-dtype bf16 (gradients rounded to bfloat16 for the sum) on
2 and 3 ranks, with the default buckets, tiny buckets and --deterministic's
rank-ordered sum: losses and gradient norms within bfloat16's rounding (1e-2
relative) of one process's, and not equal to the float32 reduction's (the
rounding happened); with --zero 1 it is refused.

epochs: --epochs 2 over 12 batch folders takes the steps of one process with
--grad-accum N at N = 2 and 3 ranks; the linear schedule's learning rates,
the --eval-every evaluations and the --save-every checkpoints agree.

shards: NPZ shards on disk: 2 ranks equal one process bit for bit; a resume
at 2 ranks is bit for bit, at 3 ranks within 1e-6 (the same rows, another
summation order).

tcp: Open MPI's TCP transport over loopback only (as between nodes) at 2
and 3 ranks equals one process bit for bit with --deterministic.

kernel_choices: ranks given different --kernel-choices files (rank 0's
forcing one attention kernel, rank 1's the other) write the same file, rank
0's choices; without files, rank 0's timings hold on both ranks.

lora: LoRA adapters (rank 4 on every Gemm weight, fc3's bias trained too)
at 2 and 3 ranks equal one process's --grad-accum N within 1e-6, and bit for
bit with --deterministic; --zero 1 and --zero 2 (over the adapters only)
equal --zero 0 bit for bit with --deterministic, and so do the adapters
files they export (--export-adapters).

error: a batch source that fails on rank 1 only must end the whole job with a
non-zero exit, the failing rank named, in under 30 s.

Exits 77 (CTest's skip code) when mpirun is not installed or this build has
no MPI plugin. Standard library only.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

OPTIMIZERS = {
    "sgd_momentum": "{name: Sgd, lr: 0.05, momentum: 0.9}",
    "adam": "{name: Adam, lr: 0.01}",
    "adamw": "{name: AdamW, lr: 0.01, weight_decay: 0.1}",
    "adamw_hf": "{name: AdamW, lr: 0.01, weight_decay: 0.1, mode: huggingface}",
    "lamb": "{name: Lamb, lr: 0.01}",
}
from launch import MPIRUN, mpi_missing, rank_pids


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def worst(got, want):
    """The largest relative difference in loss or gradient norm between the
    rows of `got` and the rows of `want` with the same step."""
    by_step = {r["step"]: r for r in want}
    return max((max(rel(g["loss"], by_step[g["step"]]["loss"]), rel(g["grad_norm"], by_step[g["step"]]["grad_norm"]))
                for g in got), default=1.0)


def metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def train(args, folder, name, desc, ranks, accum, extra=(), steps=4, log_level="warn", launcher=MPIRUN,
          data="synthetic"):
    out = os.path.join(folder, name)
    os.makedirs(out, exist_ok=True)
    cmd = ([] if ranks == 1 else launcher + ["-np", str(ranks)]) + [
        args.ort_train, "--log-level", log_level, "train", "--model", os.path.join(args.model_dir, "model.onnx"),
        "--config", desc, "--data", data, "--batch-size", "4", "--steps", str(steps), "--threads", "1",
        "--grad-accum", str(accum), "--metrics", os.path.join(out, "m.jsonl"),
        "--export", os.path.join(out, "trained.onnx")] + list(extra)
    # Kernels chosen by timing (the CPU's GEMM library, attention) are chosen
    # once for the folder: the first run writes the file, the rest read it, so
    # runs compared across processes without --deterministic differ only in
    # what they test, not in a choice a noisy clock made.
    if "--kernel-choices" not in extra:
        cmd += ["--kernel-choices", os.path.join(folder, "kernel_choices.json")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return r, out


def check_equal(args, folder):
    base = open(os.path.join(args.model_dir, "training.yaml")).read()
    failures = []
    for opt, spec in OPTIMIZERS.items():
        for clip in (False, True):
            desc = os.path.join(folder, f"{opt}_{clip}.yaml")
            with open(desc, "w") as f:
                f.write(base + f"\noptimizer: {spec[:-1]}{', max_grad_norm: 0.05' if clip else ''}}}\n")
            for n in (2, 3):
                label = f"{opt}{' clipped' if clip else ''}, {n} ranks"
                one, one_dir = train(args, folder, f"{opt}_{clip}_{n}_one", desc, 1, n)
                many, many_dir = train(args, folder, f"{opt}_{clip}_{n}_many", desc, n, 1)
                if one.returncode != 0 or many.returncode != 0:
                    failures.append(f"{label}: exit {one.returncode}/{many.returncode}: {one.stderr[-500:]} {many.stderr[-500:]}")
                    continue
                a, b = metrics(os.path.join(one_dir, "m.jsonl")), metrics(os.path.join(many_dir, "m.jsonl"))
                diff = worst(b, a)
                if len(a) != len(b) or diff > 1e-6:
                    failures.append(f"{label}: losses/grad norms differ by {diff:.3g} relative")
                # The exported weights: the same outputs on the model's test input, within 1e-6.
                # The test input alone (its folder's output_0.pb is the untrained model's).
                inputs = os.path.join(folder, "test_input")
                if not os.path.isdir(inputs):
                    os.makedirs(inputs)
                    shutil.copy(os.path.join(args.model_dir, "test_data_set_0", "x.pb"), inputs)
                ref = subprocess.run([args.ort_train, "--log-level", "warn", "run", "--model",
                                      os.path.join(one_dir, "trained.onnx"), "--inputs", inputs, "--outputs",
                                      os.path.join(one_dir, "out")],
                                     capture_output=True, text=True)
                cmp = subprocess.run([args.ort_train, "--log-level", "warn", "run", "--model",
                                      os.path.join(many_dir, "trained.onnx"), "--inputs", inputs, "--expected",
                                      os.path.join(one_dir, "out"), "--rtol", "1e-6", "--atol", "1e-7"],
                                     capture_output=True, text=True)
                outs = [ref.returncode, cmp.returncode]
                if outs != [0, 0] or "MISMATCH" in cmp.stdout or "match" not in cmp.stdout:
                    failures.append(f"{label}: exported weights differ: {cmp.stdout[-300:]} {cmp.stderr[-300:]}")
                print(f"{label}: {len(a)} steps, worst relative difference {diff:.3g}, exit codes {outs}")
    # --deterministic sums in rank order, the order one process accumulates
    # micro-batches in: bit-identical (one micro-batch per rank). Small buckets
    # (many allreduces overlapping the backward) must not change the result.
    for opt in OPTIMIZERS:
        desc = os.path.join(folder, f"{opt}_False.yaml")
        for n in (2, 3):
            for flags, exact in ((["--deterministic"], True), (["--bucket-mb", "0.001"], False)):
                label = f"{opt}, {n} ranks, {' '.join(flags)}"
                # Against one process run alike: --deterministic pins the kernels chosen by timing, which
                # the small-bucket runs share through the folder's choices file instead.
                one, one_dir = train(args, folder, f"det_{opt}_{n}_one_{exact}", desc, 1, n,
                                     ["--deterministic"] if exact else [])
                many, many_dir = train(args, folder, f"det_{opt}_{n}_{flags[0]}", desc, n, 1, flags)
                if one.returncode != 0 or many.returncode != 0:
                    failures.append(f"{label}: exit {one.returncode}/{many.returncode}: {many.stderr[-500:]}")
                    continue
                a, b = metrics(os.path.join(one_dir, "m.jsonl")), metrics(os.path.join(many_dir, "m.jsonl"))
                diff = worst(b, a)
                if len(a) != len(b) or diff > (0 if exact else 1e-6):
                    failures.append(f"{label}: differs from one process by {diff:.3g} relative")
                print(f"{label}: worst relative difference {diff:.3g}{' (must be 0)' if exact else ''}")
    return failures


def check_resume(args, folder):
    # A checkpoint written at one world size resumes at another with the same
    # micro-batches per step (N ranks x k = M ranks x k'): the trajectory of one
    # process with --grad-accum 6 continues.
    desc = os.path.join(folder, "adam.yaml")
    with open(desc, "w") as f:
        f.write(open(os.path.join(args.model_dir, "training.yaml")).read() + "\noptimizer: {name: Adam, lr: 0.01}\n")
    ref, ref_dir = train(args, folder, "ref", desc, 1, 6)
    if ref.returncode != 0:
        return [f"one process failed: {ref.stderr[-500:]}"]
    want = metrics(os.path.join(ref_dir, "m.jsonl"))
    failures = []
    # Killed and resumed at the same world size: bit for bit.
    full, full_dir = train(args, folder, "same_full", desc, 2, 3)
    ck = os.path.join(folder, "ck_same")
    first, _ = train(args, folder, "same_first", desc, 2, 3, ["--checkpoint-dir", ck], steps=2)
    second, second_dir = train(args, folder, "same_second", desc, 2, 3, ["--checkpoint-dir", ck, "--resume"])
    if full.returncode or first.returncode or second.returncode:
        failures.append(f"same-size resume: exit {full.returncode}/{first.returncode}/{second.returncode}")
    else:
        want_same = {r["step"]: r for r in metrics(os.path.join(full_dir, "m.jsonl"))}
        got = metrics(os.path.join(second_dir, "m.jsonl"))
        same = [g["step"] for g in got] == [3, 4] and all(
            g["loss"] == want_same[g["step"]]["loss"] and g["grad_norm"] == want_same[g["step"]]["grad_norm"] for g in got)
        print(f"2 ranks resumed at 2 ranks: steps {[g['step'] for g in got]}, bit for bit: {same}")
        if not same:
            failures.append("a resume at the same world size is not bit for bit")
    for (n1, k1), (n2, k2) in (((2, 3), (3, 2)), ((3, 2), (1, 6))):
        label = f"{n1} ranks x {k1} -> {n2} x {k2}"
        ck = os.path.join(folder, f"ck_{n1}_{n2}")
        first, _ = train(args, folder, f"first_{n1}_{n2}", desc, n1, k1, ["--checkpoint-dir", ck], steps=2)
        second, second_dir = train(args, folder, f"second_{n1}_{n2}", desc, n2, k2, ["--checkpoint-dir", ck, "--resume"])
        if first.returncode != 0 or second.returncode != 0:
            failures.append(f"{label}: exit {first.returncode}/{second.returncode}: {first.stderr[-400:]} {second.stderr[-400:]}")
            continue
        got = metrics(os.path.join(second_dir, "m.jsonl"))
        steps = [r["step"] for r in got]
        diff = worst(got, want)
        if steps != [3, 4] or diff > 1e-6:
            failures.append(f"{label}: steps {steps}, differs from one process by {diff:.3g}")
        print(f"{label}: resumed steps {steps}, worst relative difference {diff:.3g}")
    return failures


def check_shards(args, folder):
    # NPZ shards read by row (issue 31): ranks take disjoint rows of each
    # epoch's order, so 2 ranks equal one process with --grad-accum 2 bit for
    # bit (--deterministic); a 2-rank run stopped and resumed at 2 ranks is bit
    # for bit; stopped at 2 ranks and resumed at 3 it reads the same rows
    # (only the order gradients are summed in differs: within 1e-6).
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
    import npz_files
    data = os.path.join(folder, "shards")
    npz_files.write_mlp_shards(data, [13, 0, 30, 29], compressed={3})  # 72 rows: 18 micro-batches of 4 an epoch
    desc = os.path.join(folder, "adam.yaml")
    with open(desc, "w") as f:
        f.write(open(os.path.join(args.model_dir, "training.yaml")).read() + "\noptimizer: {name: Adam, lr: 0.01}\n")
    failures = []

    def rows(out):
        return [(r["step"], r["loss"], r["grad_norm"]) for r in metrics(os.path.join(out, "m.jsonl"))]

    det = ["--deterministic"]
    # 6 steps x 6 micro-batches: two epochs.
    one, one_dir = train(args, folder, "sh_one2", desc, 1, 2, det, steps=6, data=data)
    two, two_dir = train(args, folder, "sh_two", desc, 2, 1, det, steps=6, data=data)
    if one.returncode or two.returncode:
        return [f"shards: exit {one.returncode}/{two.returncode}: {two.stderr[-500:]}"]
    same = rows(two_dir) == rows(one_dir)
    print(f"2 ranks on shards vs one process --grad-accum 2: bit for bit: {same}")
    if not same:
        failures.append("2 ranks on shards differ from one process with --grad-accum 2")
    full, full_dir = train(args, folder, "sh_full", desc, 2, 3, det, steps=6, data=data)
    ck = os.path.join(folder, "sh_ck")
    first, _ = train(args, folder, "sh_first", desc, 2, 3, det + ["--checkpoint-dir", ck], steps=3, data=data)
    ck3 = os.path.join(folder, "sh_ck3")
    shutil.copytree(ck, ck3)
    second, second_dir = train(args, folder, "sh_second", desc, 2, 3, det + ["--checkpoint-dir", ck, "--resume"],
                               steps=6, data=data)
    if full.returncode or first.returncode or second.returncode:
        return failures + [f"shard resume: exit {full.returncode}/{first.returncode}/{second.returncode}"]
    want = rows(full_dir)
    got = rows(second_dir)
    print(f"2 ranks stopped after step 3 and resumed at 2: steps {[g[0] for g in got]}, bit for bit: {got == want[3:]}")
    if got != want[3:]:
        failures.append(f"a resume on shards at 2 ranks is not bit for bit: {got} vs {want[3:]}")
    third, third_dir = train(args, folder, "sh_third", desc, 3, 2, ["--checkpoint-dir", ck3, "--resume"], steps=6,
                             data=data)
    if third.returncode:
        return failures + [f"resume at 3 ranks: exit {third.returncode}: {third.stderr[:1500]}"]
    got3 = metrics(os.path.join(third_dir, "m.jsonl"))
    diff = worst(got3, metrics(os.path.join(full_dir, "m.jsonl")))
    print(f"2 ranks x 3 -> 3 ranks x 2 on shards: steps {[g['step'] for g in got3]}, worst relative difference {diff:.3g}")
    if [g["step"] for g in got3] != [4, 5, 6] or diff > 1e-6:
        failures.append(f"a resume on shards at 3 ranks differs by {diff:.3g}")
    return failures


def zero_matches_zero0(args, folder, stage, optimizers, flag_sets):
    """--zero `stage` against --zero 0 for each optimizer, with and without
    clipping, at 2 and 3 ranks, under each (flags, exact) of `flag_sets`:
    exact means bit for bit (Lamb sums each tensor's norms from per-share
    parts: within 1e-6, never required bit for bit)."""
    base = open(os.path.join(args.model_dir, "training.yaml")).read()
    failures = []
    for opt in optimizers:
        for clip in (False, True):
            desc = os.path.join(folder, f"z{stage}_{opt}_{clip}.yaml")
            with open(desc, "w") as f:
                spec = OPTIMIZERS[opt]
                f.write(base + f"\noptimizer: {spec[:-1]}{', max_grad_norm: 0.05' if clip else ''}}}\n")
            for n in (2, 3):
                for flags, exact in flag_sets:
                    exact = exact and opt != "lamb"
                    label = f"{opt}{' clipped' if clip else ''}, {n} ranks {' '.join(flags)}"
                    name = f"{opt}_{clip}_{n}_{len(flags)}"
                    zero0, d0 = train(args, folder, f"z{stage}_0_{name}", desc, n, 1, flags)
                    zero, d = train(args, folder, f"z{stage}_{name}", desc, n, 1, flags + ["--zero", str(stage)])
                    if zero0.returncode != 0 or zero.returncode != 0:
                        failures.append(f"{label}: exit {zero0.returncode}/{zero.returncode}: {zero.stderr[-400:]}")
                        continue
                    a, b = metrics(os.path.join(d0, "m.jsonl")), metrics(os.path.join(d, "m.jsonl"))
                    diff = worst(b, a)
                    if len(a) != len(b) or diff > (0 if exact else 1e-6):
                        failures.append(f"{label}: --zero {stage} differs from --zero 0 by {diff:.3g}")
                    print(f"{label}: --zero {stage} vs 0, worst relative difference {diff:.3g}"
                          f"{' (must be 0)' if exact else ''}")
    return failures


def zero_checkpoint_resumes(args, folder, stage, desc):
    """A --zero `stage` checkpoint at 3 ranks resumes at 2 ranks without ZeRO
    and continues one process's trajectory."""
    ref, ref_dir = train(args, folder, f"z{stage}_ref", desc, 1, 6)
    ck = os.path.join(folder, f"z{stage}_ck")
    first, _ = train(args, folder, f"z{stage}_first", desc, 3, 2, ["--zero", str(stage), "--checkpoint-dir", ck],
                     steps=2)
    second, second_dir = train(args, folder, f"z{stage}_second", desc, 2, 3, ["--checkpoint-dir", ck, "--resume"])
    if ref.returncode or first.returncode or second.returncode:
        return [f"ZeRO-{stage} resume: exit {ref.returncode}/{first.returncode}/{second.returncode}: "
                f"{first.stderr[-300:]} {second.stderr[-300:]}"]
    want, got = metrics(os.path.join(ref_dir, "m.jsonl")), metrics(os.path.join(second_dir, "m.jsonl"))
    diff = worst(got, want)
    print(f"ZeRO-{stage} checkpoint at 3 ranks resumed at 2 without ZeRO: steps {[g['step'] for g in got]}, "
          f"worst relative difference {diff:.3g}")
    return [f"ZeRO-{stage} resume differs by {diff:.3g}"] if [g["step"] for g in got] != [3, 4] or diff > 1e-6 else []


def check_zero(args, folder):
    # --zero 1 (each rank keeps 1/N of the optimizer state) equals --zero 0:
    # within 1e-6 (also in small buckets), and bit for bit with --deterministic; its checkpoints are
    # complete (they resume without ZeRO).
    # Buckets of 1 KB: reduce-scattered one by one, most inside one rank's range, some across a boundary.
    failures = zero_matches_zero0(args, folder, 1, ("sgd_momentum", "adam", "adamw", "adamw_hf", "lamb"),
                                  (([], False), (["--deterministic"], True), (["--bucket-mb", "0.001"], False)))
    failures += zero_checkpoint_resumes(args, folder, 1, os.path.join(folder, "z1_adam_False.yaml"))
    # Optimizer-state bytes per rank at 1, 2 and 4 ranks (Adam: two float32 buffers).
    desc = os.path.join(folder, "z1_adam_False.yaml")
    for n in (1, 2, 4):
        r, _ = train(args, folder, f"z_bytes_{n}", desc, n, 1, ["--zero", "1"], log_level="info")
        line = [l for l in (r.stdout + r.stderr).splitlines() if "optimizer state" in l]
        print(f"{n} rank(s): {line[0].split('] ')[-1] if line else 'no report'}")
        if r.returncode != 0 or not line:
            failures.append(f"{n} ranks: no optimizer-state report")
    return failures


def check_lora(args, folder):
    base = open(os.path.join(args.model_dir, "training.yaml")).read()
    desc = os.path.join(folder, "lora.yaml")
    with open(desc, "w") as f:
        f.write(base + "\noptimizer: {name: AdamW, lr: 0.01, max_grad_norm: 0.5}\n"
                "lora: {targets: [\"fc*.weight\"], rank: 4, alpha: 8, train_also: [fc3.bias]}\n")
    failures = []

    def run(name, ranks, accum, flags):
        r, out = train(args, folder, name, desc, ranks, accum,
                       list(flags) + ["--export-adapters", os.path.join(folder, name, "adapters.safetensors")])
        if r.returncode != 0:
            failures.append(f"{name}: exit {r.returncode}: {r.stderr[-400:]}")
            return None
        with open(os.path.join(out, "adapters.safetensors"), "rb") as f:
            got = metrics(os.path.join(out, "m.jsonl")), f.read()
        if len(got[0]) != 4 or b"base_model.model.fc1.lora_A.weight" not in got[1] or b"fc3.bias" not in got[1]:
            failures.append(f"{name}: {len(got[0])} steps logged, or the adapters file lacks fc1's A or fc3.bias")
        return got

    for n in (2, 3):
        for flags, exact in (([], False), (["--deterministic"], True)):
            one = run(f"lora_one_{n}_{len(flags)}", 1, n, flags)
            ranks = run(f"lora_ranks_{n}_{len(flags)}", n, 1, flags)
            if not one or not ranks:
                continue
            diff = worst(ranks[0], one[0])
            print(f"lora, {n} ranks {' '.join(flags)}: vs one process --grad-accum {n}, worst relative "
                  f"difference {diff:.3g}{' (must be 0)' if exact else ''}")
            if len(ranks[0]) != len(one[0]) or diff > (0 if exact else 1e-6):
                failures.append(f"lora at {n} ranks {flags}: differs from one process by {diff:.3g}")
            if exact and ranks[1] != one[1]:
                failures.append(f"lora at {n} ranks --deterministic: the exported adapters are not bit for bit")
        zero0 = run(f"lora_z0_{n}", n, 1, ["--deterministic"])
        for stage in ("1", "2"):
            zero = run(f"lora_z{stage}_{n}", n, 1, ["--deterministic", "--zero", stage])
            if not zero0 or not zero:
                continue
            diff = worst(zero[0], zero0[0])
            print(f"lora, {n} ranks --deterministic: --zero {stage} vs 0, worst relative difference {diff:.3g} "
                  f"(must be 0)")
            if diff != 0 or zero[1] != zero0[1]:
                failures.append(f"lora at {n} ranks: --zero {stage} differs from --zero 0 ({diff:.3g})")
    return failures


def check_zero2(args, folder):
    failures = zero_matches_zero0(args, folder, 2, ("sgd_momentum", "adamw", "lamb"),
                                  (([], False), (["--deterministic"], True),
                                   (["--deterministic", "--bucket-mb", "0.001"], True)))
    # Two micro-batches per rank: each is summed over the ranks before they are added.
    desc = os.path.join(folder, "z2_adamw_True.yaml")
    for n in (2, 3):
        zero0, d0 = train(args, folder, f"z2acc0_{n}", desc, n, 2, ["--deterministic"])
        zero2, d2 = train(args, folder, f"z2acc2_{n}", desc, n, 2, ["--deterministic", "--zero", "2"])
        if zero0.returncode or zero2.returncode:
            failures.append(f"grad-accum 2: exit {zero0.returncode}/{zero2.returncode}: {zero2.stderr[-400:]}")
            continue
        diff = worst(metrics(os.path.join(d2, "m.jsonl")), metrics(os.path.join(d0, "m.jsonl")))
        print(f"adamw clipped, {n} ranks, --grad-accum 2: --zero 2 vs 0, worst relative difference {diff:.3g}")
        if diff > 1e-6:
            failures.append(f"grad-accum 2 at {n} ranks: --zero 2 differs from --zero 0 by {diff:.3g}")
    desc = os.path.join(folder, "z2_adamw_False.yaml")
    failures += zero_checkpoint_resumes(args, folder, 2, desc)
    # Gradient bytes per rank at 1, 2 and 4 ranks, with buckets small beside the model.
    whole = None
    for n in (1, 2, 4):
        for zero in ("0", "2"):
            r, _ = train(args, folder, f"z2_bytes_{n}_{zero}", desc, n, 1,
                         ["--zero", zero, "--bucket-mb", "0.01"], log_level="info")
            lines = [l.split("] ")[-1] for l in (r.stdout + r.stderr).splitlines() if "] gradients:" in l]
            for l in lines:
                print(f"{n} rank(s), --zero {zero}: {l}")
            if r.returncode != 0 or not lines:
                failures.append(f"{n} ranks --zero {zero}: no gradient report: {r.stderr[-300:]}")
                continue
            # "... on this rank ...; ranks 0-3: a, b, c, d bytes" (one process: no list)
            line = lines[0]
            total = ([int(float(v)) for v in line.split("ranks 0-")[1].split(": ", 1)[1].split(" bytes")[0].split(", ")]
                     if n > 1 else [int(line.split("(")[1].split(" bytes")[0])])
            if zero == "0":
                whole = whole or total[0]
                if len(total) != n or set(total) != {whole}:
                    failures.append(f"--zero 0 at {n} ranks keeps {total} gradient bytes, not {whole}")
            elif n > 1 and whole:
                # Each rank keeps its share (near 1/N: the boundaries fall on the norm's 4096-element chunks)
                # and one bucket, which holds at least the largest gradient.
                share = int(line.split("share of ")[1].split(" bytes")[0])
                if len(total) != n or share > whole / n + 2 * 4096 * 4 or total[0] <= share:
                    failures.append(f"--zero 2 at {n} ranks: {total} gradient bytes, rank 0's share {share}, "
                                    f"of {whole}")
    return failures


def rank_pid(rank, mpirun_pid):
    """The pid of the ort_train process that mpirun `mpirun_pid` started as `rank`, or None."""
    return rank_pids(mpirun_pid).get(rank)


def job_command(args, ck, steps, extra=()):
    """2 ranks training the model with Adam on synthetic data, checkpointing into `ck`."""
    return MPIRUN + ["-np", "2", args.ort_train, "--log-level", "warn", "train", "--model",
                     os.path.join(args.model_dir, "model.onnx"), "--config",
                     os.path.join(args.model_dir, "training.yaml"), "--data", "synthetic", "--batch-size", "4",
                     "--optimizer", "adam", "--steps", str(steps), "--threads", "1", "--checkpoint-dir", ck,
                     "--save-every", "200"] + list(extra)


def wait_for_checkpoint(ck, job):
    deadline = time.time() + 30
    while time.time() < deadline and job.poll() is None:
        if os.path.isdir(ck) and any(f.endswith(".ortc") for f in os.listdir(ck)):
            return True
        time.sleep(0.1)
    return False


def running_job(args, folder, name, extra=()):
    """A long 2-rank job that has written a checkpoint, and rank 1's pid; or failures."""
    ck = os.path.join(folder, name)
    job = subprocess.Popen(job_command(args, ck, 100000000, extra), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    if not wait_for_checkpoint(ck, job):
        job.kill()
        return job, ck, None, ["the job wrote no checkpoint within 30 s"]
    pid = rank_pid(1, job.pid)
    if pid is None:
        job.kill()
        return job, ck, None, ["rank 1's process was not found"]
    return job, ck, pid, []


def signal_rank(job, pid, sig, what):
    """Sends `sig` to rank 1; the job must then end, non-zero, within 30 s.
    Returns its output and the failures."""
    started = time.time()
    os.kill(pid, sig)
    try:
        out, _ = job.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        job.kill()
        return "", [f"the job still ran 60 s after rank 1 was {what}"]
    finally:
        if sig == signal.SIGSTOP:  # leave no stopped process behind
            try:
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    took = time.time() - started
    print(out[-800:])
    print(f"job ended {took:.1f} s after rank 1 was {what}, exit code {job.returncode}")
    failures = []
    if job.returncode == 0:
        failures.append(f"the job exited 0 after rank 1 was {what}")
    if took > 30:
        failures.append(f"the job took {took:.0f} s to end")
    return out, failures


def check_kill(args, folder):
    # SIGKILL one rank of a running job: the job must end, non-zero, well
    # within 30 s, and its last checkpoint must resume.
    job, ck, pid, failures = running_job(args, folder, "killed")
    if failures:
        return failures
    _, failures = signal_rank(job, pid, signal.SIGKILL, "killed")
    newest = sorted(f for f in os.listdir(ck) if f.endswith(".ortc"))[-1]
    step = int(newest.split("-")[1].split(".")[0])
    resumed_metrics = os.path.join(folder, "resumed.jsonl")
    r = subprocess.run(job_command(args, ck, step + 3, ["--resume", "--metrics", resumed_metrics]),
                       capture_output=True, text=True, timeout=120)
    resumed = [row["step"] for row in metrics(resumed_metrics)] if r.returncode == 0 else []
    print(f"resumed from {newest}: steps {resumed}")
    if resumed != [step + 1, step + 2, step + 3]:
        failures.append(f"the last checkpoint ({newest}) did not resume: exit {r.returncode} {r.stderr[-400:]}")
    return failures


def check_timeout(args, folder):
    # A rank that stops responding (SIGSTOP) leaves the others in a
    # collective: --comm-timeout must end the job with a message naming the operation.
    job, ck, pid, failures = running_job(args, folder, "stalled", ["--comm-timeout", "3"])
    if failures:
        return failures
    out, failures = signal_rank(job, pid, signal.SIGSTOP, "stopped")
    if "did not finish within 3 s" not in out:
        failures.append("no message naming the collective that timed out")
    return failures


def failing_job(cmd, hang, why, named):
    """Runs a job that must fail fast: within 30 s, not 0, its output
    containing every string in `named`. `hang` says what a job still running
    after 100 s means; `why` why exit 0 is wrong."""
    started = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=100)
    except subprocess.TimeoutExpired:
        return [f"{hang} for 100 s"]
    took = time.time() - started
    text = r.stdout + r.stderr
    print(text[-1500:])
    failures = []
    if r.returncode == 0:
        failures.append(f"the job exited 0 although {why}")
    for s in named:
        if s not in text:
            failures.append(f"the output does not name '{s}'")
    if took > 30:
        failures.append(f"the job took {took:.0f} s to end")
    print(f"job ended in {took:.1f} s with exit code {r.returncode}")
    return failures


def check_error(args, folder):
    # Batch directories 0..3; micro-batch 1 (rank 1's first) has a corrupt file.
    src = os.path.join(args.model_dir, "train_batches", "0")
    data = os.path.join(folder, "data")
    for i in range(4):
        shutil.copytree(src, os.path.join(data, str(i)))
    victim = os.path.join(data, "1", sorted(os.listdir(os.path.join(data, "1")))[0])
    with open(victim, "wb") as f:
        f.write(b"\x00not a tensor")
    cmd = MPIRUN + ["-np", "2", args.ort_train, "--log-level", "warn", "train", "--model",
                    os.path.join(args.model_dir, "model.onnx"), "--config",
                    os.path.join(args.model_dir, "training.yaml"), "--data", data, "--steps", "3", "--threads", "1",
                    "--optimizer", "sgd"]
    return failing_job(cmd, "a failing rank left the job hanging", "rank 1 failed", ["rank 1"])


def check_mismatch(args, folder):
    # Rank 1 started with other flags (mpirun's MPMD form: one command per
    # rank): the ranks would make different collectives and wait for each
    # other until --comm-timeout (120 s here). They compare their settings
    # with rank 0's first and stop at once, rank 1 naming what differs.
    def rank_cmd(accum, data="synthetic", steps=3):
        return ["-np", "1", args.ort_train, "--log-level", "warn", "train", "--model",
                os.path.join(args.model_dir, "model.onnx"), "--config", os.path.join(args.model_dir, "training.yaml"),
                "--data", data, "--batch-size", "4", "--steps", str(steps), "--threads", "1", "--optimizer", "sgd",
                "--comm-timeout", "120", "--grad-accum", str(accum)]
    failures = failing_job(MPIRUN + rank_cmd(1) + [":"] + rank_cmd(2),
                           "ranks started with different flags left the job hanging",
                           "its ranks were given different flags",
                           ["other settings than rank 0", "grad_accum: rank 0 has '2', rank 1 has '4'"])
    # Rank 1 reads another set of batches (3 folders, not 4): caught the same way.
    sets = {}
    for n in (4, 3):
        sets[n] = os.path.join(folder, f"batches_{n}")
        for i in range(n):
            shutil.copytree(os.path.join(args.model_dir, "train_batches", "0"), os.path.join(sets[n], str(i)))
    failures += failing_job(MPIRUN + rank_cmd(1, sets[4]) + [":"] + rank_cmd(1, sets[3]),
                            "ranks reading different data left the job hanging", "its ranks read different data",
                            ["other settings than rank 0", "data: rank 0 has '4 micro-batches per epoch"])
    # --checkpoint-dir on rank 0 only, with ZeRO (every rank gathers a
    # checkpoint's state): the first checkpoint waited for rank 1 until
    # --comm-timeout. Refused before the first step.
    ck = os.path.join(folder, "ck_rank0")
    failures += failing_job(MPIRUN + rank_cmd(1) + ["--zero", "1", "--checkpoint-dir", ck, ":"] + rank_cmd(1) +
                            ["--zero", "1"],
                            "a checkpoint directory on rank 0 only left the job hanging",
                            "only rank 0 was given --checkpoint-dir",
                            ["checkpoint_dir given: rank 0 has 'yes', rank 1 has 'no'"])
    # Ranks resuming from different checkpoints (node-local folders, one at
    # step 4, one at step 2) would train a mixed state: refused before any step.
    one = os.path.join(folder, "ck_one")
    # One process with 2 micro-batches per step: the micro-batches per step of 2 ranks with 1 each.
    r = subprocess.run(rank_cmd(2, steps=4)[2:] + ["--checkpoint-dir", one, "--save-every", "2", "--keep", "5"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return failures + [f"the run making checkpoints failed: {r.stderr[-1000:]}"]
    dirs = [os.path.join(folder, f"ck_r{i}") for i in (0, 1)]
    for d, step in zip(dirs, (4, 2)):
        os.makedirs(d)
        name = f"ckpt-{step:08d}.ortc"
        shutil.copy(os.path.join(one, name), os.path.join(d, name))
    failures += failing_job(
        MPIRUN + rank_cmd(1, steps=6) + ["--resume", "--checkpoint-dir", dirs[0], ":"] + rank_cmd(1, steps=6) +
        ["--resume", "--checkpoint-dir", dirs[1]],
        "ranks resuming from different checkpoints left the job hanging",
        "its ranks resumed from different checkpoints",
        ["resumed from: rank 0 has 'ckpt-00000004.ortc (step 4", "rank 1 has 'ckpt-00000002.ortc (step 2"])
    # The same name, step and data position, other weights (another run's
    # file): the content is compared too (issue 52, a further round).
    other = os.path.join(folder, "ck_other")
    r = subprocess.run(rank_cmd(2, steps=2)[2:] + ["--lr", "0.05", "--checkpoint-dir", other], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        return failures + [f"the run making the other checkpoint failed: {r.stderr[-1000:]}"]
    same_name = [os.path.join(folder, f"ck_same{i}") for i in (0, 1)]
    for d, source in zip(same_name, (one, other)):
        os.makedirs(d)
        shutil.copy(os.path.join(source, "ckpt-00000002.ortc"), os.path.join(d, "ckpt-00000002.ortc"))
    failures += failing_job(
        MPIRUN + rank_cmd(1, steps=4) + ["--resume", "--checkpoint-dir", same_name[0], ":"] + rank_cmd(1, steps=4) +
        ["--resume", "--checkpoint-dir", same_name[1]],
        "ranks resuming from same-named checkpoints of other weights left the job hanging",
        "its ranks resumed from checkpoints of one name and other contents",
        ["resumed from: rank 0 has 'ckpt-00000002.ortc (step 2, micro-batch 4, hash"])
    # A number that shapes the trajectory but no collective (another seed)
    # trained apart with exit 0; the optimizer's and the schedule's numbers
    # are compared the same way.
    failures += failing_job(MPIRUN + rank_cmd(1) + [":"] + rank_cmd(1) + ["--seed", "7"],
                            "ranks given other seeds left the job hanging", "only rank 1 was given --seed 7",
                            ["seed: rank 0 has '0', rank 1 has '7'"])
    return failures


def check_kernel_choices(args, folder):
    # Ranks that would run different kernels: each reads its own
    # --kernel-choices file (mpirun's MPMD form), rank 0's forcing the gemm
    # attention and rank 1's the flash one. Rank 0's choices hold on every
    # rank, so both write the same file. Then without files: rank 0 times the
    # candidates, and both ranks write its choices.
    bert = os.path.join(os.path.dirname(os.path.abspath(args.model_dir)), "bert")

    def rank_cmd(choices):
        return ["-np", "1", args.ort_train, "--log-level", "warn", "train", "--model",
                os.path.join(bert, "model.onnx"), "--config", os.path.join(bert, "training.yaml"), "--data",
                os.path.join(bert, "train_batches"), "--optimizer", "adam", "--lr", "0.001", "--steps", "2",
                "--threads", "1", "--kernel-choices", choices]

    failures = []
    for forced in (True, False):
        files = [os.path.join(folder, f"{'forced' if forced else 'timed'}_rank{r}.json") for r in (0, 1)]
        if forced:
            for path, name in zip(files, ("gemm", "flash")):
                with open(path, "w") as f:
                    json.dump({"device": "cpu", "choices": {"com.ort_train.Attention": name,
                                                            "com.ort_train.AttentionGrad": name}}, f)
        r = subprocess.run(MPIRUN + rank_cmd(files[0]) + [":"] + rank_cmd(files[1]), capture_output=True, text=True,
                           timeout=600)
        if r.returncode != 0:
            failures.append(f"2 ranks with kernel choices files failed ({r.returncode}): {r.stderr[-2000:]}")
            continue
        held = []
        for path in files:
            with open(path) as f:
                held.append(json.load(f)["choices"])
        if held[0] != held[1]:
            failures.append(f"the ranks wrote different kernel choices: {held[0]} and {held[1]}")
        attention = [v for k, v in held[1].items() if k.startswith("com.ort_train.Attention|") or
                     k == "com.ort_train.Attention"]
        if not attention:
            failures.append(f"no Attention choice was written: {held[1]}")
        if forced and set(attention) != {"gemm"}:
            failures.append(f"rank 1 did not take rank 0's forced gemm attention: {held[1]}")
    return failures


def check_bf16(args, folder):
    base = open(os.path.join(args.model_dir, "training.yaml")).read()
    failures = []
    for opt in ("adam", "sgd_momentum"):
        desc = os.path.join(folder, f"{opt}.yaml")
        with open(desc, "w") as f:
            f.write(base + f"\noptimizer: {OPTIMIZERS[opt]}\n")
        for n in (2, 3):
            one, one_dir = train(args, folder, f"{opt}_{n}_one", desc, 1, n)
            fp32, fp32_dir = train(args, folder, f"{opt}_{n}_fp32", desc, n, 1)
            for flags in ([], ["--bucket-mb", "0.001"], ["--deterministic"]):
                label = f"{opt}, {n} ranks, --allreduce-dtype bf16 {' '.join(flags)}"
                many, many_dir = train(args, folder, f"{opt}_{n}_bf16{len(flags)}{flags[:1]}", desc, n, 1,
                                       ["--allreduce-dtype", "bf16"] + flags)
                if one.returncode != 0 or fp32.returncode != 0 or many.returncode != 0:
                    failures.append(f"{label}: exit {one.returncode}/{fp32.returncode}/{many.returncode}: "
                                    f"{many.stderr[-500:]}")
                    continue
                a, b = metrics(os.path.join(one_dir, "m.jsonl")), metrics(os.path.join(many_dir, "m.jsonl"))
                c = metrics(os.path.join(fp32_dir, "m.jsonl"))
                diff, rounded = worst(b, a), worst(b, c)
                if len(a) != len(b) or diff > 1e-2:
                    failures.append(f"{label}: differs from one process by {diff:.3g} relative")
                if rounded == 0:
                    failures.append(f"{label}: equals the float32 reduction bit for bit: nothing was rounded")
                print(f"{label}: worst relative difference {diff:.3g} from one process, {rounded:.3g} from the "
                      f"float32 reduction")
    zero, _ = train(args, folder, "bf16_zero", os.path.join(folder, "adam.yaml"), 2, 1,
                    ["--allreduce-dtype", "bf16", "--zero", "1"])
    if zero.returncode == 0 or "--allreduce-dtype bf16 with --zero 1" not in zero.stderr:
        failures.append(f"--zero 1 with bf16 was not refused: exit {zero.returncode}: {zero.stderr[-300:]}")
    return failures


def check_epochs(args, folder):
    """--epochs counts passes over the data at any world size: N ranks with
    --grad-accum 1 take the steps of one process with --grad-accum N, and the
    counts that follow from the steps (a linear schedule's total, --eval-every,
    --save-every) agree."""
    base = open(os.path.join(args.model_dir, "training.yaml")).read()
    desc = os.path.join(folder, "epochs.yaml")
    with open(desc, "w") as f:
        f.write(base + "\noptimizer: {name: Adam, lr: 0.01}\nschedule: {type: linear, warmup_steps: 2}\n")
    data = os.path.join(folder, "batches")  # 12 micro-batches a pass
    for i in range(12):
        shutil.copytree(os.path.join(args.model_dir, "train_batches", "0"), os.path.join(data, f"{i:02d}"))
    failures = []
    for n in (2, 3):
        want = -(-2 * 12 // n)  # two passes of 12 micro-batches, n a step
        got = {}
        for label, ranks, accum in (("one", 1, n), ("many", n, 1)):
            out = os.path.join(folder, f"epochs_{n}_{label}")
            os.makedirs(out)
            cmd = ([] if ranks == 1 else MPIRUN + ["-np", str(ranks)]) + [
                args.ort_train, "--log-level", "info", "train", "--model", os.path.join(args.model_dir, "model.onnx"),
                "--config", desc, "--data", data, "--epochs", "2", "--threads", "1", "--grad-accum", str(accum),
                "--metrics", os.path.join(out, "m.jsonl"), "--eval-data", data, "--eval-every", "4",
                "--checkpoint-dir", os.path.join(out, "ck"), "--save-every", "4", "--keep", "100"]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                failures.append(f"{n} ranks, {label}: exit {r.returncode}: {r.stderr[-500:]}")
                continue
            rows = metrics(os.path.join(out, "m.jsonl"))
            got[label] = {
                "steps": [row["step"] for row in rows if "loss" in row],
                "lr": [row["lr"] for row in rows if "loss" in row],
                "evals": [row["step"] for row in rows if "eval_loss" in row],
                "checkpoints": sorted(f for f in os.listdir(os.path.join(out, "ck")) if f.endswith(".ortc")),
                "logged": f"{want} steps x {accum} micro-batches" in r.stdout + r.stderr,
            }
        if len(got) != 2:
            continue
        one, many = got["one"], got["many"]
        label = f"--epochs 2 at {n} ranks"
        if len(one["steps"]) != want or len(many["steps"]) != want:
            failures.append(f"{label}: {len(many['steps'])} steps at {n} ranks, {len(one['steps'])} on one process "
                            f"with --grad-accum {n}; {want} make two passes")
        for key in ("lr", "evals", "checkpoints"):
            if one[key] != many[key]:
                failures.append(f"{label}: {key} differ: one process {one[key]}, {n} ranks {many[key]}")
        if not (one["logged"] and many["logged"]):
            failures.append(f"{label}: the log does not say '{want} steps'")
        print(f"{label}: {len(many['steps'])} steps (one process with --grad-accum {n}: {len(one['steps'])}), "
              f"evaluations at {many['evals']}, {len(many['checkpoints'])} checkpoints, final lr {many['lr'][-1:]}")
    return failures


def check_tcp(args, folder):
    # Ranks on different nodes talk over the network, not shared memory: Open
    # MPI's TCP transport over loopback only (no other address is used here)
    # must give one process's trajectory, bit for bit with --deterministic.
    desc = os.path.join(folder, "adam.yaml")
    with open(desc, "w") as f:
        f.write(open(os.path.join(args.model_dir, "training.yaml")).read() + "\noptimizer: {name: Adam, lr: 0.01}\n")
    tcp = MPIRUN + ["--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]
    failures = []
    for n in (2, 3):
        one, one_dir = train(args, folder, f"tcp_one_{n}", desc, 1, n, ["--deterministic"], steps=6)
        many, many_dir = train(args, folder, f"tcp_many_{n}", desc, n, 1, ["--deterministic"],
                               steps=6, launcher=tcp)
        if one.returncode != 0 or many.returncode != 0:
            failures.append(f"{n} ranks over TCP: exit {one.returncode}/{many.returncode}: {many.stderr[-600:]}")
            continue
        a, b = metrics(os.path.join(one_dir, "m.jsonl")), metrics(os.path.join(many_dir, "m.jsonl"))
        diff = worst(b, a)
        print(f"{n} ranks over TCP on lo: {len(b)} steps, worst relative difference {diff:.3g} (must be 0)")
        if len(a) != len(b) or diff != 0:
            failures.append(f"{n} ranks over TCP differ from one process by {diff:.3g}")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--check", choices=["equal", "error", "resume", "kill", "timeout", "zero", "zero2", "bf16", "epochs",
                                        "mismatch", "tcp", "shards", "kernel_choices", "lora"],
                    default="equal")
    args = ap.parse_args()
    missing = mpi_missing(args.ort_train)
    if missing:
        print(f"SKIPPED: {missing}")
        return 77
    with tempfile.TemporaryDirectory() as folder:
        checks = {"equal": check_equal, "error": check_error, "resume": check_resume, "kill": check_kill,
                  "epochs": check_epochs,
                  "timeout": check_timeout, "zero": check_zero, "zero2": check_zero2, "bf16": check_bf16, "mismatch": check_mismatch,
                  "tcp": check_tcp, "shards": check_shards, "kernel_choices": check_kernel_choices,
                  "lora": check_lora}
        failures = checks[args.check](args, folder)
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
