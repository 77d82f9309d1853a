#!/usr/bin/python3
"""Lists the ONNX default-domain ops ort_train has no kernel for, with why.

Reads the supported ops from docs/op_files.md (made from the registrations by
tests/architecture/op_files_test.cc) and every op of the installed onnx
package's default domain, and writes docs/ops_missing.md: each op without a
kernel under a reason (quantized, string, sequence and optional, signal,
control flow, or not yet). Needs onnx (Debian's python3-onnx: /usr/bin/python3).

    /usr/bin/python3 tools/list_missing_ops.py            # rewrite the page
    /usr/bin/python3 tools/list_missing_ops.py --check    # exit 1 when it differs

--check exits 77 (CTest's skip) without onnx, or with an onnx version other
than the one the page was made with (its op list differs by version).
"""
import argparse
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

REASONS = [
    ("quantized", "integer-quantized arithmetic (scales and zero points); ort_train trains in float32/64, "
                  "bfloat16 and float16",
     lambda op: "uantize" in op or op.startswith("QLinear") or op.endswith("Integer")),
    ("string", "string tensors, which ort_train does not store",
     lambda op: op in {"StringNormalizer", "RegexFullMatch", "StringConcat", "StringSplit", "TfIdfVectorizer"}),
    ("sequence and optional", "sequence and optional values, which ort_train does not store",
     lambda op: op.startswith("Sequence") or op.startswith("Optional") or op in {"SplitToSequence",
                                                                               "ConcatFromSequence"}),
    ("signal", "signal processing (no training export uses them so far)",
     lambda op: op in {"DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix"}),
]
OTHER = ("not yet", "not built yet; a model that uses one is refused with the node named")


def supported_ops():
    ops = set()
    with open(os.path.join(ROOT, "docs", "op_files.md")) as f:
        for line in f:
            m = re.match(r"\| (\w+) \|", line)
            if m and m.group(1) != "op":
                ops.add(m.group(1))
            # A file's If, Loop and Scan run as com.ort_train's (graph/control_flow.h: captures made explicit).
            m = re.match(r"\| com\.ort_train::(If|Loop|Scan) \|", line)
            if m:
                ops.add(m.group(1))
    return ops


def page(onnx):
    have = supported_ops()
    schemas = [s for s in onnx.defs.get_all_schemas() if s.domain in ("", "ai.onnx") and not s.deprecated]
    missing = sorted({s.name for s in schemas} - have)
    grouped = {name: [] for name, _, _ in REASONS}
    grouped[OTHER[0]] = []
    for op in missing:
        reason = next((name for name, _, test in REASONS if test(op)), OTHER[0])
        grouped[reason].append(op)
    lines = ["# ONNX ops without a kernel", "",
             f"Made by `tools/list_missing_ops.py` from onnx {onnx.__version__}'s default domain "
             f"({len({s.name for s in schemas})} ops) and `docs/op_files.md` (the ops ort_train registers); "
             f"CTest `docs.ops_missing_is_current` fails when it differs. {len(missing)} ops have no kernel:", ""]
    for name, why, _ in REASONS + [(OTHER[0], OTHER[1], None)]:
        if grouped[name]:
            lines += [f"- **{name}** ({why}): " + ", ".join(grouped[name]) + "."]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    try:
        import onnx
    except ImportError:
        print("SKIPPED: the onnx package is not installed")
        return 77
    path = os.path.join(ROOT, "docs", "ops_missing.md")
    want = page(onnx)
    if not args.check:
        with open(path + ".tmp", "w") as f:
            f.write(want)
        os.replace(path + ".tmp", path)
        print(f"wrote {path}")
        return 0
    have = open(path).read() if os.path.exists(path) else ""
    m = re.search(r"from onnx (\S+)'s", have)
    if m and m.group(1) != onnx.__version__:
        print(f"SKIPPED: docs/ops_missing.md was made with onnx {m.group(1)}, this is {onnx.__version__}")
        return 77
    if have != want:
        print("docs/ops_missing.md differs from the registrations; run /usr/bin/python3 tools/list_missing_ops.py")
        return 1
    print("docs/ops_missing.md is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
