#!/usr/bin/env bash
# Packs what a session needs to run the GPU tests and benchmarks on the lent
# GPU machine, which has the CUDA toolkit, cuDNN (pip's nvidia-cudnn-cu13),
# PyTorch and onnx but none of Debian's libraries and no network: the app, the
# test binary, the CUDA plugin, and every shared library they load that is
# neither glibc nor CUDA's, as gpu_bundle/ort_train_gpu.tar.xz. Name gpu_bundle in the device
# tool's `carry` (the folder is excluded from git here), then on the device:
#
#   mkdir -p /tmp/ot && tar xJf gpu_bundle/ort_train_gpu.tar.xz -C /tmp/ot && source /tmp/ot/env.sh
#   ort_train_tests "cuda.*"        # ORT_TRAIN_SOURCE_DIR points at the carried working tree
#   python3 bench/bench_gpu.py --ort-train /tmp/ot/bin/ort_train
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
out=gpu_bundle
rm -rf "$out" && mkdir -p "$out/stage/bin" "$out/stage/real" "$out/stage/lib"
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx "/$out/" "$exclude" 2>/dev/null || echo "/$out/" >> "$exclude"
bins=(build/ort_train build/tests/ort_train_tests build/tests/ort_train_communicator_check)
cp "${bins[@]}" "$out/stage/real/"
cp build/libort_train_cuda.so "$out/stage/lib/"  # the CUDA plugin: found in ../lib beside the binaries
strip "$out/stage/real/"* "$out/stage/lib/libort_train_cuda.so"
for bin in "${bins[@]}" build/libort_train_cuda.so; do
  ldd "$bin" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    # glibc, the C++ runtime (the target's is newer), CUDA's libraries and
    # NCCL (its PyPI wheel, 200 MB, is installed there) come from the target.
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++*|libgcc_s*|libcuda.so*|libcudart.so*|libcublas*|libcudnn*|libnccl*|libort_train_cuda*) ;;
    *) cp -L "$lib" "$out/stage/lib/" ;;
  esac
done
# Wrappers set the library path for the binaries only, so Python (PyTorch)
# beside them keeps its own libraries.
for bin in "${bins[@]}"; do
  name=$(basename "$bin")
  cat > "$out/stage/bin/$name" <<WRAP
#!/usr/bin/env bash
here=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")/.." && pwd)
wheels=\$(python3 -c 'import os, nvidia.cudnn, nvidia.nccl; print(":".join(os.path.join(list(m.__path__)[0], "lib") for m in (nvidia.cudnn, nvidia.nccl)))' 2>/dev/null || true)
export LD_LIBRARY_PATH="\$here/lib:\${wheels}:/usr/local/cuda/lib64:/usr/local/cuda/lib:\${LD_LIBRARY_PATH:-}"
exec "\$here/real/$name" "\$@"
WRAP
  chmod +x "$out/stage/bin/$name"
done
cat > "$out/stage/env.sh" <<'ENV'
# Sourced on the GPU machine from the repository root after unpacking.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$here/bin:$PATH"
export ORT_TRAIN_SOURCE_DIR="${ORT_TRAIN_SOURCE_DIR:-$PWD}"
export ORT_TRAIN_BINARY="$here/bin/ort_train"
ENV
# xz, not gzip: the bundle and the working tree travel together under 64 MiB.
XZ_OPT="-T0 -9" tar cJf "$out/ort_train_gpu.tar.xz" -C "$out/stage" .
rm -rf "$out/stage"
# The ONNX node tests for gpu_checks.sh's forward kernels on the GPU: the ones
# tools/make_node_tests.py made (CTest's conformance.make_node_tests) and
# ../shared's corpus where this checkout has it (4.6 MB packed; never committed).
cases=()
[ -d build/tests/node_tests ] && cases+=(-C "$PWD/build/tests" node_tests)
[ -d ../shared/conformance/onnx_node_tests ] && cases+=(-C "$(cd ../shared/conformance && pwd)" onnx_node_tests)
[ ${#cases[@]} -gt 0 ] && tar czf "$out/node_tests.tar.gz" "${cases[@]}"
ls -la "$out"
