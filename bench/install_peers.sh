#!/usr/bin/env bash
# Installs the peers bench/bench_peers.py compares ort_train with, into two
# virtual environments under .bench_venv/ (gitignored) at the repository root:
#
#   .bench_venv/ort    onnxruntime-training-cpu 1.19.2 (+ onnx 1.16.2, numpy 1.26.4)
#   .bench_venv/torch  PyTorch 2.x from PyPI (+ numpy 1.26.4, onnx 1.16.2,
#                      transformers 4.36.2 for the bert-base-hf workload)
#
# Two environments, not one: ONNX Runtime training's package __init__ imports
# torch when it is installed, which would put PyTorch's memory into the ORT
# process's peak RSS, and the two pin numpy independently.
#
#   bash bench/install_peers.sh [--python python3.11] [--force]
#
# Debian's PyTorch 1.13 (/usr/bin/python3, the 'torch-debian' peer) comes from
# `tools/install_deps.sh --python`, not from here. PyPI's torch wheel pulls in
# the CUDA libraries (about 5 GB); they are unused on CPU but accepted, so the
# peer is the torch a user gets from `pip install torch`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENVS="$ROOT/.bench_venv"
PYTHON="python3"
FORCE=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --python) PYTHON="$2"; shift 2 ;;
    --force) FORCE=1; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "install_peers.sh: unknown argument $1" >&2; exit 64 ;;
  esac
done

ORT_PACKAGES=(onnxruntime-training-cpu==1.19.2 onnx==1.16.2 numpy==1.26.4)
TORCH_PACKAGES=(torch numpy==1.26.4 onnx==1.16.2 transformers==4.36.2)

die() { echo "install_peers.sh: $*" >&2; exit 1; }

"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' 2>/dev/null ||
  die "$PYTHON is not Python 3.11 (onnxruntime-training-cpu 1.19.2 has wheels for 3.8-3.11); pass --python"

# PyPI torch with its CUDA wheels needs about 6 GB once unpacked, plus pip's cache.
avail_kb=$(df -Pk "$ROOT" | awk 'NR == 2 {print $4}')
echo "free disk at $ROOT: $((avail_kb / 1024 / 1024)) GiB"
(( avail_kb > 10 * 1024 * 1024 )) || die "less than 10 GiB free: not enough for PyPI torch (about 6 GB installed)"

# make_venv NAME PACKAGES...: creates $VENVS/NAME (unless it exists and --force
# is not given) and pip installs the packages into it.
make_venv() {
  local name="$1"; shift
  local venv="$VENVS/$name"
  if [[ -x "$venv/bin/python" && $FORCE == 0 ]]; then
    echo "== $venv exists; installing into it (pip skips what is already there)"
  else
    rm -rf "$venv"
    echo "== creating $venv with $("$PYTHON" --version) ($(command -v "$PYTHON"))"
    "$PYTHON" -m venv "$venv" || die "python -m venv $venv failed"
  fi
  echo "== pip install into $venv: $*"
  "$venv/bin/python" -m pip install --quiet --upgrade pip || die "upgrading pip in $venv failed"
  if ! "$venv/bin/python" -m pip install "$@"; then
    die "pip install $* into $venv failed (see pip's message above)"
  fi
}

make_venv ort "${ORT_PACKAGES[@]}"
make_venv torch "${TORCH_PACKAGES[@]}"

# Check that each peer imports the way bench_peers.py uses it.
echo "== checking the installs"
"$VENVS/ort/bin/python" - <<'EOF' || die "onnxruntime training does not import in .bench_venv/ort"
import os, sys, types
import onnxruntime, onnx, numpy
# onnxruntime/training/__init__.py imports torch (for ORTModule), which this venv
# leaves out: register the package without running it, as bench_peers.py does.
pkg = types.ModuleType("onnxruntime.training")
pkg.__path__ = [os.path.join(os.path.dirname(onnxruntime.__file__), "training")]
sys.modules["onnxruntime.training"] = pkg
from onnxruntime.training import artifacts, api  # noqa: F401
print(f"  .bench_venv/ort: onnxruntime {onnxruntime.__version__}, onnx {onnx.__version__}, numpy {numpy.__version__}")
EOF
"$VENVS/torch/bin/python" - <<'EOF' || die "torch does not import in .bench_venv/torch"
import torch, numpy, transformers
print(f"  .bench_venv/torch: torch {torch.__version__}, numpy {numpy.__version__}, "
      f"transformers {transformers.__version__}")
EOF
if /usr/bin/python3 -c 'import torch, onnx' 2>/dev/null; then
  echo "  /usr/bin/python3 (torch-debian): torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"
else
  echo "  /usr/bin/python3 has no torch/onnx: the torch-debian peer needs tools/install_deps.sh --python"
fi
echo "peers installed under $VENVS"
