#!/usr/bin/env bash
# The main job on a fresh machine: install, build, then train the bundled
# character-level GPT (examples/char_lm) on the license texts Debian ships in
# /usr/share/common-licenses, on the GPU when one is usable (else the CPU),
# and report the held-out perplexity. About two minutes on 2 cores; the trained model is written to build/char_lm/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
python3 tools/make_text_dataset.py --out build/char_lm
./build/ort_train --config examples/char_lm/char_lm.yaml \
  --data build/char_lm/train.npz --eval-data build/char_lm/eval.npz \
  --metrics build/char_lm/metrics.jsonl --checkpoint-dir build/char_lm/checkpoints --save-every 500 \
  --export build/char_lm/trained.onnx
echo "trained model: build/char_lm/trained.onnx; per-step metrics: build/char_lm/metrics.jsonl"
