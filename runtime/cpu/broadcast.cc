#include "runtime/cpu/broadcast.h"

#include <algorithm>

namespace ort_train {

std::vector<int64_t> broadcast_strides(const Dims& in, const Dims& out) {
  std::vector<int64_t> s(out.size(), 0);
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(in.size()) - 1, o = static_cast<int64_t>(out.size()) - 1; i >= 0;
       --i, --o) {
    s[static_cast<size_t>(o)] = in[static_cast<size_t>(i)] == 1 ? 0 : stride;
    stride *= in[static_cast<size_t>(i)];
  }
  return s;
}

Dims broadcast_dims(const std::vector<const Dims*>& dims) {
  size_t rank = 0;
  for (const Dims* d : dims) rank = std::max(rank, d->size());
  Dims out(rank, 1);
  for (const Dims* d : dims)
    for (size_t i = 0; i < d->size(); ++i) {
      int64_t& o = out[rank - d->size() + i];
      int64_t v = (*d)[i];
      if (v != 1) o = v;  // a 0-sized dim wins over 1
    }
  return out;
}

}  // namespace ort_train
