#!/usr/bin/env python3
"""Training on a machine where something else runs: the README's BERT example
(examples/bert: its data, batches of 16 x 64, and its held-out evaluation at
the end), quiet and beside one busy
core, with --threads 0 and 2, for each way the kernels' idle OpenMP threads
may wait:

  ours     ort_train's default (runtime/cpu/openmp_wait.h: a bounded spin)
  libgomp  GOMP_SPINCOUNT=300000, libgomp's own default (what ort_train did
           before it set one)
  passive  OMP_WAIT_POLICY=passive (sleep at once)
  spin:N   GOMP_SPINCOUNT=N (--waits ours,spin:1000,spin:100000 compares bounds)

  /usr/bin/python3 bench/bench_busy_node.py [--binary build/ort_train] [--steps 40] [--rounds 3]

The busy core is one process spinning in a loop (a compiler, another rank, a
login node's other user). Rounds interleave every configuration; prints each
one's wall seconds per run (median, range) and the busy/quiet ratio.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
WAITS = {
    "ours": {},
    "libgomp": {"GOMP_SPINCOUNT": "300000"},
    "passive": {"OMP_WAIT_POLICY": "passive"},
}


def run(binary, steps, threads, wait):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    # "spin:N": GOMP_SPINCOUNT=N, to compare bounds.
    env.update(WAITS[wait] if wait in WAITS else {"GOMP_SPINCOUNT": wait.split(":")[1]})
    cmd = [binary, "--config", f"{ROOT}/examples/bert/bert.yaml", "--steps", str(steps), "--threads", str(threads),
           "--log-level", "error", "--device", "cpu"]
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "ort_train"))
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="0,2")
    ap.add_argument("--waits", default="ours,libgomp,passive")
    a = ap.parse_args()
    if not os.path.exists(f"{ROOT}/examples/bert/data/train.npz"):
        subprocess.run([sys.executable, f"{ROOT}/examples/bert/make_mlm_data.py"], check=True, stdout=subprocess.DEVNULL)
    threads = [int(t) for t in a.threads.split(",")]
    waits = a.waits.split(",")
    times = {}
    for r in range(a.rounds):
        for busy in (False, True):
            hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
            try:
                time.sleep(0.2 if busy else 0)
                for t in threads:
                    for w in waits:
                        s = run(a.binary, a.steps, t, w)
                        times.setdefault((w, t, busy), []).append(s)
                        print(f"round {r} {'busy ' if busy else 'quiet'} --threads {t} {w:8s} {s:7.2f} s", flush=True)
            finally:
                if hog:
                    hog.kill()
                    hog.wait()
    print(f"\n{a.steps} steps of examples/bert (16 x 64) and its evaluation, {a.rounds} rounds, wall seconds: median [min, max]")
    print(f"| wait | --threads | quiet | beside one busy core | busy / quiet |")
    print(f"|---|---|---|---|---|")
    fmt = lambda v: f"{statistics.median(v):.2f} [{min(v):.2f}, {max(v):.2f}]"
    for w in waits:
        for t in threads:
            q, b = times[(w, t, False)], times[(w, t, True)]
            print(f"| {w} | {t} | {fmt(q)} | {fmt(b)} | {statistics.median(b) / statistics.median(q):.1f}x |")


if __name__ == "__main__":
    main()
