#!/usr/bin/env python3
"""--precision bf16 and fp16 against fp32 on the two examples' real training
runs: the held-out loss each reaches, and the difference as a percentage.

    python3 bench/precision_convergence.py [--ort-train build/ort_train] [--threads 2]

Runs (each three times, --precision fp32, bf16, fp16 with its default loss
scaling, the same seed and data):
  char_lm  the README's main job: examples/char_lm/char_lm.yaml, 1500 AdamW
           steps on the license texts (tools/make_text_dataset.py writes the
           data into a temporary folder)
  bert     examples/bert/bert.yaml's model and data (make_mlm_data.py) with
           the README's headline settings: Lamb, lr 1e-4, 10 epochs of batch 8
Prints a Markdown table: final held-out loss in each precision and the
relative difference; the goal is within 1%. (Speed is bench_peers.py's.)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")


def last_eval(metrics):
    rows = [json.loads(line) for line in open(metrics) if line.strip()]
    evals = [r["eval_loss"] for r in rows if "eval_loss" in r]
    if not evals:
        sys.exit(f"{metrics}: no held-out loss")
    return evals[-1], len([r for r in rows if "loss" in r])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ort-train", default=os.path.join(ROOT, "build", "ort_train"))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    ot = args.ort_train
    with tempfile.TemporaryDirectory() as tmp:
        run([sys.executable, os.path.join(ROOT, "tools", "make_text_dataset.py"), "--out", tmp])
        bert_data = os.path.join(tmp, "bert")
        run([sys.executable, os.path.join(ROOT, "examples", "bert", "make_mlm_data.py"), "--out", bert_data])
        jobs = {
            "char_lm": [ot, "--log-level", "warn", "--config", os.path.join(ROOT, "examples/char_lm/char_lm.yaml"),
                        "--data", os.path.join(tmp, "train.npz"), "--eval-data", os.path.join(tmp, "eval.npz"),
                        "--device", "cpu", "--threads", str(args.threads)],
            "bert": [ot, "--log-level", "warn", "--model", os.path.join(ROOT, "examples/bert/bert.onnx"),
                     "--optimizer", "Lamb", "--lr", "1e-4", "--data", os.path.join(bert_data, "train.npz"),
                     "--eval-data", os.path.join(bert_data, "eval.npz"), "--epochs", "10", "--device", "cpu",
                     "--threads", str(args.threads)],
        }
        rows = []
        for name, cmd in jobs.items():
            got = {}
            for precision in ("fp32", "bf16", "fp16"):
                metrics = os.path.join(tmp, f"{name}_{precision}.jsonl")
                run(cmd + ["--precision", precision, "--metrics", metrics])
                got[precision] = last_eval(metrics)
            (f_loss, steps), (b_loss, _), (h_loss, _) = got["fp32"], got["bf16"], got["fp16"]
            rows.append(f"| {name} | {steps} | {f_loss:.4f} | {b_loss:.4f} | {100 * (b_loss - f_loss) / f_loss:+.2f}% | "
                        f"{h_loss:.4f} | {100 * (h_loss - f_loss) / f_loss:+.2f}% |")
    print(f"Command: `python3 bench/precision_convergence.py --threads {args.threads}`\n")
    print("| example | steps | held-out loss fp32 | bf16 | bf16 vs fp32 | fp16 | fp16 vs fp32 |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
