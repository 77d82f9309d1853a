#!/usr/bin/env python3
"""Builds masked-language-model data for examples/bert from text every Debian
machine has (/usr/share/common-licenses: the GPL, Apache, MPL, ... texts).
Python's standard library only.

    python3 examples/bert/make_mlm_data.py [--out examples/bert/data] [--seq 64] [--seed 0]

Writes <out>/train.npz and <out>/eval.npz (the last tenth of the text, held
out), each with int64 arrays input_ids, attention_mask, labels of shape
[samples, seq], and <out>/vocab.txt. The vocabulary is simple: 5 special
tokens ([PAD] [UNK] [CLS] [SEP] [MASK]) and the 1019 most frequent words and
punctuation marks, lowercased: 1024 ids, the model's vocab_size. Masking is
BERT's: 15% of the word positions are predicted; of those, 80% become
[MASK], 10% a random word, 10% stay. Labels are -100 elsewhere (the loss
ignores them, as Hugging Face's does).
"""
import argparse
import array
import collections
import os
import random
import re
import zipfile

VOCAB = 1024
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, UNK, CLS, SEP, MASK = range(5)
TEXTS = "/usr/share/common-licenses"


def words(text):
    return re.findall(r"[a-z]+|[0-9]+|[^\sa-z0-9]", text.lower())


def read_corpus(folder):
    seen, out = set(), []
    for name in sorted(os.listdir(folder)):
        path = os.path.realpath(os.path.join(folder, name))
        if path in seen or not os.path.isfile(path):  # GPL -> GPL-3 and such are links
            continue
        seen.add(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            out.extend(words(f.read()))
    return out


def npy(values, rows, cols):
    """One int64 .npy file's bytes (format 1.0), little-endian, C order."""
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    data = array.array("q", values)
    if data.itemsize != 8:
        raise SystemExit("this Python's array('q') is not 8 bytes")
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1") + data.tobytes()


def write_npz(path, arrays, rows, cols):
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
        for name, values in arrays.items():
            z.writestr(name + ".npy", npy(values, rows, cols))
    os.replace(tmp, path)  # never a half-written file where a complete one was


def samples(ids, seq, rng):
    """Windows of seq-2 words between [CLS] and [SEP], masked as BERT's pretraining does."""
    step = seq - 2
    cols = {"input_ids": [], "attention_mask": [], "labels": []}
    n = 0
    for start in range(0, len(ids) - step + 1, step):
        window = ids[start:start + step]
        tokens, labels = [CLS], [-100]
        for t in window:
            if rng.random() < 0.15:
                labels.append(t)
                r = rng.random()
                tokens.append(MASK if r < 0.8 else (rng.randrange(len(SPECIALS), VOCAB) if r < 0.9 else t))
            else:
                labels.append(-100)
                tokens.append(t)
        tokens.append(SEP)
        labels.append(-100)
        cols["input_ids"] += tokens
        cols["attention_mask"] += [1] * seq
        cols["labels"] += labels
        n += 1
    return cols, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "data"))
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--texts", default=TEXTS)
    args = ap.parse_args()
    corpus = read_corpus(args.texts)
    counts = collections.Counter(corpus)
    vocab = SPECIALS + [w for w, _ in counts.most_common(VOCAB - len(SPECIALS))]
    index = {w: i for i, w in enumerate(vocab)}
    ids = [index.get(w, UNK) for w in corpus]
    split = len(ids) * 9 // 10
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    for name, part in (("train", ids[:split]), ("eval", ids[split:])):
        cols, n = samples(part, args.seq, rng)
        write_npz(os.path.join(args.out, name + ".npz"), cols, n, args.seq)
        print(f"{name}: {n} samples of {args.seq} tokens")
    with open(os.path.join(args.out, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab) + "\n")
    unk = sum(1 for t in ids if t == UNK) / max(len(ids), 1)
    print(f"{len(corpus)} words from {args.texts}; vocabulary {len(vocab)} ids ({unk:.1%} of words unknown)")


if __name__ == "__main__":
    main()
