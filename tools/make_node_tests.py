#!/usr/bin/python3
"""Writes ONNX backend node-test cases for ops the shared corpus lacks.

The corpus in ../shared/conformance/onnx_node_tests holds the cases of the
first op set only. This script makes the same kind of case for the ops added
since (issue 30: the activations, trigonometric functions, PRelu, Mod,
ArgMax/ArgMin) from the case definitions the installed onnx package carries
(onnx/backend/test/case/node/*.py, the very scripts that produce ONNX's own
backend test data), with onnx's numpy references as the expected outputs.
Needs onnx and numpy (Debian's python3-onnx: run with /usr/bin/python3):

    /usr/bin/python3 tools/make_node_tests.py --out build/tests/node_tests [--ops Mod,Elu]
    python3 tools/make_node_tests.py --ops all --out ../shared/conformance/onnx_node_tests   # every op's

Writes <out>/<case>/model.onnx and <out>/<case>/test_data_set_0/{input,output}_N.pb,
and <out>/onnx_node_tests_cases.tsv in the corpus's index format, so
tests/conformance/run_node_tests.py runs them unchanged. The "_expanded"
cases (the op rewritten as its ONNX function body) are left out: they test
other ops. Exits 77 (CTest's skip) when onnx is not importable.
"""
import argparse
import os
import shutil
import sys
import tempfile

# The ops issue 30 added, each a family of the index.
OPS = ("HardSigmoid HardSwish Elu Selu Celu ThresholdedRelu Shrink Softsign Mish Tan Sinh Cosh Asin Acos Asinh "
       "Acosh Atanh PRelu Mod ArgMax ArgMin DepthToSpace SpaceToDepth RNN GRU LSTM InstanceNormalization "
       "GroupNormalization OneHot EyeLike Hardmax ReverseSequence Compress ReduceLogSum "
       "MeanVarianceNormalization LpNormalization IsNaN IsInf GridSample If Loop Scan SequenceInsert SplitToSequence").split()


def is_tensor_sequence(value_info):
    t = value_info.type
    return t.HasField("sequence_type") and t.sequence_type.elem_type.HasField("tensor_type")


def sequence_edges_as_tensors(model, inputs, outputs):
    """The case's model with tensors at its edges, and its data to match.

    A sequence input of N tensors becomes N tensor inputs <name>_<i> that a
    SequenceConstruct (SequenceEmpty for none) gathers into the sequence; a
    sequence output of M expected tensors becomes M outputs <name>_<i>, each a
    SequenceAt at position i. Integer inputs (positions, split sizes) become
    initializers: ort_train lowers sequences whose positions the file fixes,
    as every exporter writes them. The op under test runs on sequences as before.
    """
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    g = model.graph
    new_inputs, new_in_data, front, fixed = [], [], [], []
    integers = (TensorProto.INT64, TensorProto.INT32)
    for info, value in zip(g.input, inputs):
        if info.type.HasField("tensor_type") and info.type.tensor_type.elem_type in integers:
            fixed.append(numpy_helper.from_array(np.asarray(value), info.name))
            continue
        if not is_tensor_sequence(info):
            new_inputs.append(info)
            new_in_data.append(value)
            continue
        elem = info.type.sequence_type.elem_type.tensor_type.elem_type
        names = []
        for i, t in enumerate(value):
            names.append(f"{info.name}_{i}")
            new_inputs.append(helper.make_tensor_value_info(names[-1], elem, list(np.asarray(t).shape)))
            new_in_data.append(np.asarray(t))
        if names:
            front.append(helper.make_node("SequenceConstruct", names, [info.name]))
        else:
            front.append(helper.make_node("SequenceEmpty", [], [info.name], dtype=elem))
    new_outputs, new_out_data, back, consts = [], [], [], []
    for info, value in zip(g.output, outputs):
        if not is_tensor_sequence(info):
            new_outputs.append(info)
            new_out_data.append(value)
            continue
        elem = info.type.sequence_type.elem_type.tensor_type.elem_type
        for i, t in enumerate(value):
            pos = f"{info.name}_position_{i}"
            consts.append(numpy_helper.from_array(np.array(i, dtype=np.int64), pos))
            back.append(helper.make_node("SequenceAt", [info.name, pos], [f"{info.name}_{i}"]))
            new_outputs.append(helper.make_tensor_value_info(f"{info.name}_{i}", elem, list(np.asarray(t).shape)))
            new_out_data.append(np.asarray(t))
    graph = helper.make_graph(front + list(g.node) + back, g.name, new_inputs, new_outputs,
                              initializer=list(g.initializer) + fixed + consts)
    out = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    return out, new_in_data, new_out_data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--ops", default=",".join(OPS))
    args = ap.parse_args()
    try:
        import numpy as np
        # onnx 1.12's case scripts (Debian's) still spell numpy's removed aliases.
        for alias, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
            if alias not in np.__dict__:
                setattr(np, alias, t)
        import onnx
        from onnx import numpy_helper
        from onnx.backend.test.case import node as node_cases
    except ImportError as e:
        print(f"SKIPPED: onnx and numpy are needed to make the node tests ({e})")
        return 77
    # "all": every op's cases, the whole corpus (README, Development).
    wanted = None if args.ops == "all" else set(args.ops.split(","))
    cases = [c for c in node_cases.collect_testcases("") if not c.name.endswith("_expanded")]
    rows = []
    tmp = tempfile.mkdtemp(prefix="node_tests.", dir=os.path.dirname(os.path.abspath(args.out)) or ".")
    for case in cases:
        nodes = case.model.graph.node
        if len(nodes) != 1 or (wanted is not None and nodes[0].op_type not in wanted):
            continue
        inputs, outputs = case.data_sets[0]
        # ort_train stores tensors only: a case whose graph inputs or outputs
        # are sequences of tensors is rewritten with tensors at its edges
        # (sequence_edges_as_tensors); one with optional or map values, or a
        # sequence around a subgraph op, is left out.
        values = list(case.model.graph.input) + list(case.model.graph.output)
        if any(not v.type.HasField("tensor_type") for v in values):
            if nodes[0].op_type in ("If", "Loop", "Scan", "SequenceMap") or any(
                    not v.type.HasField("tensor_type") and not is_tensor_sequence(v) for v in values):
                continue
            model, inputs, outputs = sequence_edges_as_tensors(case.model, inputs, outputs)
        else:
            model = case.model
        d = os.path.join(tmp, case.name)
        data = os.path.join(d, "test_data_set_0")
        os.makedirs(data)
        onnx.save(model, os.path.join(d, "model.onnx"))
        def tensor(value, name):
            # onnx >= 1.15 gives some cases' data as TensorProtos already (CastLike's typed values).
            if isinstance(value, onnx.TensorProto):
                t = onnx.TensorProto()
                t.CopyFrom(value)
                t.name = name
                return t
            return numpy_helper.from_array(np.asarray(value), name)

        try:
            for i, (value, info) in enumerate(zip(inputs, model.graph.input)):
                with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
                    f.write(tensor(value, info.name).SerializeToString())
            for i, (value, info) in enumerate(zip(outputs, model.graph.output)):
                with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
                    f.write(tensor(value, info.name).SerializeToString())
        except (NotImplementedError, TypeError, ValueError):
            shutil.rmtree(d)  # data numpy_helper cannot write (strings, nested protos): not a tensor case
            continue
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
        rows.append((case.name, nodes[0].op_type, "0", str(case.model.ir_version), str(opset), "ok"))
    with open(os.path.join(tmp, "onnx_node_tests_cases.tsv"), "w") as f:
        f.write("case\top_family\texpanded\tir_version\topset_ai.onnx\tonnx1.12_check\n")
        for r in sorted(rows):
            f.write("\t".join(r) + "\n")
    # Replace the folder whole, so a half-written set never stands where a complete one did.
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.replace(tmp, args.out)
    found = sorted({r[1] for r in rows})
    print(f"{len(rows)} node-test cases of {len(found)} ops in {args.out} (onnx {onnx.__version__}); "
          f"no case in this onnx for: {' '.join(sorted((wanted or set()) - set(found))) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
