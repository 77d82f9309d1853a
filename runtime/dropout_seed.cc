#include "runtime/dropout_seed.h"

#include <cstring>

#include "numerics/counter_random.h"

namespace ort_train {

// The step advances an explicit seed, so every training step draws afresh and
// the same (seed, step) draws the same values (recompute, a resumed run).
uint64_t dropout_seed(const KernelContext& ctx) {
  const Attribute* a = ctx.node().attr("seed");
  if (!a) return ctx.random_seed();
  uint64_t attr_seed = static_cast<uint64_t>(a->i);
  if (a->type == Attribute::Type::kFloat) {  // the random ops' seed is a float attribute
    uint32_t bits;
    std::memcpy(&bits, &a->f, sizeof bits);
    attr_seed = bits;
  }
  return mix64(attr_seed ^ (ctx.options().step * 0x9E3779B97F4A7C15ull));
}

}  // namespace ort_train
