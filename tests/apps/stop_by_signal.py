#!/usr/bin/env python3
"""A scheduler's stop signal ends a training run cleanly (CTest: apps.stop_signal_checkpoints_and_resumes,
distributed.stop_signal_stops_every_rank_at_one_step).

  stop_by_signal.py --ort-train build/ort_train --model-dir tests/models/mlp --ranks 1|2

A long run is signalled once it has logged some steps (as Slurm signals a job
at its time limit, on preemption or scancel). It must, within 30 s:
- exit 75 (stopped, resumable), having written the checkpoint of the step it
  reached and its metrics file up to that step;
- resume with --resume to the losses and gradient norms of a run that was
  never stopped, bit for bit.
Without --checkpoint-dir it exits 128 + the signal, saying that nothing was saved.

--ranks 1: SIGTERM, and SIGINT (Ctrl-C) without a checkpoint folder.
--ranks 2: under mpirun, SIGUSR1 to mpirun (which forwards it to every rank),
SIGTERM to each rank (as slurmstepd signals a job's tasks) and to one rank
only, SIGUSR1 to the last rank only; every rank stops after the same step,
and rank 0's log names the signal sent. Exits 77 (CTest's skip code) without mpirun or
the MPI plugin. A second signal ending the process at once is a unit test
(apps.stop_signals_*). Standard library only.
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "distributed"))
from launch import MPIRUN, mpi_missing, rank_pids  # noqa: E402


def command(args, ranks, steps, extra):
    m = args.model_dir
    return (MPIRUN + ["-np", str(ranks)] if ranks > 1 else []) + [
        args.ort_train, "--log-level", "info", "train", "--model", os.path.join(m, "model.onnx"), "--config",
        os.path.join(m, "training.yaml"), "--data", "synthetic", "--batch-size", "4", "--optimizer", "adam",
        "--steps", str(steps), "--threads", "1", "--device", "cpu"] + list(extra)


def rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def stopped_run(args, folder, name, ranks, sig, to_ranks=0, checkpoint=True, last=False):
    """Starts a long run, signals it (or `to_ranks` of its ranks, the last ones
    with `last`) after 20 logged steps; returns (exit code,
    seconds from the signal to the exit, output, metrics path, checkpoint dir)."""
    ck = os.path.join(folder, name + "_ck")
    m = os.path.join(folder, name + ".jsonl")
    extra = ["--metrics", m] + (["--checkpoint-dir", ck, "--save-every", "1000000"] if checkpoint else [])
    job = subprocess.Popen(command(args, ranks, 100000000, extra), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    deadline = time.time() + 60
    while time.time() < deadline and job.poll() is None:
        try:
            with open(m + ".partial") as f:
                if sum(1 for _ in f) >= 20:
                    break
        except OSError:
            pass
        time.sleep(0.05)
    if job.poll() is not None:
        return job.returncode, 0.0, job.communicate()[0], m, ck
    started = time.time()
    pids = [pid for _, pid in sorted(rank_pids(job.pid).items())]
    targets = (pids[-to_ranks:] if last else pids[:to_ranks]) if to_ranks else [job.pid]
    for pid in targets:
        os.kill(pid, sig)
    try:
        out, _ = job.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        job.kill()
        return None, 60.0, job.communicate()[0], m, ck
    return job.returncode, time.time() - started, out, m, ck


def check_stop_and_resume(args, folder, name, ranks, sig, to_ranks=0, last=False):
    code, took, out, m, ck = stopped_run(args, folder, name, ranks, sig, to_ranks, last=last)
    label = f"{name}: {signal.Signals(sig).name}{f' to {to_ranks} of the ranks' if to_ranks else ''}, {ranks} rank(s)"
    print(f"{label}: exit {code} {took:.1f} s after the signal")
    # mpirun reports SIGTERM's end of a job as 1 whatever the ranks returned; it passes
    # on the ranks' 75 when the signal went to them (or was SIGUSR1, which it forwards).
    if code != 75:
        return [f"{label}: exit {code}, not 75: {out[-1500:]}"]
    failures = []
    if took > 30:
        failures.append(f"{label}: took {took:.0f} s to stop")
    # Rank 0 logs, and names the signal some rank received, even one that reached only another rank.
    if f"stopped by {signal.Signals(sig).name}" not in out or "--resume" not in out:
        failures.append(f"{label}: no line saying it stopped by {signal.Signals(sig).name} and how to resume: "
                        f"{out[-800:]}")
    kept = sorted(f for f in os.listdir(ck) if f.endswith(".ortc"))
    got = rows(m)  # the metrics file itself, finished: not a .partial
    step = got[-1]["step"] if got else 0
    if kept != [f"ckpt-{step:08d}.ortc"] or [r["step"] for r in got] != list(range(1, step + 1)):
        failures.append(f"{label}: checkpoints {kept} and metrics steps 1..{step} do not match")
        return failures
    total = step + 3
    resumed = subprocess.run(command(args, ranks, total, ["--metrics", m, "--checkpoint-dir", ck, "--resume"]),
                             capture_output=True, text=True, timeout=300)
    straight_m = os.path.join(folder, name + "_straight.jsonl")
    # The kernels the stopped run chose by timing (kept in its checkpoint folder, which
    # --resume reads): the run never stopped makes the same choices, not its own.
    # (None were made when nothing is chosen by timing: then the folder has no file.)
    kept_choices = os.path.join(ck, "kernel_choices.json")
    choices = []
    if os.path.exists(kept_choices):
        choices = ["--kernel-choices", os.path.join(folder, name + "_choices.json")]
        shutil.copyfile(kept_choices, choices[1])
    straight = subprocess.run(command(args, ranks, total, ["--metrics", straight_m] + choices),
                              capture_output=True, text=True, timeout=300)
    if resumed.returncode != 0 or straight.returncode != 0:
        failures.append(f"{label}: resume/straight exit {resumed.returncode}/{straight.returncode}: "
                        f"{resumed.stdout[-600:]}{resumed.stderr[-600:]}")
        return failures
    a, b = rows(m), rows(straight_m)
    same = [(r["step"], r["loss"], r["grad_norm"]) for r in a] == [(r["step"], r["loss"], r["grad_norm"]) for r in b]
    print(f"{label}: stopped after step {step}, resumed to {total}: bit for bit with a run never stopped: {same}")
    if not same:
        failures.append(f"{label}: the resumed run differs from the run that was never stopped")
    return failures


def check_nothing_saved(args, folder):
    code, took, out, _, _ = stopped_run(args, folder, "no_ck", 1, signal.SIGINT, checkpoint=False)
    print(f"SIGINT without --checkpoint-dir: exit {code} {took:.1f} s after the signal")
    failures = []
    if code != 128 + signal.SIGINT:
        failures.append(f"SIGINT without --checkpoint-dir: exit {code}, not {128 + signal.SIGINT}: {out[-800:]}")
    if "nothing was saved" not in out:
        failures.append(f"SIGINT without --checkpoint-dir: no line saying nothing was saved: {out[-800:]}")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--ranks", type=int, choices=[1, 2], default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if args.ranks == 1:
            failures = check_stop_and_resume(args, folder, "term", 1, signal.SIGTERM)
            failures += check_nothing_saved(args, folder)
        else:
            missing = mpi_missing(args.ort_train)
            if missing:
                print(f"SKIPPED: {missing}")
                return 77
            failures = check_stop_and_resume(args, folder, "usr1", 2, signal.SIGUSR1)
            failures += check_stop_and_resume(args, folder, "term_ranks", 2, signal.SIGTERM, to_ranks=2)
            # One rank signalled: the other learns it in the step's agreement and stops after the same step.
            failures += check_stop_and_resume(args, folder, "term_one_rank", 2, signal.SIGTERM, to_ranks=1)
            # Slurm's SIGUSR1 reaching rank 1 before rank 0: rank 0 still says SIGUSR1 (it said SIGTERM).
            failures += check_stop_and_resume(args, folder, "usr1_last_rank", 2, signal.SIGUSR1, to_ranks=1, last=True)
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
