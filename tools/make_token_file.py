#!/usr/bin/env python3
"""Writes an LLM token file from text: llm.c's layout (a header of 256
int32: magic 20240520, version 1, the token count; then uint16 token ids),
which `ort_train --data FILE.bin` reads in windows of seq + 1 tokens
(spec section 3). Standard library only.

    python3 tools/make_token_file.py --out build/tokens/train.bin [--texts DIR] [--vocab chars|VOCAB.txt]
                                     [--min-mb N] [--eval-out eval.bin]

--vocab chars (default): the README main job's characters, printable ASCII
from space as ids 0..95 (anything else a space), as tools/make_text_dataset.py
maps them. --vocab VOCAB.txt: one token per line, its line number its id;
text is cut into lowercase words, numbers and single punctuation marks (as
examples/bert/make_mlm_data.py cuts it, whose vocab.txt examples/gpt2 shares),
and a word not in it becomes [UNK] (or id 1).

--min-mb N repeats the text until the file holds at least N MiB (a large file
from a small corpus, for measuring). --eval-out also writes every tenth
1,000-token block to a held-out file, left out of the training file.
"""
import argparse
import array
import os
import re
import sys

BLOCK = 1000


def read_texts(folder):
    seen, texts = set(), []
    for name in sorted(os.listdir(folder)):
        path = os.path.realpath(os.path.join(folder, name))
        if path in seen or not os.path.isfile(path):  # GPL -> GPL-3 and such are links
            continue
        seen.add(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            texts.append(f.read())
    return texts


def tokenize(texts, vocab):
    if vocab == "chars":
        text = " ".join(" ".join(t.split()) for t in texts)
        return [ord(c) - 32 if 32 <= ord(c) < 128 else 0 for c in text]
    with open(vocab, encoding="utf-8") as f:
        index = {w.rstrip("\n"): i for i, w in enumerate(f)}
    unk = index.get("[UNK]", 1)
    if len(index) > 65536:
        raise SystemExit(f"{vocab}: {len(index)} tokens do not fit uint16 ids")
    return [index.get(w, unk) for t in texts for w in re.findall(r"[a-z]+|[0-9]+|[^\sa-z0-9]", t.lower())]


def write_llmc(path, tokens, min_bytes):
    """The header, then `tokens` as many times as it takes to reach min_bytes."""
    body = array.array("H", tokens).tobytes()
    repeats = max(1, -(-min_bytes // max(len(body), 1)))
    count = len(tokens) * repeats
    if count >= 2 ** 31:
        raise SystemExit(f"{count} tokens: llm.c's header counts at most 2^31 - 1")
    header = array.array("i", [20240520, 1, count] + [0] * 253).tobytes()
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(header)
        for _ in range(repeats):
            f.write(body)
    os.replace(tmp, path)  # never a half-written file where a complete one was
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--texts", default="/usr/share/common-licenses")
    ap.add_argument("--vocab", default="chars")
    ap.add_argument("--min-mb", type=float, default=0)
    ap.add_argument("--eval-out")
    args = ap.parse_args()
    if not os.path.isdir(args.texts):
        sys.exit(f"{args.texts}: no such folder of texts")
    tokens = tokenize(read_texts(args.texts), args.vocab)
    if len(tokens) < 10 * BLOCK:
        sys.exit(f"too little text under {args.texts} ({len(tokens)} tokens)")
    train, held = tokens, []
    if args.eval_out:
        blocks = [tokens[i:i + BLOCK] for i in range(0, len(tokens), BLOCK)]
        train = [t for i, b in enumerate(blocks) if i % 10 != 9 for t in b]
        held = [t for i, b in enumerate(blocks) if i % 10 == 9 for t in b]
    for path in (args.out, args.eval_out):
        if path and os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
    n = write_llmc(args.out, train, int(args.min_mb * 2 ** 20))
    print(f"{args.out}: {n} tokens ({os.path.getsize(args.out) / 2**20:.1f} MiB)")
    if args.eval_out:
        n = write_llmc(args.eval_out, held, 0)
        print(f"{args.eval_out}: {n} tokens")


if __name__ == "__main__":
    main()
