#!/usr/bin/env python3
"""Exports a torch.nn.Module for training with ort_train: the ONNX file, and a
model description (YAML) that says what an ONNX file cannot.

    from export_for_training import export_for_training
    export_for_training(model, (input_ids, labels), "m.onnx", input_names=["input_ids", "labels"])
    # ort_train --model m.onnx --config m.yaml --data ... --optimizer AdamW --lr 1e-3

The module's forward returns its loss (first, or alone). What the
description records, from the module itself:
  - trainable: the parameters with requires_grad (include), and every other
    floating-point initializer (exclude): buffers, frozen parameters, and the
    constants an export adds. Hugging Face's requires_grad=False tables and
    buffers (sinusoidal positions, final_logits_bias) are exactly what the
    file alone cannot tell.
  - embeddings: each nn.Embedding's padding_idx, whose row PyTorch never
    trains from lookups.
  - loss: the output that holds the loss.
BatchNormalization: the dynamo exporter writes every BatchNorm in inference
mode, even from train(); this sets training_mode on the nodes of BatchNorm
modules that are in training mode and tracking statistics, with the updated
running statistics as outputs (ONNX's momentum is 1 - PyTorch's).

Either exporter: dynamo=True (the default of torch >= 2.9, what users bring;
opset 18+) with optimize=False, so parameters stay initializers under their
state_dict names (the optimizer folds Linear weights into transposes and
lookups of parameters into new tensors); or dynamo=False, the TorchScript
exporter, in TrainingMode.TRAINING without constant folding (opset 17 by
default), for a torch older than 2.9 or a model torch.export cannot trace.

Run as a script, it exports one of a few bundled example modules
(`--example causal_lm`), which is how README's "Exporting your model" checks it.
"""
import argparse
import os
import sys

import onnx
import torch
from onnx import helper


def _float_initializers(model):
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}
    return [t.name for t in model.graph.initializer if t.data_type in floats]


def _training_batch_norms(module, model):
    """Sets training_mode on the BatchNormalization nodes of modules in
    training mode; returns their names."""
    modules = {name: m for name, m in module.named_modules()
               if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.training and m.track_running_stats}
    changed = []
    for node in model.graph.node:
        if node.op_type != "BatchNormalization" or len(node.input) < 5:
            continue
        owner = node.input[3].rsplit(".running_mean", 1)[0] if node.input[3].endswith(".running_mean") else None
        bn = modules.get(owner)
        if bn is None:
            continue
        attrs = [a for a in node.attribute if a.name not in ("training_mode", "momentum")]
        del node.attribute[:]
        node.attribute.extend(attrs)
        node.attribute.append(helper.make_attribute("training_mode", 1))
        node.attribute.append(helper.make_attribute("momentum", 1.0 - (bn.momentum if bn.momentum is not None else 0.1)))
        del node.output[1:]
        node.output.extend([f"{owner}.running_mean_updated", f"{owner}.running_var_updated"])
        changed.append(node.name)
    return changed


def _yaml_list(names):
    return "[" + ", ".join(f'"{n}"' for n in names) + "]"


def export_for_training(module, args, path, *, input_names, loss_output="loss", output_names=None, dynamo=True,
                        optimize=False, opset=None, description=None):
    """Writes `path` (ONNX) and `description` (YAML; default: path with .yaml)
    for training `module` on `args`. Returns the description's path."""
    module.train()
    output_names = output_names or [loss_output]
    if dynamo:
        torch.onnx.export(module, args, path, input_names=input_names, output_names=output_names, dynamo=True,
                          optimize=optimize, external_data=False, **({"opset_version": opset} if opset else {}))
    else:
        torch.onnx.export(module, args, path, input_names=input_names, output_names=output_names, dynamo=False,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          opset_version=opset or 17)
    model = onnx.load(path)
    batch_norms = _training_batch_norms(module, model) if dynamo else []
    if batch_norms:
        onnx.save(model, path)
    floats = _float_initializers(model)
    in_file = set(floats)
    # Every name of a tied parameter (an output embedding shared with the
    # input's): the file keeps one of them, not necessarily the first.
    params = [n for n, p in module.named_parameters(remove_duplicate=False) if p.requires_grad]
    include = [n for n in params if n in in_file]
    ties = {}
    for n, p in module.named_parameters(remove_duplicate=False):
        ties.setdefault(id(p), []).append(n)
    missing = [names[0] for names in ties.values()
               if names[0] in params and not any(n in in_file for n in names)]
    if missing:
        print(f"export_for_training: {len(missing)} trainable parameter(s) are not initializers of the file under their "
              f"own names (folded by optimize=True, or renamed): {', '.join(missing[:8])}", file=sys.stderr)
    exclude = [n for n in floats if n not in set(include)]
    # A padding row belongs to the table, whichever of its tied names the file kept
    # (Marian's shared embedding is saved as its lm_head's weight).
    pads = {}
    for m in module.modules():
        if isinstance(m, torch.nn.Embedding) and m.padding_idx is not None:
            for name in ties.get(id(m.weight), []):
                if name in in_file:
                    pads[name] = m.padding_idx
    description = description or os.path.splitext(path)[0] + ".yaml"
    lines = [f"# Written by tools/export_for_training.py ({'dynamo' if dynamo else 'TorchScript'} exporter, "
             f"torch {torch.__version__}): what {os.path.basename(path)} cannot say itself.",
             f"model: {os.path.basename(path)}",
             f"loss: {{output: {loss_output}}}",
             "trainable:",
             f"  include: {_yaml_list(include)}"]
    if exclude:
        lines.append(f"  exclude: {_yaml_list(exclude)}")
    if pads:
        lines.append("embeddings:")
        lines += [f'  "{name}": {{padding_idx: {idx}}}' for name, idx in pads.items()]
    if batch_norms:
        lines.append(f"# BatchNormalization in training mode: {', '.join(batch_norms)}")
    with open(description, "w") as f:
        f.write("\n".join(lines) + "\n")
    return description


class _CausalLM(torch.nn.Module):
    """A small causal language model: learned positions, a float -inf causal
    mask buffer, nn.MultiheadAttention, a tanh GELU and its loss inside."""

    def __init__(self, vocab=64, dim=32, seq=16, heads=2):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim, padding_idx=0)
        self.pos = torch.nn.Parameter(torch.randn(seq, dim) * 0.02)
        self.attn = torch.nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, input_ids, labels):
        x = self.emb(input_ids) + self.pos
        a, _ = self.attn(x, x, x, attn_mask=self.mask, need_weights=False)
        x = self.ln(x + a)
        logits = self.head(torch.nn.functional.gelu(x, approximate="tanh"))
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--example", choices=["causal_lm"], default="causal_lm")
    ap.add_argument("--out", default="causal_lm.onnx", help="the ONNX file; the description goes beside it (.yaml)")
    ap.add_argument("--exporter", choices=["dynamo", "torchscript"], default="dynamo")
    args = ap.parse_args()
    torch.manual_seed(0)
    module = _CausalLM()
    ids = torch.randint(0, 64, (4, 16))
    desc = export_for_training(module, (ids, ids.roll(-1, 1)), args.out, input_names=["input_ids", "labels"],
                               dynamo=args.exporter == "dynamo")
    print(f"wrote {args.out} and {desc}")


if __name__ == "__main__":
    main()
