#!/usr/bin/env bash
# A new user's first steps as the README gives them, run by tools/test.sh
# after the suite: the main job (tools/main.sh: build, then train the bundled
# model), then `cmake --install` into a prefix, then the installed program.
# The install once failed right after the main job (issue 51): main.sh built
# only the program, not the completion the install copies.
set -euo pipefail
cd "$(dirname "$0")/../.."
log=$(mktemp)
prefix=$(mktemp -d)
trap 'rm -rf "$log" "$prefix"' EXIT
bash tools/main.sh > "$log" 2>&1 || { tail -40 "$log"; echo "FAIL: tools/main.sh"; exit 1; }
grep -E 'held-out \(' "$log" | tail -1
[[ -f build/char_lm/trained.onnx ]] || { echo "FAIL: the main job wrote no build/char_lm/trained.onnx"; exit 1; }
cmake --install build --prefix "$prefix" > "$log" 2>&1 || { cat "$log"; echo "FAIL: cmake --install right after tools/main.sh"; exit 1; }
for f in bin/ort_train share/bash-completion/completions/ort_train; do
  [[ -e "$prefix/$f" ]] || { echo "FAIL: $f was not installed"; exit 1; }
done
if command -v help2man > /dev/null && [[ ! -e "$prefix/share/man/man1/ort_train.1" ]]; then
  echo "FAIL: the man page was not installed"; exit 1
fi
"$prefix/bin/ort_train" --version > /dev/null
echo "ok: tools/main.sh, then cmake --install into a prefix ($(cd "$prefix" && find . -type f | wc -l) files), then the installed ort_train"
