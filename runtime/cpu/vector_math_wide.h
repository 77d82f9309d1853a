// The AVX2 and AVX-512 bodies of runtime/cpu/vector_math.h, each in its own
// file compiled for that instruction set (CMakeLists.txt), so nothing else
// in the binary needs more than x86-64-v2. Called only once the CPU is known
// to have the instructions.
#pragma once
#include <cstdint>

namespace ort_train::wide {

enum class MathFn { kExp, kTanh, kErf };

void apply_avx2(MathFn fn, const float* x, float* y, int64_t n);
void apply_avx512(MathFn fn, const float* x, float* y, int64_t n);

}  // namespace ort_train::wide
