#!/usr/bin/env bash
# The main job on a fresh machine: install, build, then run the bundled default.
# Until training lands, the default is a forward run of the bundled BERT-style
# encoder on its bundled inputs, checked against the outputs PyTorch produced.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
model=tests/models/bert
./build/ort_train run --model "$model/model.onnx" --inputs "$model/test_data_set_0" \
  --outputs build/main_outputs --rtol 1e-4 --atol 1e-5 --repeat 10
echo "outputs written to build/main_outputs/"
