#!/usr/bin/env python3
"""Builds causal-language-model data for examples/gpt2 from the same Debian
license texts and the same 1024-id vocabulary as examples/bert
(make_mlm_data.py, whose reader and NPZ writer this reuses). Python's
standard library only.

    python3 examples/gpt2/make_lm_data.py [--out examples/gpt2/data] [--seq 64]

Writes <out>/train.npz and <out>/eval.npz (the last tenth held out), int64
input_ids, attention_mask and labels of shape [samples, seq]: windows of
consecutive words with labels equal to input_ids, since Hugging Face's
GPT2LMHeadModel shifts them itself to predict each next word; and
<out>/vocab.txt, the vocabulary one word a line, from which
tools/make_token_file.py writes the same words as an llm.c token file
(gpt2_tokens.yaml trains on it).
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bert"))
import make_mlm_data as text  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "data"))
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--texts", default=text.TEXTS)
    args = ap.parse_args()
    corpus = text.read_corpus(args.texts)
    vocab = text.SPECIALS + [w for w, _ in collections.Counter(corpus).most_common(text.VOCAB - len(text.SPECIALS))]
    index = {w: i for i, w in enumerate(vocab)}
    ids = [index.get(w, text.UNK) for w in corpus]
    split = len(ids) * 9 // 10
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(w + "\n" for w in vocab))
    for name, part in (("train", ids[:split]), ("eval", ids[split:])):
        windows = [part[s:s + args.seq] for s in range(0, len(part) - args.seq + 1, args.seq)]
        flat = [t for w in windows for t in w]
        cols = {"input_ids": flat, "attention_mask": [1] * len(flat), "labels": flat}
        text.write_npz(os.path.join(args.out, name + ".npz"), cols, len(windows), args.seq)
        print(f"{name}: {len(windows)} windows of {args.seq} words")


if __name__ == "__main__":
    main()
