// Function multiversioning for hot float loops: GCC compiles the function
// three times (AVX-512, AVX2, and the build's x86-64-v2 baseline) and the
// loader picks one by the CPU (an ifunc), so the auto-vectorized loop runs at
// the widest width the machine has while the binary still runs anywhere.
// AVX-512 has fused multiply-add, so the core is built with
// -ffp-contract=off (CMakeLists.txt): no a*b+c is fused, and each clone
// computes the baseline's IEEE operations, bit for bit. Other compilers get
// the baseline only.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ORT_TRAIN_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ORT_TRAIN_SIMD_CLONES
#endif
