#!/usr/bin/env python3
"""Runs the ONNX backend node-test cases of ort_train's op set through `ort_train run`.

Reads the case index next to the cases (onnx_node_tests_cases.tsv), keeps the
cases whose op family is in the op set, skips cases whose tensors use types the
runtime does not compute in (8-/4-bit floats, strings; float16 and bfloat16
except for Cast, the one op computing in them so far), runs
each through `ort_train run --model M --inputs test_data_set_0`, and prints pass
counts per op. Exits 77 (CTest's skip code) when the cases folder is absent, and
1 when the pass rate is below --min-pass-rate. Standard library only.
"""
import argparse
import collections
import os
import subprocess
import sys

# The forward op set of the foundation issue (docs/ops.md lists them with their files).
OP_SET = """Add Sub Mul Div Pow Sqrt Exp Log Neg Abs Reciprocal Relu LeakyRelu Sigmoid Tanh Erf Gelu Atan Floor Ceil Round Sign
Softmax LogSoftmax MatMul Gemm Transpose Reshape Flatten Squeeze Unsqueeze Concat Split Slice Gather
GatherElements Expand Where Equal Less Greater Not And Or Cast ReduceMean ReduceSum ReduceMax ReduceMin
LayerNormalization BatchNormalization Conv MaxPool AveragePool GlobalAveragePool Dropout
SoftmaxCrossEntropyLoss NegativeLogLikelihoodLoss Identity Shape ConstantOfShape Constant Range Clip
Max Min Sum Mean Tile Pad Trilu CumSum TopK ScatterElements Scatter ScatterND GatherND Softplus Einsum ConvTranspose
HardSigmoid HardSwish Elu Selu Celu ThresholdedRelu Shrink Softsign Mish Tan Sinh Cosh Asin Acos Asinh Acosh Atanh
PRelu Mod ArgMax ArgMin DepthToSpace SpaceToDepth RNN GRU LSTM InstanceNormalization GroupNormalization
OneHot EyeLike Hardmax ReverseSequence Compress ReduceLogSum MeanVarianceNormalization LpNormalization
IsNaN IsInf LpPool GlobalLpPool GridSample If Loop Scan Col2Im
SequenceInsert SplitToSequence BitwiseAnd BitwiseOr BitwiseXor BitwiseNot BitShift
AffineGrid CenterCropPad""".split()
# (The last two lines are issue 30's. ../shared's corpus has no case of them;
# tools/make_node_tests.py makes theirs from the installed onnx package.)

# Substrings of case names whose tensors use types this runtime does not store.
EXCLUDED_TYPE_MARKERS = ["float8", "FLOAT8", "e4m3", "e5m2", "float4", "FLOAT4", "int4", "INT4", "uint4", "INT2",
                         "UINT2", "string", "STRING", "e8m0", "E8M0"]
# float16 and bfloat16 are stored and converted; Cast, the view ops and the
# GEMMs (MatMul, Gemm: --precision's autocast) compute on them, other ops'
# 16-bit cases stay excluded. (The corpus's 16-bit cases are Cast's 30,
# Range's 4 and one each of Max and Min: none of MatMul or Gemm yet, which
# tests/runtime/kernels/matmul_half_test.cc checks against the float kernels.)
HALF_TYPE_MARKERS = ["float16", "bfloat16", "FLOAT16", "BFLOAT16"]
HALF_TYPE_OPS = {"Cast", "CastLike", "MatMul", "Gemm"}


def excluded(name, op):
    if any(m in name for m in EXCLUDED_TYPE_MARKERS):
        return True
    return op not in HALF_TYPE_OPS and any(m in name for m in HALF_TYPE_MARKERS)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--cases", required=True, help="folder with the ONNX node-test cases")
    ap.add_argument("--min-pass-rate", type=float, default=0.0)
    ap.add_argument("--ops", default="", help="comma-separated op families to run (default: the whole op set)")
    ap.add_argument("--verbose", action="store_true", help="print each failure's message")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:i]: where `ort_train run` computes")
    args = ap.parse_args()

    index = os.path.join(args.cases, "onnx_node_tests_cases.tsv")
    if not os.path.isfile(index):
        print(f"SKIPPED: ONNX node-test cases not found at {args.cases} (they live in ../shared, "
              "which a user's clone does not have)")
        return 77
    ops = set(args.ops.split(",")) if args.ops else set(OP_SET)
    cases = []
    with open(index) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            if row["op_family"] in ops:
                cases.append(row)

    per_op = collections.defaultdict(lambda: [0, 0, 0])  # passed, failed, excluded
    failures = []
    for row in cases:
        name, op = row["case"], row["op_family"]
        if excluded(name, op):
            per_op[op][2] += 1
            continue
        case_dir = os.path.join(args.cases, name)
        data_dir = os.path.join(case_dir, "test_data_set_0")
        try:
            r = subprocess.run([args.ort_train, "--log-level", "warn", "run", "--model",
                                os.path.join(case_dir, "model.onnx"), "--inputs", data_dir,
                                "--rtol", "1e-3", "--atol", "1e-5", "--device", args.device]
                               # The expected outputs are float32's: TF32's 10-bit products would miss rtol 1e-3.
                               + (["--no-tf32"] if args.device != "cpu" else []),
                               capture_output=True, text=True, timeout=args.timeout)
            ok = r.returncode == 0 and "MISMATCH" not in r.stdout
            msg = (r.stderr.strip() or r.stdout.strip()).splitlines()
            msg = msg[-1] if msg else f"exit {r.returncode}"
        except subprocess.TimeoutExpired:
            ok, msg = False, "timed out"
        per_op[op][0 if ok else 1] += 1
        if not ok:
            failures.append((name, msg))
            if args.verbose:  # at once, so a run cut short at a time limit still names its failures
                print(f"FAIL {name}: {msg[:300]}", flush=True)

    total_pass = sum(v[0] for v in per_op.values())
    total_fail = sum(v[1] for v in per_op.values())
    total_excl = sum(v[2] for v in per_op.values())
    print(f"{'op':28s} {'pass':>5s} {'fail':>5s} {'excluded':>8s}")
    for op in sorted(per_op):
        p, fl, ex = per_op[op]
        print(f"{op:28s} {p:5d} {fl:5d} {ex:8d}")
    print()
    if not args.verbose:
        for name, msg in failures:
            print(f"FAIL {name}: {msg[:160]}")
    run = total_pass + total_fail
    rate = total_pass / run if run else 0.0
    # Worded so that no summary reader takes it for a test runner's "N passed, N failed" line.
    print(f"\nconformance: {total_pass} cases pass, {total_fail} fail, {total_excl} excluded for dtype "
          f"(pass rate {100 * rate:.1f}% of {run} run)")
    if rate < args.min_pass_rate:
        print(f"pass rate below the required {100 * args.min_pass_rate:.0f}%")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
