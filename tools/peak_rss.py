#!/usr/bin/env python3
"""Runs a command and reports its peak RSS, measured from a small wrapper
process: a child forked from a large Python process would count that
process's memory too (Linux keeps the larger of the RSS before and after
exec), so the measured command is started by a fresh, small interpreter.

    python3 tools/peak_rss.py CMD [ARGS...]      # prints the peak RSS in MiB
    from peak_rss import measured                # (MiB, the command's stdout + stderr)
"""
import subprocess
import sys

WRAPPER = ("import resource, subprocess, sys\n"
           "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
           "sys.stderr.write(r.stdout + r.stderr)\n"
           "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def measured(cmd):
    """(peak RSS in MiB, output) of `cmd`; exits with its output if it fails."""
    r = subprocess.run([sys.executable, "-c", WRAPPER] + list(cmd), capture_output=True, text=True)
    rc, kib = r.stdout.split()
    if rc != "0":
        sys.exit(f"failed ({rc}): {' '.join(cmd)}\n{r.stderr[-3000:]}")
    return int(kib) / 1024.0, r.stderr


if __name__ == "__main__":
    mib, _ = measured(sys.argv[1:])
    print(f"{mib:.1f}")
