#!/usr/bin/env python3
"""Exports the BERT of examples/bert: Hugging Face's BertForMaskedLM with its
own MLM loss, as users export it (torch.onnx.export in training mode, opset
14), randomly initialised from a seed, with the vocabulary of
make_mlm_data.py (1024 ids) and sequence length 64.

    /usr/bin/python3 -m venv --system-site-packages .venv-hf
    .venv-hf/bin/pip install transformers==4.36.2
    .venv-hf/bin/python examples/bert/export_bert.py [--size small|base] [--out examples/bert/bert.onnx]

`small` (the committed examples/bert/bert.onnx): 2 layers, hidden 64, 2
heads, feed-forward 256, about 0.3M parameters. `base`: BERT-base's shape
(12 layers, hidden 768, 12 heads, feed-forward 3072) with this vocabulary,
about 86M parameters. Dropout is Hugging Face's default 0.1.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from export_hf_models import WithLoss, export_lm  # noqa: E402  (shared with the tests' exports)

VOCAB, SEQ = 1024, 64


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", choices=["small", "base"], default="small")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "bert.onnx"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from transformers import BertConfig, BertForMaskedLM
    sizes = {"small": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256),
             "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)}
    torch.manual_seed(args.seed)
    model = WithLoss(BertForMaskedLM(BertConfig(vocab_size=VOCAB, max_position_embeddings=SEQ, **sizes[args.size])))
    ids = torch.randint(5, VOCAB, (2, SEQ))
    mask = torch.ones(2, SEQ, dtype=torch.int64)
    labels = torch.full((2, SEQ), -100, dtype=torch.int64)
    labels[:, 1] = ids[:, 1]
    tmp = args.out + ".tmp"
    export_lm(model, (ids, mask, labels), tmp, 14)
    os.replace(tmp, args.out)
    params = sum(p.numel() for p in model.parameters())
    print(f"{args.out}: BertForMaskedLM ({args.size}), {params / 1e6:.2f}M parameters, "
          f"{os.path.getsize(args.out) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
