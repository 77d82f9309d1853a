#!/usr/bin/env python3
"""--recompute on real exports: the examples' Hugging Face BERT and GPT-2
(Dropout 0.1, so the masks must be re-applied, not drawn again) and the tiny
Llama and T5 exports (tests/models/hf).

For each: 5 AdamW steps with --recompute layers give the loss trajectory
(and held-out loss, where the example has held-out data) of 5 steps without
it bit for bit, every layer is recomputed, and both the planned peak
activations and the measured peak intermediate memory go down. Then
--recompute auto with a --max-memory between the two plans recomputes some
layers but not all, and the plan fits. CTest: recompute.on_exports.

    recompute_on_exports.py --ort-train build/ort_train --source .
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

STEPS = 5


def run(ort_train, args, tmp, tag):
    metrics = os.path.join(tmp, tag + ".jsonl")
    cmd = [ort_train, "train"] + args + ["--optimizer", "AdamW", "--lr", "1e-3", "--steps", str(STEPS), "--device",
                                          "cpu", "--threads", "1", "--metrics", metrics,
                                          # separate processes compared bit for bit: attention's kernel pinned
                                          # rather than timed in each (runtime/kernel_choice.h)
                                          "--deterministic"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    text = out.stdout + out.stderr
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{text}")
    with open(metrics) as f:
        rows = [json.loads(line) for line in f]
    planned = re.search(r"planned peak: weights ([\d.]+) MiB \+ activations ([\d.]+) MiB", text)
    measured = re.search(r"peak memory: ([\d.]+) MiB", text)
    chosen = re.search(r"recompute \((\w+)\): (\d+) cheap-op nodes; (\d+) of (\d+) layers", text)
    return {"losses": [r.get("loss", r.get("eval_loss")) for r in rows], "weights": float(planned[1]),
            "planned": float(planned[2]), "measured": float(measured[1]),
            "chosen": (int(chosen[3]), int(chosen[4])) if chosen else None,
            "cheap": int(chosen[2]) if chosen else 0, "log": text}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--source", required=True, help="the project's source folder")
    a = ap.parse_args()
    src = os.path.abspath(a.source)
    tmp_root = tempfile.mkdtemp()
    # The example's description without its data: section (its NPZ files are
    # made by a script, absent from a clean clone) and model: (given by --model).
    bert_yaml = os.path.join(tmp_root, "bert.yaml")
    with open(os.path.join(src, "examples/bert/bert.yaml")) as f, open(bert_yaml, "w") as out:
        for line in f:
            if not line.startswith(("data:", "model:")):
                out.write(line)
    cases = {
        "examples/bert": ["--model", os.path.join(src, "examples/bert/bert.onnx"), "--config", bert_yaml, "--data",
                          "synthetic"],
        "examples/gpt2": ["--model", os.path.join(src, "examples/gpt2/gpt2.onnx"), "--data", "synthetic",
                          "--batch-size", "8", "--dim", "seq=64"],
    }
    for hf in ("llama_opset14", "t5_opset14"):  # T5: encoder and decoder blocks, cross-attention
        d = os.path.join(src, "tests/models/hf", hf)
        cases["hf " + hf] = ["--model", os.path.join(d, "model.onnx"), "--config", os.path.join(d, "training.yaml"),
                             "--data", os.path.join(d, "train_batches")]
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in cases.items():
            base = run(a.ort_train, args, tmp, "none")
            rc = run(a.ort_train, args + ["--recompute", "layers"], tmp, "layers")
            problems = []
            if rc["losses"] != base["losses"]:
                problems.append(f"losses differ: {base['losses']} vs {rc['losses']}")
            if not rc["chosen"] or rc["chosen"][0] != rc["chosen"][1] or rc["chosen"][1] < 2:
                problems.append(f"expected every layer (at least 2) recomputed, got {rc['chosen']}")
            if not rc["planned"] < base["planned"]:
                problems.append(f"planned peak activations not lower: {base['planned']} -> {rc['planned']} MiB")
            if not rc["measured"] < base["measured"]:
                problems.append(f"measured peak not lower: {base['measured']} -> {rc['measured']} MiB")
            print(f"{'FAIL' if problems else 'ok  '} {name}: {rc['chosen'][1] if rc['chosen'] else '?'} layers; "
                  f"planned peak activations {base['planned']:.2f} -> {rc['planned']:.2f} MiB, measured "
                  f"{base['measured']:.2f} -> {rc['measured']:.2f} MiB; {len(base['losses'])} losses bit-identical"
                  if not problems else f"FAIL {name}: " + "; ".join(problems))
            failed = failed or bool(problems)
            # Cheap ops (GELU, SiLU, LayerNorm, RMSNorm outputs) recomputed from inputs the backward keeps.
            ch = run(a.ort_train, args + ["--recompute", "cheap"], tmp, "cheap")
            ok = ch["cheap"] > 0 and ch["losses"] == base["losses"] and ch["planned"] < base["planned"]
            print(f"{'ok  ' if ok else 'FAIL'} {name} --recompute cheap: {ch['cheap']} nodes copied; planned "
                  f"peak activations {base['planned']:.2f} -> {ch['planned']:.2f} MiB, measured {base['measured']:.2f}"
                  f" -> {ch['measured']:.2f} MiB; losses {'bit-identical' if ch['losses'] == base['losses'] else 'differ'}")
            failed = failed or not ok
            if name == "examples/bert" and not problems:
                # A budget under what the cheap ops reach: they, and some layers, not all.
                budget = base["weights"] + ch["planned"] - 0.3 * (ch["planned"] - rc["planned"])
                auto = run(a.ort_train, args + ["--recompute", "auto", "--max-memory", f"{int(budget * 1048576)}"],
                           tmp, "auto")
                ok = (auto["chosen"] and 0 < auto["chosen"][0] < auto["chosen"][1] and
                      auto["weights"] + auto["planned"] <= budget and auto["losses"] == base["losses"])
                print(f"{'ok  ' if ok else 'FAIL'} {name} --recompute auto --max-memory {budget:.2f} MiB: "
                      f"{auto['chosen']} layers, planned {auto['weights']:.2f} + {auto['planned']:.2f} MiB, "
                      f"losses {'bit-identical' if auto['losses'] == base['losses'] else 'differ'}")
                failed = failed or not ok
    shutil.rmtree(tmp_root, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
