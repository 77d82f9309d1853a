#!/usr/bin/env python3
"""Every Catch2 test case is one CTest entry: counts the entries that
catch_discover_tests wrote for the test binary (the add_test calls of its
generated ort_train_tests_tests-*.cmake) against the binary's own
--list-test-names-only. A test name CMake's list handling splits or glues (an
unmatched '[' once glued 194 cases into one entry that ran none and passed)
makes them differ, and this fails naming the first case CTest does not have.
Standard library only.

    python3 tests/architecture/ctest_discovery_check.py --binary build/tests/ort_train_tests --dir build/tests
"""
import argparse
import glob
import os
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--dir", required=True, help="the folder holding the generated *_tests-*.cmake")
    args = ap.parse_args()
    name = os.path.basename(args.binary)
    files = glob.glob(os.path.join(args.dir, f"{name}_tests-*.cmake"))
    if len(files) != 1:
        print(f"expected one {name}_tests-*.cmake in {args.dir}, found {len(files)}")
        return 1
    with open(files[0]) as f:
        discovered = len(re.findall(r"^\s*add_test\(", f.read(), re.M))
    listed = subprocess.run([args.binary, "--list-test-names-only"], capture_output=True, text=True)  # exits with the count
    names = [line for line in listed.stdout.splitlines() if line.strip()]
    print(f"{len(names)} Catch2 test cases, {discovered} CTest entries")
    if discovered == len(names):
        return 0
    with open(files[0]) as f:
        text = f.read()
    missing = next((n for n in names if n.replace("[", "\\[") not in text and n not in text), None)
    print(f"they differ: a test name CMake splits or glues (brackets, semicolons)? first not found as an entry: {missing}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
