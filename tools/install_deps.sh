#!/usr/bin/env bash
# Installs the Debian packages ort_train builds and tests with, only when missing.
# Usage: tools/install_deps.sh [--tests] [--fuzz] [--python] [--cluster]
#   --tests: what only the test suite needs (Chromium for the plot screenshot,
#            the tensorboard package for the event-file round trip, Slurm for
#            the cluster tests)
#   --fuzz: clang with libFuzzer and its OpenMP runtime (tools/fuzz.sh, the sanitizer build)
#   --python: the reference-data tools' packages (PyTorch, onnx, numpy)
#   --cluster: Slurm and munge, which the cluster tests start on this one node
#              (tools/slurm_local.sh) to run the sbatch example under srun
set -euo pipefail
pkgs=(build-essential cmake ccache pkg-config
      libonnx-dev libprotobuf-dev protobuf-compiler
      libcli11-dev libspdlog-dev libfmt-dev catch2
      libyaml-cpp-dev nlohmann-json3-dev zlib1g-dev
      libopenblas-dev libopenblas0-openmp libdnnl-dev libopenmpi-dev openmpi-bin python3 help2man)
tests=0
for arg in "$@"; do
  case $arg in
    --tests) tests=1; pkgs+=(chromium slurm-wlm munge) ;;  # the plot screenshot test renders the SVG in a real browser
    --fuzz) pkgs+=(clang libclang-rt-14-dev libomp-dev) ;;
    --cluster) pkgs+=(slurm-wlm munge) ;;
    --python) pkgs+=(python3-torch python3-torchvision python3-onnx python3-numpy) ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# NCCL (GPU data parallelism) is not a Debian package: PyPI ships it. Only
# where CUDA is installed and NCCL is not; a failure leaves a build without it.
if [[ -x /usr/local/cuda/bin/nvcc && ! -f /usr/local/cuda/include/nccl.h ]] &&
   ! python3 -c "import nvidia.nccl" 2>/dev/null; then
  echo "installing NCCL from PyPI (nvidia-nccl-cu13)"
  python3 -m pip install --quiet nvidia-nccl-cu13 || echo "NCCL not installed: GPU ranks will reduce over MPI"
fi
# The tensorboard package (PyPI) reads back --tensorboard's event files in the
# round-trip test; ort_train itself never needs it.
if ((tests)) && ! python3 -c "import tensorboard" 2>/dev/null; then
  echo "installing tensorboard from PyPI (for the --tensorboard round-trip test)"
  python3 -m pip install --quiet tensorboard || echo "tensorboard not installed: apps.tensorboard_roundtrip will be skipped"
fi
# lizard (PyPI) measures the functions' lengths for
# architecture.no_function_over_100_lines; ort_train itself never needs it.
if ((tests)) && ! python3 -c "import lizard" 2>/dev/null; then
  echo "installing lizard from PyPI (for the function-size test)"
  python3 -m pip install --quiet lizard==1.24.3 || echo "lizard not installed: architecture.no_function_over_100_lines will be skipped"
fi
