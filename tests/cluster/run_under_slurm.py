#!/usr/bin/env python3
"""The cluster example under a real Slurm (CTest: cluster.sbatch_example_runs_under_slurm,
cluster.a_signalled_job_requeues_and_resumes).

  run_under_slurm.py --ort-train build/ort_train --source . --check example|requeue

Starts a private one-node Slurm (tools/slurm_local.sh: munged, slurmctld,
slurmd on ports of their own) and submits examples/cluster/ort_train_cpu.sbatch,
which runs 2 ranks through `srun --mpi=pmix`.

example: `cmake --install` into a prefix, then the job, which finds the
installed ort_train on PATH, completes; its 2 ranks' losses equal one process with
--grad-accum 2 bit for bit (--deterministic: kernel choices pinned); the
trained model is exported. A rank started through `srun --mpi=pmi2`, which
this Open MPI cannot speak, is refused with one message naming pmix.

requeue: the job runs with a 2-minute time limit and --signal=USR1@45. Slurm
signals it before the limit; its ranks checkpoint and exit 75, the script
requeues it, and the next start resumes (and is requeued again if it needs
to) until it finishes. Its metrics run 1..N once each, and up to 50 steps
past the first stop they equal one process that was never stopped, bit for
bit (the one process is stopped there: its schedule still reads N steps). (Slurm holds a requeued job for about
two minutes before it may start again; the test lets it start at once.)

Exits 77 (CTest's skip code), saying why, where Slurm is not installed
(tools/install_deps.sh --tests), this is not root (slurmd starts jobs as
root), its daemons do not start, or the build has no MPI plugin. Standard
library only.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "distributed"))
from launch import mpi_missing  # noqa: E402

STEPS = 200
# The fewest steps of the requeue job; requeue_steps() raises it on a fast
# machine (6000 steps took 100 s here on 2026-11-25, and 51 s on 2026-11-27's
# faster one, which finished before Slurm signalled it).
REQUEUE_STEPS = 6000


def rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def trajectory(path):
    return [(r["step"], r["loss"], r["grad_norm"]) for r in rows(path) if "loss" in r]  # not the held-out rows


def free_port_pair():
    """A port P with P and P + 1 free (slurmctld's and slurmd's), from the
    kernel's choice of a free port: ports of this run's own, so two runs of
    the suite, the MPI tests' sockets or a real Slurm do not meet."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("", 0))
            port = a.getsockname()[1]
            if port + 1 > 65535:
                continue
            with socket.socket() as b:
                try:
                    b.bind(("", port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError("no two adjacent free ports")


class Slurm:
    def __init__(self, source, folder):
        self.script = os.path.join(source, "tools", "slurm_local.sh")
        self.folder = os.path.join(folder, "slurm")
        self.env = dict(os.environ)
        self.env.pop("SLURM_CONF", None)  # set by start(), to this Slurm's own configuration

    def start(self):
        """Starts the daemons on two free ports; a second try, on other ports,
        when the first does not come up (a port taken between the check and
        the bind, or a start slowed past its limit by a loaded machine)."""
        error = None
        for attempt in range(2):
            self.env["ORT_TRAIN_SLURM_PORT"] = str(free_port_pair())
            try:
                r = subprocess.run(["bash", self.script, "start", self.folder], capture_output=True, text=True,
                                   env=self.env, timeout=90)
                if r.returncode == 0:
                    self.env["SLURM_CONF"] = os.path.join(self.folder, "slurm.conf")
                    return self
                error = f"{r.stdout}{r.stderr}"
            except subprocess.TimeoutExpired:
                error = "tools/slurm_local.sh start did not return within 90 s; " + self.logs()
            print(f"Slurm did not start (try {attempt + 1} of 2): {error}", flush=True)
            subprocess.run(["bash", self.script, "stop", self.folder], env=self.env, capture_output=True)
            shutil.rmtree(self.folder, ignore_errors=True)
        raise RuntimeError(error)

    def logs(self):
        text = []
        for name in ("munged.log", "slurmctld.log", "slurmd.log"):
            try:
                with open(os.path.join(self.folder, "log", name)) as f:
                    text.append(f"--- {name}\n" + "".join(f.readlines()[-20:]))
            except OSError:
                pass
        return "\n".join(text) or "no daemon logs"

    def stop(self):
        if "SLURM_CONF" in self.env:  # only this private Slurm's jobs, never a real one's
            subprocess.run(["scancel", "--full", "--user", "root"], env=self.env, capture_output=True)
            time.sleep(1)
        subprocess.run(["bash", self.script, "stop", self.folder], env=self.env, capture_output=True)

    def run(self, cmd, **kw):
        return subprocess.run(cmd, env=self.env, capture_output=True, text=True, **kw)

    def job_field(self, job, field):
        out = self.run(["scontrol", "show", "job", job]).stdout
        m = re.search(rf"\b{field}=(\S+)", out)
        return m.group(1) if m else None


def submit(slurm, args, out, wait, steps=STEPS, sbatch_options=(), prefix=None):
    """Submits the CPU batch script. With `prefix` (a `cmake --install` prefix)
    its bin/ leads PATH and the script finds ort_train there, as a cluster
    user's job would; otherwise ORT_TRAIN names the build's program."""
    env_run = dict(slurm.env, ORT_TRAIN_OUT=out)
    if prefix:
        env_run["PATH"] = os.path.join(prefix, "bin") + os.pathsep + env_run.get("PATH", "")
        env_run.pop("ORT_TRAIN", None)
    else:
        env_run["ORT_TRAIN"] = args.ort_train
    cmd = ["sbatch", "--parsable", "-o", os.path.join(out, "job.log")] + (["--wait"] if wait else []) + list(
        sbatch_options) + [os.path.join(args.source, "examples", "cluster", "ort_train_cpu.sbatch"),
                           "--steps", str(steps), "--deterministic", "--log-every", "100"]
    os.makedirs(out, exist_ok=True)
    r = subprocess.run(cmd, env=env_run, capture_output=True, text=True, cwd=args.source, timeout=600)
    return r, r.stdout.strip().split(";")[0]


def log_of(out):
    try:
        with open(os.path.join(out, "job.log")) as f:
            return f.read()
    except OSError:
        return ""


def one_process(args, folder, out, steps, until=None):
    """The trajectory of one process with --grad-accum 2 on the job's data: the
    micro-batches of the job's 2 ranks in the same order (--deterministic pins
    kernel choices and sums in rank order). With `until`, the run (still of
    `steps` steps, whose number the schedule reads) is stopped by SIGTERM once
    it has logged that step, and its trajectory up to where it stopped is returned."""
    one = os.path.join(folder, f"one_{steps}.jsonl")
    cmd = [args.ort_train, "--log-level", "warn", "--config",
           os.path.join(args.source, "examples", "char_lm", "char_lm.yaml"), "--data",
           os.path.join(out, "train.npz"), "--batch-size", "16", "--grad-accum", "2", "--threads", "1",
           "--steps", str(steps), "--deterministic", "--metrics", one]
    ref = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while until and ref.poll() is None:
        try:
            with open(one + ".partial") as f:
                if sum(1 for _ in f) >= until:
                    ref.send_signal(signal.SIGTERM)
                    break
        except OSError:
            pass
        time.sleep(0.2)
    _, err = ref.communicate(timeout=1800)
    if ref.returncode not in (0, 128 + signal.SIGTERM):
        print(f"one process: exit {ref.returncode}: {err[-800:]}")
        return []
    return trajectory(one)


def check_example(args, slurm, folder):
    out = os.path.join(folder, "example")
    # Installed as the cluster README says, and run from the prefix.
    prefix = os.path.join(folder, "prefix")
    inst = subprocess.run(["cmake", "--install", os.path.dirname(args.ort_train), "--prefix", prefix],
                          capture_output=True, text=True)
    if inst.returncode != 0:
        return [f"cmake --install: exit {inst.returncode}: {inst.stdout[-400:]}{inst.stderr[-400:]}"]
    r, job = submit(slurm, args, out, wait=True, prefix=prefix)
    log = log_of(out)
    print(log[-1500:])
    if r.returncode != 0:
        return [f"sbatch --wait: exit {r.returncode}: {r.stderr[-800:]}"]
    failures = []
    if "2 ranks (MPI" not in log:
        failures.append("the job did not train on 2 ranks")
    if f"{prefix}/bin/ort_train" not in log:
        failures.append("the job did not run the installed program")
    if not os.path.exists(os.path.join(out, "trained.onnx")):
        failures.append("no trained model was exported")
    a, b = trajectory(os.path.join(out, "metrics.jsonl")), one_process(args, folder, out, STEPS)
    print(f"srun, 2 ranks: {len(a)} steps; one process with --grad-accum 2: {len(b)} steps; equal: {a == b}")
    if len(a) != STEPS or a != b:
        failures.append("the 2 ranks under srun do not equal one process with --grad-accum 2")
    # srun --mpi=pmi2: one message that names pmix, not a page from MPI_Init per rank.
    m = os.path.join(args.source, "tests", "models", "mlp")
    pmi2 = slurm.run(["srun", "-n2", "--mpi=pmi2", args.ort_train, "--model", os.path.join(m, "model.onnx"), "--config",
                      os.path.join(m, "training.yaml"), "--data", "synthetic", "--steps", "1"], timeout=120)
    said = pmi2.stdout + pmi2.stderr
    print(f"srun --mpi=pmi2: exit {pmi2.returncode}: {said.strip()[-400:]}")
    if pmi2.returncode == 0 or "--mpi=pmix" not in said or "MPI_Init" in said:
        failures.append(f"srun --mpi=pmi2 was not refused with one message naming pmix: {said[-600:]}")
    return failures


def requeue_steps(args):
    """Steps that keep the requeue job training about 110 s on this machine, so
    Slurm's signal (at most 75 s after the start) always comes mid-run. Timed
    on one process with --grad-accum 2 (the job's two micro-batches a step on
    one core): the difference of a 100- and a 400-step run, without startup.
    The job's 2 ranks take about 0.7 of that per step."""
    def seconds(steps):
        started = time.time()
        subprocess.run([args.ort_train, "--log-level", "warn", "--config",
                        os.path.join(args.source, "examples", "char_lm", "char_lm.yaml"), "--data", "synthetic",
                        "--batch-size", "16", "--grad-accum", "2", "--threads", "1", "--steps", str(steps),
                        "--deterministic"], capture_output=True, timeout=600)
        return time.time() - started
    per_step = max((seconds(400) - seconds(100)) / 300, 1e-4)
    steps = max(REQUEUE_STEPS, int(110 / (0.7 * per_step)) // 100 * 100)
    print(f"one process: {per_step * 1000:.1f} ms a step: the requeue job trains {steps} steps")
    return steps


def check_requeue(args, slurm, folder):
    # A time limit of 2 minutes and the signal 45 s before it: Slurm sends it at
    # its first periodic check (every 30 s) within 75 s of the limit, so a job
    # that trains longer than 75 s is always signalled mid-run.
    out = os.path.join(folder, "requeue")
    total = requeue_steps(args)
    r, job = submit(slurm, args, out, wait=False, steps=total,
                    sbatch_options=["--time=2", "--signal=USR1@45"])
    if r.returncode != 0:
        return [f"sbatch: exit {r.returncode}: {r.stderr[-800:]}"]
    started = time.time()
    state, held_since = None, None
    while time.time() < started + 1200:
        state = slurm.job_field(job, "JobState")
        held = state == "PENDING" and slurm.job_field(job, "Reason") == "BeginTime"
        held_since = (held_since or time.time()) if held else None
        # Slurm's requeue hold is about two minutes; 10 s of it lets slurmd
        # finish tearing down the last start's step (PMIx's files are named by
        # job and step, and a step launched onto them failed here twice).
        if held and time.time() - held_since > 10:
            slurm.run(["scontrol", "update", f"JobId={job}", "StartTime=now"])
        if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"):
            # A requeue passes through such a state (the batch step is killed
            # as the job goes back to pending): final only if it stays.
            time.sleep(5)
            if slurm.job_field(job, "JobState") == state:
                break
        time.sleep(0.5)
    log = log_of(out)
    print("\n".join(line for line in log.splitlines() if "kernel choice" not in line)[-3000:])
    restarts = slurm.job_field(job, "Restarts")
    print(f"job {job}: {state} after {time.time() - started:.0f} s, restarts {restarts}")
    if state != "COMPLETED":  # what Slurm said of it
        print(slurm.run(["scontrol", "show", "job", job]).stdout)
        for daemon in ("slurmctld", "slurmd"):
            with open(os.path.join(slurm.folder, "log", daemon + ".log")) as f:
                print(f"--- {daemon}.log, lines naming job {job}:")
                print("".join(line for line in f if job in line)[-3000:])
    failures = []
    if state != "COMPLETED" or not restarts or int(restarts) < 1:
        failures.append(f"the job ended {state} after {restarts} restarts, not COMPLETED after at least 1 "
                        "(a job faster than 75 s is never signalled: see requeue_steps)")
    for want in ("stopped by SIGUSR1", "Exited with exit code 75", "requeueing job", "resumed from"):
        if want not in log:
            failures.append(f"the job's log does not say '{want}'")
    got = trajectory(os.path.join(out, "metrics.jsonl")) if state == "COMPLETED" else []
    if [s for s, _, _ in got] != list(range(1, total + 1)):
        failures.append(f"the metrics do not hold steps 1..{total} once each")
        return failures
    # One process never stopped, as far as 50 steps past the first stop: the
    # steps before it, the resume and the steps after it, bit for bit.
    stops = [int(m) for m in re.findall(r"stopped by SIGUSR1 after step (\d+)", log)]
    if not stops:
        return failures
    want = one_process(args, folder, out, total, until=stops[0] + 50)
    same = len(want) > stops[0] and got[:len(want)] == want
    print(f"the requeued job against one process never stopped, steps 1..{len(want)} (first stop after step "
          f"{stops[0]}): equal {same}")
    if not same:
        failures.append("the requeued job's losses differ from a run that was never stopped")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--check", choices=["example", "requeue"], required=True)
    args = ap.parse_args()
    args.ort_train = os.path.abspath(args.ort_train)
    missing = [t for t in ("munged", "slurmctld", "slurmd", "sbatch", "srun") if not shutil.which(t)]
    if missing:
        print(f"SKIPPED: Slurm is not installed ({', '.join(missing)}; tools/install_deps.sh --cluster installs it)")
        return 77
    if os.geteuid() != 0:
        print("SKIPPED: a private Slurm's slurmd must start as root")
        return 77
    missing = mpi_missing(args.ort_train)
    if missing:
        print(f"SKIPPED: {missing}")
        return 77
    with tempfile.TemporaryDirectory() as folder:
        slurm = Slurm(args.source, folder)
        try:
            slurm.start()
        except RuntimeError as e:  # a container that cannot run the daemons: say why, do not fail
            print(f"SKIPPED: Slurm's daemons did not start on this machine: {e}")
            slurm.stop()
            return 77
        try:
            failures = {"example": check_example, "requeue": check_requeue}[args.check](args, slurm, folder)
        finally:
            slurm.stop()
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
