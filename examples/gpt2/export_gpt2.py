#!/usr/bin/env python3
"""Exports the GPT-2 of examples/gpt2: Hugging Face's GPT2LMHeadModel with its
own causal-LM loss (torch.onnx.export in training mode, opset 14), randomly
initialised from a seed, with the 1024-id vocabulary of the text examples
and 64 positions.

    .venv-hf/bin/python examples/gpt2/export_gpt2.py [--size small|base] [--out examples/gpt2/gpt2.onnx]

`small` (committed): 2 layers, 64 wide, 2 heads. `base`: GPT-2 small's shape
(12 layers, 768 wide, 12 heads) with this vocabulary. Dropout is Hugging
Face's default 0.1. Setting up the venv: examples/bert/export_bert.py.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from export_hf_models import WithLoss, export_lm  # noqa: E402

VOCAB, SEQ = 1024, 64


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", choices=["small", "base"], default="small")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpt2.onnx"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from transformers import GPT2Config, GPT2LMHeadModel
    sizes = {"small": dict(n_embd=64, n_layer=2, n_head=2), "base": dict(n_embd=768, n_layer=12, n_head=12)}
    torch.manual_seed(args.seed)
    model = WithLoss(GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=SEQ, **sizes[args.size])))
    ids = torch.randint(5, VOCAB, (2, SEQ))
    mask = torch.ones(2, SEQ, dtype=torch.int64)
    tmp = args.out + ".tmp"
    export_lm(model, (ids, mask, ids), tmp, 14)
    os.replace(tmp, args.out)
    params = sum(p.numel() for p in model.parameters())
    print(f"{args.out}: GPT2LMHeadModel ({args.size}), {params / 1e6:.2f}M parameters, "
          f"{os.path.getsize(args.out) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
