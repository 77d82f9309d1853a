#!/usr/bin/env bash
# cmake --install into a fresh prefix (CTest tools.install_runs_from_its_prefix):
# the program in bin/, its plugins in lib/, the man page and the bash
# completion; then the installed program trains the bundled MLP from the
# prefix alone, and under mpirun (2 ranks) loads the MPI plugin from lib/.
set -euo pipefail
build=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" || { cat "$work/install.log"; exit 1; }
fail=0
for f in bin/ort_train share/bash-completion/completions/ort_train; do
  [[ -e "$work/prefix/$f" ]] || { echo "FAIL: $f was not installed"; fail=1; }
done
if [[ -e "$build/ort_train.1" && ! -e "$work/prefix/share/man/man1/ort_train.1" ]]; then
  echo "FAIL: the man page was not installed"; fail=1
fi
if [[ -e "$build/libort_train_mpi.so" && ! -e "$work/prefix/lib/libort_train_mpi.so" ]]; then
  echo "FAIL: the MPI plugin was not installed"; fail=1
fi
if [[ -e "$build/libort_train_cuda.so" && ! -e "$work/prefix/lib/libort_train_cuda.so" ]]; then
  echo "FAIL: the CUDA plugin was not installed"; fail=1
fi
((fail)) && exit 1
mlp="$source_dir/tests/models/mlp"
run=(--log-level warn --model "$mlp/model.onnx" --config "$mlp/training.yaml" --data "$mlp/train_batches"
     --optimizer Adam --steps 2 --device cpu --threads 1)
# The build folder must not be what makes it work: run from elsewhere.
(cd "$work" && "$work/prefix/bin/ort_train" "${run[@]}") || { echo "FAIL: the installed ort_train did not train"; exit 1; }
if [[ -e "$work/prefix/lib/libort_train_mpi.so" ]] && command -v mpirun > /dev/null; then
  (cd "$work" && mpirun --allow-run-as-root --oversubscribe -np 2 "$work/prefix/bin/ort_train" "${run[@]}") ||
    { echo "FAIL: the installed ort_train did not train under mpirun"; exit 1; }
fi
echo "ok: installed into a prefix ($(cd "$work/prefix" && find . -type f | wc -l) files), trained from it"
