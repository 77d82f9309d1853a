#include "runtime/cpu/copy.h"

#include <cstring>

#include "runtime/cpu/parallel.h"

namespace ort_train {

std::vector<int64_t> contiguous_strides(const Dims& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

namespace {

template <typename T>
void copy_run(const char* src, int64_t ss, char* dst, int64_t ds, int64_t n) {
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i * ds] = s[i * ss];
}

void copy_elems(size_t es, const char* src, int64_t ss, char* dst, int64_t ds, int64_t n) {
  if (ss == 1 && ds == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
    return;
  }
  switch (es) {
    case 1: copy_run<uint8_t>(src, ss, dst, ds, n); break;
    case 2: copy_run<uint16_t>(src, ss, dst, ds, n); break;
    case 4: copy_run<uint32_t>(src, ss, dst, ds, n); break;
    case 8: copy_run<uint64_t>(src, ss, dst, ds, n); break;
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds * es, src + i * ss * es, es);
  }
}

}  // namespace

void strided_copy(size_t es, const Dims& dims_in, const void* src, const std::vector<int64_t>& ss_in, void* dst,
                  const std::vector<int64_t>& ds_in) {
  // Drop size-1 dims and merge dims that are contiguous with their inner neighbour on both sides.
  Dims dims;
  std::vector<int64_t> ss, ds;
  for (size_t i = 0; i < dims_in.size(); ++i) {
    if (dims_in[i] == 0) return;
    if (dims_in[i] == 1) continue;
    if (!dims.empty() && ss.back() == ss_in[i] * dims_in[i] && ds.back() == ds_in[i] * dims_in[i]) {
      dims.back() *= dims_in[i];
      ss.back() = ss_in[i];
      ds.back() = ds_in[i];
      continue;
    }
    dims.push_back(dims_in[i]);
    ss.push_back(ss_in[i]);
    ds.push_back(ds_in[i]);
  }
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  if (dims.empty()) {
    std::memcpy(d, s, es);
    return;
  }
  int64_t rank = static_cast<int64_t>(dims.size());
  int64_t inner = dims.back();
  int64_t outer = num_elements(dims) / inner;
  parallel_for(outer, std::max<int64_t>(1, kElementwiseGrain / inner), [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(static_cast<size_t>(rank - 1));
    int64_t rem = b, so = 0, dof = 0;
    for (int64_t k = rank - 2; k >= 0; --k) {
      idx[k] = rem % dims[k];
      rem /= dims[k];
      so += idx[k] * ss[k];
      dof += idx[k] * ds[k];
    }
    for (int64_t o = b; o < e; ++o) {
      copy_elems(es, s + so * static_cast<int64_t>(es), ss.back(), d + dof * static_cast<int64_t>(es), ds.back(), inner);
      for (int64_t k = rank - 2; k >= 0; --k) {
        ++idx[k];
        so += ss[k];
        dof += ds[k];
        if (idx[k] < dims[k]) break;
        so -= ss[k] * dims[k];
        dof -= ds[k] * dims[k];
        idx[k] = 0;
      }
    }
  });
}

void gather_by_tables(size_t es, const Dims& out_dims, const std::vector<std::vector<int64_t>>& tables,
                      const void* src, const Dims& src_dims, void* dst, const void* fill) {
  int64_t n = num_elements(out_dims);
  if (n == 0) return;
  std::vector<char> zero(es, 0);
  const char* f = fill ? static_cast<const char*>(fill) : zero.data();
  std::vector<int64_t> sstr = contiguous_strides(src_dims);
  int64_t rank = static_cast<int64_t>(out_dims.size());
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  if (rank == 0) {
    std::memcpy(d, s, es);
    return;
  }
  int64_t inner = out_dims.back();
  int64_t outer = n / inner;
  const std::vector<int64_t>& last = tables.back();
  parallel_for(outer, std::max<int64_t>(1, kElementwiseGrain / inner), [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
    int64_t rem = b;
    for (int64_t k = rank - 2; k >= 0; --k) {
      idx[k] = rem % out_dims[k];
      rem /= out_dims[k];
    }
    for (int64_t o = b; o < e; ++o) {
      int64_t base = 0;
      bool filled = false;
      for (int64_t k = 0; k < rank - 1; ++k) {
        int64_t t = tables[k][idx[k]];
        if (t < 0) filled = true;
        base += t * sstr[k];
      }
      char* out = d + o * inner * static_cast<int64_t>(es);
      for (int64_t i = 0; i < inner; ++i) {
        int64_t t = last[i];
        const char* from = (filled || t < 0) ? f : s + (base + t) * static_cast<int64_t>(es);
        std::memcpy(out + i * static_cast<int64_t>(es), from, es);
      }
      for (int64_t k = rank - 2; k >= 0; --k) {
        if (++idx[k] < out_dims[k]) break;
        idx[k] = 0;
      }
    }
  });
}

}  // namespace ort_train
