#!/usr/bin/env python3
"""Makes the README main job's data set from text a Debian package ships: the
license texts under /usr/share/common-licenses (package base-files, on every
Debian system). Characters map to ids 0..95 (printable ASCII from space;
anything else becomes a space); the text is cut into windows of --seq
characters, 90% of the windows for training and every tenth for evaluation,
written as NumPy .npz files (input_ids and labels, int64 [N, seq]; labels equal
input_ids because the model shifts them) by the standard library alone.

    python3 tools/make_text_dataset.py --out build/char_lm [--seq 32]
"""
import argparse
import glob
import io
import os
import struct
import zipfile


def npy_bytes(rows, seq):
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d, %d), }" % (len(rows), seq)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    body = b"".join(struct.pack("<%dq" % seq, *r) for r in rows)
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + body


def write_npz(path, rows, seq):
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
        data = npy_bytes(rows, seq)
        z.writestr("input_ids.npy", data)
        z.writestr("labels.npy", data)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--source", default="/usr/share/common-licenses")
    args = ap.parse_args()
    text = ""
    for f in sorted(glob.glob(os.path.join(args.source, "*"))):
        if os.path.isfile(f) and not os.path.islink(f):
            with io.open(f, encoding="utf-8", errors="replace") as fh:
                text += " ".join(fh.read().split()) + " "
    if len(text) < 10000:
        raise SystemExit(f"too little text under {args.source} ({len(text)} characters)")
    ids = [ord(c) - 32 if 32 <= ord(c) < 128 else 0 for c in text]
    windows = [ids[i:i + args.seq] for i in range(0, len(ids) - args.seq, args.seq)]
    train = [w for i, w in enumerate(windows) if i % 10 != 9]
    held = [w for i, w in enumerate(windows) if i % 10 == 9]
    os.makedirs(args.out, exist_ok=True)
    write_npz(os.path.join(args.out, "train.npz"), train, args.seq)
    write_npz(os.path.join(args.out, "eval.npz"), held, args.seq)
    print(f"{len(text)} characters -> {len(train)} training and {len(held)} held-out windows of {args.seq}")


if __name__ == "__main__":
    main()
