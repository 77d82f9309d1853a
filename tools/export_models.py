#!/usr/bin/python3
"""Exports the small reference models ort_train is tested on, with PyTorch's outputs.

Needs PyTorch and onnx: Debian's python3-torch and python3-onnx
(`bash tools/install_deps.sh --python`), so run it with /usr/bin/python3
(the pyenv `python3` on PATH has no torch):

    /usr/bin/python3 tools/export_models.py [--out tests/models] [--only bert,gpt]

For each model it writes <out>/<name>/model.onnx (torch.onnx.export, opset 17;
models in TRAINING_MODE are exported in training mode, BatchNormalization
with batch statistics) and <out>/<name>/test_data_set_0/ with one TensorProto per graph input
(<input name>.pb) and PyTorch's outputs as output_0.pb, output_1.pb, ... in the
graph's output order. Everything is seeded, and each model is written to a
temporary folder first and moved into place, so a failed export never leaves
partial files. The export must pass onnx.checker and use only ONNX-domain
ops. Prints, per model, its op types with counts and each file's size.
"""
import argparse
import collections
import copy
import math
import os
import shutil
import tempfile

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

OPSET = 17


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(32, 64), nn.Linear(64, 64), nn.Linear(64, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2 = nn.Linear(16 * 5 * 5, 32), nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.avg_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.dh = heads, hidden // heads
        self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden) for _ in range(4))

    def forward(self, x, additive_mask):
        b, s, h = x.shape
        split = lambda t: t.view(b, s, self.heads, self.dh).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh) + additive_mask
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.o(ctx.transpose(1, 2).reshape(b, s, h))


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, inter):
        super().__init__()
        self.attn = SelfAttention(hidden, heads)
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.fc1, self.fc2 = nn.Linear(hidden, inter), nn.Linear(inter, hidden)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, mask):
        x = self.ln1(x + self.drop(self.attn(x, mask)))
        return self.ln2(x + self.drop(self.fc2(F.gelu(self.fc1(x)))))


class Bert(nn.Module):
    """BERT-style encoder with an MLM head: attention mask, LayerNorm, erf-GELU."""

    def __init__(self, vocab=100, hidden=32, layers=2, heads=4, inter=64, max_pos=64):
        super().__init__()
        self.tok, self.pos, self.seg = nn.Embedding(vocab, hidden), nn.Embedding(max_pos, hidden), nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, inter) for _ in range(layers))
        self.head = nn.Linear(hidden, hidden)
        self.head_ln = nn.LayerNorm(hidden)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, input_ids, attention_mask, token_type_ids):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = self.ln(self.tok(input_ids) + self.pos(pos) + self.seg(token_type_ids))
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return self.decoder(self.head_ln(F.gelu(self.head(x))))


class GptBlock(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.attn = SelfAttention(hidden, heads)
        self.fc1, self.fc2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

    def forward(self, x, mask):
        x = x + self.attn(self.ln1(x), mask)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    """GPT-style causal LM that computes its own shifted cross-entropy loss."""

    def __init__(self, vocab=100, hidden=32, layers=2, heads=4, max_pos=64):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, hidden), nn.Embedding(max_pos, hidden)
        self.blocks = nn.ModuleList(GptBlock(hidden, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids, labels):
        s = input_ids.shape[1]
        pos = torch.arange(s, device=input_ids.device).unsqueeze(0)
        x = self.tok(input_ids) + self.pos(pos)
        causal = torch.triu(torch.ones(s, s, device=input_ids.device), diagonal=1) * -1e9
        for blk in self.blocks:
            x = blk(x, causal)
        logits = self.lm_head(self.ln(x))
        loss = F.cross_entropy(logits[:, :-1, :].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))
        return loss, logits


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(pos * div)
        pe[:, 0, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(0)]


class TransformerLM(nn.Module):
    """PyTorch's word-language-model TransformerEncoder LM (input [seq, batch])."""

    def __init__(self, vocab=100, d_model=32, heads=4, ff=64, layers=2):
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.1)
        # torch 1.13's eval-mode fast paths (nested tensors in TransformerEncoder,
        # torch._transformer_encoder_layer_fwd in the layer) need batch_first and no
        # src_mask, so this [seq, batch] masked model already takes the plain path,
        # which exports to standard ops; enable_nested_tensor=False keeps it there
        # regardless. export() rejects any op outside the ONNX domain (e.g. ATen).
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.decoder = nn.Linear(d_model, vocab)

    def forward(self, src):
        s = src.shape[0]
        mask = torch.triu(torch.full((s, s), float("-inf"), device=src.device), diagonal=1)
        x = self.pos(self.embed(src) * math.sqrt(self.d_model))
        return self.decoder(self.encoder(x, mask))


class CnnBn(nn.Module):
    """A small CNN with BatchNormalization, exported in training mode (batch statistics)."""

    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.conv2, self.bn2 = nn.Conv2d(8, 8, 3), nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class Interpolate(nn.Module):
    """F.interpolate alone: checks Resize against PyTorch's upsampling."""

    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x):
        return F.interpolate(x, **self.kwargs)


class RecurrentLM(nn.Module):
    """A language model over a recurrent core, batch first: token ids [B, T] ->
    logits [B, T, vocab]. `cell` is nn.LSTM or nn.GRU; with `tags` it is a
    bidirectional tagger with that many classes instead."""

    def __init__(self, cell, layers=1, bidirectional=False, vocab=50, embed=12, hidden=16, tags=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = cell(embed, hidden, num_layers=layers, bidirectional=bidirectional, batch_first=True)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), tags or vocab)

    def forward(self, ids):
        return self.head(self.rnn(self.embed(ids))[0])


class LoopBranch(nn.Module):
    """A scripted recurrence and branch (issue 30's control flow): a tanh RNN
    written as a Python loop over the sequence, exported as an ONNX Loop whose
    trip count is the input's length, then a branch on the data, an If whose
    branches share the head. Exported from torch.jit.script (SCRIPTED), as
    control flow exports."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.cell = nn.Linear(16, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.zeros(x.size(0), 16, dtype=x.dtype)
        for t in range(x.size(1)):
            h = torch.tanh(self.inp(x[:, t]) + self.cell(h))
        if bool(h.sum() > 0):
            y = self.head(h)
        else:
            y = self.head(h * 2.0)
        return y


def mobilenet_v3():
    """torchvision's mobilenet_v3_small at a quarter width (120k parameters), 10
    classes, no classifier dropout (so PyTorch's references are deterministic):
    HardSwish, HardSigmoid, squeeze-excitation, depthwise convolutions and 34
    BatchNormalizations, exported in training mode. Needs python3-torchvision."""
    from torchvision.models import mobilenet_v3_small
    return mobilenet_v3_small(num_classes=10, width_mult=0.25, dropout=0.0)


# Models exported in training mode: BatchNormalization uses batch statistics.
# The recurrent models too: exported without constant folding, so W, R and B
# stay Concats of the PyTorch parameters (gates reordered to ONNX's) instead of
# new initializers, and each parameter's gradient is compared.
TRAINING_MODE = {"cnn_bn", "mobilenet_v3", "lstm_lm", "gru_lm", "bilstm_tagger"}
# Models with Python control flow: exported from torch.jit.script, which keeps
# loops and branches as ONNX Loop and If (tracing would unroll the one and fix the other).
SCRIPTED = {"loop_branch"}


def ids(shape, vocab, gen):
    return torch.randint(0, vocab, shape, generator=gen, dtype=torch.int64)


def model_specs():
    g = torch.Generator().manual_seed(1234)
    bert_mask = torch.ones(2, 8, dtype=torch.int64)
    bert_mask[1, 6:] = 0  # padding in the second sequence
    return {
        "mlp": (MLP(), {"x": torch.randn(4, 32, generator=g)}, ["logits"], {"x": {0: "batch"}}),
        "lenet": (LeNet(), {"image": torch.randn(2, 1, 28, 28, generator=g)}, ["logits"], {"image": {0: "batch"}}),
        "bert": (Bert(), {"input_ids": ids((2, 8), 100, g), "attention_mask": bert_mask,
                          "token_type_ids": torch.cat([torch.zeros(2, 4, dtype=torch.int64),
                                                       torch.ones(2, 4, dtype=torch.int64)], 1)},
                 ["logits"], {k: {0: "batch", 1: "seq"} for k in ["input_ids", "attention_mask", "token_type_ids"]}),
        "gpt": (Gpt(), {"input_ids": ids((2, 8), 100, g), "labels": ids((2, 8), 100, g)}, ["loss", "logits"],
                {"input_ids": {0: "batch"}, "labels": {0: "batch"}}),
        "transformer_lm": (TransformerLM(), {"src": ids((8, 2), 100, g)}, ["logits"], {"src": {1: "batch"}}),
        "cnn_bn": (CnnBn(), {"image": torch.randn(4, 3, 12, 12, generator=g)}, ["logits"], {"image": {0: "batch"}}),
        "resize_bilinear": (Interpolate(scale_factor=(2, 1.5), mode="bilinear", align_corners=False),
                            {"x": torch.randn(1, 2, 3, 4, generator=g)}, ["y"], {}),
        "resize_bilinear_corners": (Interpolate(size=(5, 7), mode="bilinear", align_corners=True),
                                    {"x": torch.randn(1, 2, 3, 4, generator=g)}, ["y"], {}),
        "resize_nearest": (Interpolate(scale_factor=(2, 3), mode="nearest"),
                           {"x": torch.randn(1, 2, 3, 4, generator=g)}, ["y"], {}),
        "mobilenet_v3": (mobilenet_v3(), {"image": torch.randn(4, 3, 64, 64, generator=g)}, ["logits"],
                         {"image": {0: "batch"}}),
        # (New models go last: each draws its weights and inputs after the ones above.)
        "lstm_lm": (RecurrentLM(nn.LSTM, layers=2), {"ids": ids((2, 7), 50, g)}, ["logits"], {"ids": {0: "batch"}}),
        "gru_lm": (RecurrentLM(nn.GRU), {"ids": ids((2, 7), 50, g)}, ["logits"], {"ids": {0: "batch"}}),
        "bilstm_tagger": (RecurrentLM(nn.LSTM, bidirectional=True, tags=5), {"ids": ids((2, 7), 50, g)}, ["logits"],
                          {"ids": {0: "batch"}}),
        "loop_branch": (LoopBranch(), {"x": torch.randn(4, 5, 8, generator=g)}, ["logits"], {"x": {0: "batch"}}),
    }


def write_tensor(array, name, path):
    # (np.ascontiguousarray would turn a 0-d loss into shape [1])
    t = numpy_helper.from_array(np.array(array, order="C", copy=True), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def export(name, module, inputs, output_names, dynamic_axes, out_root):
    torch.manual_seed(0)
    training = name in TRAINING_MODE
    module.train(training)
    tmp = tempfile.mkdtemp(prefix=f".{name}.", dir=out_root)
    try:
        path = os.path.join(tmp, "model.onnx")
        args = tuple(inputs.values())
        exported = torch.jit.script(module) if name in SCRIPTED else module
        torch.onnx.export(exported, args, path, input_names=list(inputs), output_names=output_names,
                          dynamic_axes=dynamic_axes, opset_version=OPSET, do_constant_folding=not training,
                          training=torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL)
        with torch.no_grad():
            # A training-mode forward would update BatchNorm's running statistics; run a copy.
            outs = (copy.deepcopy(module) if training else module)(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        data = os.path.join(tmp, "test_data_set_0")
        os.makedirs(data)
        for k, v in inputs.items():
            write_tensor(v.numpy(), k, os.path.join(data, f"{k}.pb"))
        for i, (n, v) in enumerate(zip(output_names, outs)):
            write_tensor(v.numpy(), n, os.path.join(data, f"output_{i}.pb"))
        model = onnx.load(path)
        onnx.checker.check_model(model)
        foreign = sorted({f"{n.domain}::{n.op_type}" for n in model.graph.node if n.domain not in ("", "ai.onnx")})
        if foreign:
            raise RuntimeError(f"{name}: export produced ops outside the ONNX domain: {', '.join(foreign)}")
        ops = collections.Counter(n.op_type for n in model.graph.node)
        final = os.path.join(out_root, name)
        shutil.rmtree(final, ignore_errors=True)
        os.rename(tmp, final)
        print(f"{name}: {len(model.graph.node)} nodes, ops: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
        total = 0
        for dirpath, _, files in sorted(os.walk(final)):
            for f in sorted(files):
                size = os.path.getsize(os.path.join(dirpath, f))
                total += size
                print(f"  {os.path.relpath(os.path.join(dirpath, f), final)}: {size} B")
        print(f"  total: {total / 1024:.1f} KiB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "models"))
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    torch.manual_seed(0)
    for name, (module, inputs, outputs, dyn) in model_specs().items():
        if not only or name in only:
            export(name, module, inputs, outputs, dyn, args.out)


if __name__ == "__main__":
    main()
