#!/usr/bin/env python3
"""LoRA against full fine-tuning of the same model (examples/lora): runs
ort_train twice on examples/bert (bert_lora.yaml, then the same description
without lora:) for the same steps and prints what trains, the median step
time and the peak RSS of each.

    python3 examples/lora/compare.py [--ort-train build/ort_train] [--steps 60]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(ort_train, config, steps, tmp, tag):
    metrics = os.path.join(tmp, f"{tag}.jsonl")
    out = subprocess.run([ort_train, "--config", config, "--steps", str(steps), "--metrics", metrics,
                          "--log-every", str(steps)], capture_output=True, text=True, check=True)
    log = out.stdout + out.stderr
    rows = [r for r in map(json.loads, open(metrics)) if "step_ms" in r]  # evaluation rows aside
    step_ms = statistics.median(r["step_ms"] for r in rows[len(rows) // 2:])  # the settled half
    rss = float(re.search(r"peak RSS ([0-9.]+) MiB", log).group(1))
    trains = re.search(r"parameters: (\d+) trainable tensors \((\d+) elements\), (\d+) frozen tensors \((\d+) elements\)",
                       log)
    lora = re.search(r"trainable%: ([0-9.]+)", log)
    return {"step_ms": step_ms, "rss": rss, "trainable": int(trains.group(2)), "last_loss": rows[-1]["loss"],
            "fraction": float(lora.group(1)) if lora else 100.0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ort-train", default=os.path.join(HERE, "..", "..", "build", "ort_train"))
    ap.add_argument("--steps", type=int, default=60)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lora_cfg = os.path.join(HERE, "bert_lora.yaml")
        full_cfg = os.path.join(tmp, "bert_full.yaml")
        text = open(lora_cfg).read()
        text = re.sub(r"\nlora:\n(  .*\n)+", "\n", text).replace("../bert/", os.path.join(HERE, "..", "bert") + "/")
        with open(full_cfg, "w") as f:
            f.write(text)
        lora = run(args.ort_train, lora_cfg, args.steps, tmp, "lora")
        full = run(args.ort_train, full_cfg, args.steps, tmp, "full")
    print(f"{'':24}{'LoRA (r 8, q and v)':>22}{'full fine-tuning':>20}")
    print(f"{'trainable parameters':24}{lora['trainable']:>22,}{full['trainable']:>20,}")
    print(f"{'trainable %':24}{lora['fraction']:>22.3f}{full['fraction']:>20.1f}")
    print(f"{'median step (ms)':24}{lora['step_ms']:>22.2f}{full['step_ms']:>20.2f}")
    print(f"{'peak RSS (MiB)':24}{lora['rss']:>22.1f}{full['rss']:>20.1f}")
    print(f"{'loss after the steps':24}{lora['last_loss']:>22.4f}{full['last_loss']:>20.4f}")


if __name__ == "__main__":
    main()
