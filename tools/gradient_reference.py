#!/usr/bin/python3
"""PyTorch autograd references for ort_train's whole-model gradient tests.

Needs PyTorch and onnx (Debian's python3-torch/python3-onnx; run with /usr/bin/python3):

    /usr/bin/python3 tools/gradient_reference.py [--out tests/models] [--models mlp,bert]

For each model exported by tools/export_models.py it re-creates the PyTorch
module with the same seeds, checks that every floating-point initializer of the
committed model.onnx is a parameter (or its transpose, which constant folding
makes of a Linear weight feeding MatMul), a buffer, or a folded constant, and
fails if any is unexplained or if one parameter became two trainable
initializers (tied weights would split their gradient). It then writes:

  <model>/training.yaml             the model description: inputs, labels, loss,
                                    and trainable.exclude for buffers and constants
  <model>/train_batches/0/<t>.pb    the batch: the model's test inputs and the labels
  <model>/gradients/<escaped>.pb    d(loss)/d(initializer) per trainable initializer,
                                    computed in float64, stored as float32
  <model>/gradients/loss.pb         the loss

File names escape every byte outside [A-Za-z0-9._-] as %XX (and a leading
'.'), as ort_train's --dump-gradients does. tests/models/gradient_parity_test.cc
runs the training graph in float32 and requires, per initializer,
max|ours - ref| <= 1e-4 max|ref| + 1e-6 G (G: the model's largest gradient
element, a floor for gradients that are exactly zero in exact arithmetic), and
the loss within 1e-5 relative.
Deterministic: re-running writes identical files.
"""
import argparse
import os
import shutil
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402

# Per model: the loss the description appends (None: the model outputs its own).
LOSSES = {
    "mlp": {"type": "mse", "input": "logits", "target": "labels", "reduction": "mean"},
    "lenet": {"type": "softmax_cross_entropy", "input": "logits", "target": "labels", "reduction": "mean"},
    "bert": {"type": "softmax_cross_entropy", "input": "logits", "target": "labels", "reduction": "mean",
             "ignore_index": -100},
    "gpt": None,
    "transformer_lm": {"type": "softmax_cross_entropy", "input": "logits", "target": "labels", "reduction": "sum"},
    "cnn_bn": {"type": "softmax_cross_entropy", "input": "logits", "target": "labels", "reduction": "mean"},
    "mobilenet_v3": {"type": "softmax_cross_entropy", "input": "logits", "target": "labels", "reduction": "mean"},
    "lstm_lm": {"type": "softmax_cross_entropy", "input": "logits", "target": "labels", "reduction": "mean"},
    "gru_lm": {"type": "softmax_cross_entropy", "input": "logits", "target": "labels", "reduction": "mean"},
    "bilstm_tagger": {"type": "softmax_cross_entropy", "input": "logits", "target": "labels", "reduction": "mean"},
    "loop_branch": {"type": "softmax_cross_entropy", "input": "logits", "target": "labels", "reduction": "mean"},
}
DTYPES = {1: "float32", 11: "float64", 7: "int64", 6: "int32", 9: "bool"}


def escape(name):
    out = []
    for i, b in enumerate(name.encode()):
        c = chr(b)
        if c.isascii() and (c.isalnum() or c in "_-" or (c == "." and i > 0)):
            out.append(c)
        else:
            out.append(f"%{b:02X}")
    return "".join(out) + ".pb"


def write(array, name, path):
    export_models.write_tensor(array, name, path)


def classify(onnx_model, module, transposed_only=()):
    """Maps each float initializer to ('param', [(param name, transposed), ...]) / ('buffer', name) / ('constant',).

    The exporter keeps one initializer per distinct value, so parameters that
    start equal (LayerNorm weights of ones, the deep-copied layers of
    nn.TransformerEncoder) share one initializer, whose gradient is then the
    sum of theirs. Each parameter goes to the initializer of its own name, else
    to the one initializer equal to it (or to its transpose).
    """
    params = {n: p.detach().float().numpy() for n, p in module.named_parameters()}
    buffers = {n: b.detach().float().numpy() for n, b in module.named_buffers() if b.is_floating_point()}
    values = {i.name: numpy_helper.to_array(i).astype(np.float32)
              for i in onnx_model.graph.initializer if i.data_type in (1, 11)}
    owners = {name: [] for name in values}
    for pname, p in params.items():
        if pname in values and np.array_equal(values[pname], p):
            owners[pname].append((pname, False))
            continue
        # (`transposed_only`: untied output embeddings, equal to their input
        # embedding too, whose export is the folded transpose.)
        matches = [] if pname in transposed_only else \
            [(iname, False) for iname, v in values.items() if v.shape == p.shape and np.array_equal(v, p)]
        matches += [(iname, True) for iname, v in values.items()
                    if p.ndim == 2 and v.shape == p.T.shape and np.array_equal(v, p.T)]
        if len(matches) > 1:
            sys.exit(f"parameter {pname} equals several initializers ({', '.join(m[0] for m in matches)}): "
                     "its gradient would be split")
        if matches:
            owners[matches[0][0]].append((pname, matches[0][1]))
        else:
            print(f"  parameter without an initializer: {pname}")
    table = {}
    for iname, value in values.items():
        if owners[iname]:
            table[iname] = ("param", owners[iname])
            continue
        # A buffer by its own name first: exporting in training mode runs the
        # module once, so BatchNorm's running statistics in the file are one
        # update ahead of a fresh module's.
        buffer = iname if iname in buffers and buffers[iname].shape == value.shape else None
        buffer = buffer or next((n for n, b in buffers.items()
                                 if b.shape == value.shape and np.array_equal(b, value)), None)
        if buffer:
            table[iname] = ("buffer", buffer)
        elif value.size <= 64:
            table[iname] = ("constant",)
        else:
            sys.exit(f"initializer {iname} {list(value.shape)} matches no parameter or buffer")
    return table


def read_inputs(model_dir, onnx_model):
    inits = {i.name for i in onnx_model.graph.initializer}
    out = {}
    for vi in onnx_model.graph.input:
        if vi.name in inits:
            continue
        t = onnx.load_tensor(os.path.join(model_dir, "test_data_set_0", f"{vi.name}.pb"))
        out[vi.name] = numpy_helper.to_array(t)
    return out


def dims_of(vi):
    return [d.dim_param if d.dim_param else d.dim_value for d in vi.type.tensor_type.shape.dim]


def symbol_for(size, inputs, onnx_model):
    """The graph inputs' dim name whose size in the batch is `size` (the exporter's
    names for output dims mean nothing to the description), else the size."""
    names = set()
    for vi in onnx_model.graph.input:
        if vi.name in inputs:
            for d, n in zip(dims_of(vi), inputs[vi.name].shape):
                if isinstance(d, str) and d and n == size:
                    names.add(d)
    return names.pop() if len(names) == 1 else size


def yaml_list(items):
    return "[" + ", ".join(str(i) for i in items) + "]"


def reference(name, module, out_root):
    model_dir = os.path.join(out_root, name)
    onnx_model = onnx.load(os.path.join(model_dir, "model.onnx"))
    table = classify(onnx_model, module)
    inputs = read_inputs(model_dir, onnx_model)
    module = module.double()
    module.train(name in export_models.TRAINING_MODE)
    torch_inputs = [torch.from_numpy(v.copy()).double() if v.dtype == np.float32 else torch.from_numpy(v.copy())
                    for v in inputs.values()]
    outs = module(*torch_inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    output_names = [o.name for o in onnx_model.graph.output]
    spec = LOSSES[name]
    labels = {}
    if spec is None:
        loss = outs[output_names.index("loss")]
    else:
        logits = outs[output_names.index(spec["input"])]
        g = torch.Generator().manual_seed(99)
        if spec["type"] == "mse":
            target = torch.randn(logits.shape, generator=g, dtype=torch.float64).float()
            loss = F.mse_loss(logits, target.double(), reduction=spec["reduction"])
            labels["labels"] = target.numpy()
        else:
            classes = logits.shape[-1]
            target = torch.randint(0, classes, logits.shape[:-1], generator=g)
            if "ignore_index" in spec:
                target.view(-1)[::3] = spec["ignore_index"]
            loss = F.cross_entropy(logits.reshape(-1, classes), target.reshape(-1), reduction=spec["reduction"],
                                   ignore_index=spec.get("ignore_index", -100))
            labels["labels"] = target.numpy()
    loss.backward()
    params = dict(module.named_parameters())

    # Files: write into a temporary folder, then replace.
    tmp = os.path.join(model_dir, ".reference.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "train_batches", "0"))
    os.makedirs(os.path.join(tmp, "gradients"))
    for k, v in list(inputs.items()) + list(labels.items()):
        write(v, k, os.path.join(tmp, "train_batches", "0", f"{k}.pb"))
    write(np.float32(loss.item()), "loss", os.path.join(tmp, "gradients", "loss.pb"))
    exclude = []
    for init_name, kind in table.items():
        if kind[0] != "param":
            exclude.append(init_name)
            continue
        grad = sum(params[p].grad.detach().numpy().T if t else params[p].grad.detach().numpy() for p, t in kind[1])
        write(grad.astype(np.float32), init_name, os.path.join(tmp, "gradients", escape(init_name)))
    lines = ["# Written by tools/gradient_reference.py: the description of the gradient-parity test.", "inputs:"]
    inits = {i.name for i in onnx_model.graph.initializer}
    for vi in onnx_model.graph.input:
        if vi.name not in inits:
            lines.append(f"  - {{name: {vi.name}, dtype: {DTYPES[vi.type.tensor_type.elem_type]}, "
                         f"shape: {yaml_list(dims_of(vi))}}}")
    if labels:
        # The labels follow the loss input's dims (symbolic ones by name), less the class axis.
        out_vi = next(o for o in onnx_model.graph.output if o.name == spec["input"])
        out_dims = dims_of(out_vi)
        lines.append("labels:")
        for k, v in labels.items():
            dims = out_dims if spec["type"] == "mse" else out_dims[:-1]
            dims = [symbol_for(size, inputs, onnx_model) if isinstance(d, str) and d else size
                    for d, size in zip(dims, v.shape)]
            lines.append(f"  - {{name: {k}, dtype: {'float32' if v.dtype == np.float32 else 'int64'}, "
                         f"shape: {yaml_list(dims)}}}")
    if spec is None:
        lines.append("loss: {output: loss}")
    else:
        lines.append("loss: {" + ", ".join(f"{k}: {v}" for k, v in spec.items()) + "}")
    if exclude:
        lines.append("trainable:")
        lines.append("  exclude: [" + ", ".join(f'"{e}"' for e in exclude) + "]")
    with open(os.path.join(tmp, "training.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    for item in ["training.yaml", "train_batches", "gradients"]:
        dst = os.path.join(model_dir, item)
        if os.path.isdir(dst):
            shutil.rmtree(dst)
        elif os.path.exists(dst):
            os.remove(dst)
        os.rename(os.path.join(tmp, item), dst)
    shutil.rmtree(tmp)
    kinds = {}
    for kind in table.values():
        kinds[kind[0]] = kinds.get(kind[0], 0) + 1
    transposed = sum(t for k in table.values() if k[0] == "param" for _, t in k[1])
    shared = sum(1 for k in table.values() if k[0] == "param" and len(k[1]) > 1)
    print(f"{name}: loss {loss.item():.6f}; initializers: {kinds}; {transposed} hold a transposed parameter, "
          f"{shared} are shared by several equal parameters")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "models"))
    ap.add_argument("--models", default=",".join(LOSSES))
    args = ap.parse_args()
    torch.manual_seed(0)  # as export_models.main(), so the modules get the same weights
    specs = export_models.model_specs()
    for name in args.models.split(","):
        reference(name, specs[name][0], args.out)


if __name__ == "__main__":
    main()
