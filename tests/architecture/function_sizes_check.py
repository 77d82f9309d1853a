#!/usr/bin/env python3
"""No function over 100 lines (lizard's NLOC) in apps/, training/, runtime/ or
graph/ (issue 50's bound: a function that long is a loop or a kernel doing
several things, and the next change makes it longer). Runs lizard, from
PyPI, over the source tree and fails naming every function past the bound;
skipped (exit 77) where lizard is not installed (tools/install_deps.sh
installs it for the tests).

    python3 tests/architecture/function_sizes_check.py --source .
"""
import argparse
import os
import subprocess
import sys

FOLDERS = ["apps", "training", "runtime", "graph"]
MAX_LINES = 100


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True, help="the project's source root")
    args = ap.parse_args()
    try:
        import lizard  # noqa: F401
    except ImportError:
        print("ORT_TRAIN_TEST_SKIPPED: lizard is not installed (python3 -m pip install lizard)")
        return 77
    # -C 1000: only length is bounded here; the warnings are lizard's own lines.
    proc = subprocess.run([sys.executable, "-m", "lizard", "-L", str(MAX_LINES), "-C", "1000", "-w"] + FOLDERS,
                          cwd=args.source, capture_output=True, text=True)
    over = [line for line in proc.stdout.splitlines() if ": warning: " in line]
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and not over):
        print(f"lizard failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return 1
    if over:
        print(f"{len(over)} function(s) over {MAX_LINES} lines; split them:")
        for line in over:
            print("  " + line)
        return 1
    print(f"no function over {MAX_LINES} lines in {', '.join(FOLDERS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
