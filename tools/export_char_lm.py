#!/usr/bin/python3
"""Exports the model of the README's main job: a character-level GPT
(tools/export_models.py's Gpt: vocabulary 96 printable ASCII characters,
hidden 64, 2 layers, 4 heads, contexts up to 64) that computes its own
next-character cross-entropy from `input_ids` and `labels` (the same window;
the model shifts). Writes examples/char_lm/model.onnx (opset 17, dynamic batch
and sequence length), seeded. Needs PyTorch (run with /usr/bin/python3).
"""
import os
import sys

import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import Gpt  # noqa: E402


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "char_lm", "model.onnx")
    torch.manual_seed(0)
    model = Gpt(vocab=96, hidden=64, layers=2, heads=4, max_pos=64).eval()
    ids = torch.randint(0, 96, (2, 32))
    dyn = {"input_ids": {0: "batch", 1: "seq"}, "labels": {0: "batch", 1: "seq"}}
    torch.onnx.export(model, (ids, ids), out, input_names=["input_ids", "labels"], output_names=["loss", "logits"],
                      dynamic_axes=dyn, opset_version=17, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(out))
    print(f"wrote {out}: {os.path.getsize(out)} bytes")


if __name__ == "__main__":
    main()
