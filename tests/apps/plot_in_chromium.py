#!/usr/bin/env python3
"""`ort_train plot` looked at in a real browser (CTest: apps.plot_in_chromium):
two short runs of the bundled MLP (one with a held-out evaluation) are
plotted together, headless Chromium renders the SVG to a PNG, and the PNG
must not be blank: enough non-white pixels, and both runs' colours present.
Also checks the SVG train writes beside --metrics. The PNG is decoded here
with the standard library (zlib and PNG's row filters). Exit 77 (skipped)
only where Chromium is missing (tools/install_deps.sh installs it).

    plot_in_chromium.py --ort-train build/ort_train --model-dir tests/models/mlp --work /tmp/x
"""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import zlib


def read_png(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path} is not a PNG")
    pos, idat, width = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                sys.exit(f"{path}: unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not chromium:
        print("ORT_TRAIN_TEST_SKIPPED: no Chromium (apt-get install chromium)")
        sys.exit(77)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    m, w = args.model_dir, args.work
    base = [args.ort_train, "--model", f"{m}/model.onnx", "--config", f"{m}/training.yaml", "--data",
            f"{m}/train_batches", "--steps", "30", "--device", "cpu", "--log-level", "warn"]
    subprocess.run(base + ["--eval-data", f"{m}/train_batches", "--metrics", f"{w}/slow.jsonl"], check=True)
    subprocess.run(base + ["--lr", "3e-3", "--metrics", f"{w}/fast.jsonl"], check=True)
    ok = os.path.getsize(f"{w}/slow.svg") > 1000  # train's own plot beside --metrics
    svg = f"{w}/both.svg"
    subprocess.run([args.ort_train, "plot", f"{w}/slow.jsonl", f"{w}/fast.jsonl", "-o", svg], check=True)
    png = f"{w}/both.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=900,830", f"--screenshot={png}", "file://" + os.path.abspath(svg)],
                   check=True, capture_output=True, timeout=120)
    width, height, rows = read_png(png)
    pixels = [p for row in rows for p in row]
    ink = sum(1 for p in pixels if p != (255, 255, 255)) / len(pixels)
    blue = sum(1 for p in pixels if abs(p[0] - 0x1f) < 30 and abs(p[1] - 0x77) < 30 and abs(p[2] - 0xb4) < 30)
    red = sum(1 for p in pixels if abs(p[0] - 0xd6) < 30 and abs(p[1] - 0x27) < 30 and abs(p[2] - 0x28) < 30)
    ok = ok and width == 900 and ink > 0.02 and blue > 200 and red > 200
    print(f"{png}: {width}x{height}, {ink:.1%} non-white, {blue} pixels of the first run's colour, {red} of the "
          f"second's: {'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
