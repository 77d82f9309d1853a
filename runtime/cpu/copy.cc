#include "runtime/cpu/copy.h"

#include <algorithm>
#include <cstring>

#include "runtime/cpu/parallel.h"

namespace ort_train {

std::vector<int64_t> contiguous_strides(const Dims& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

namespace {

// Elements move as raw bits: calls f.template operator()<T>() with the unsigned type of
// `es` bytes. Every stored dtype is 1, 2, 4 or 8 bytes; others (size 0) have no data.
template <typename F>
void with_element_type(size_t es, F&& f) {
  switch (es) {
    case 1: f.template operator()<uint8_t>(); break;
    case 2: f.template operator()<uint16_t>(); break;
    case 4: f.template operator()<uint32_t>(); break;
    case 8: f.template operator()<uint64_t>(); break;
    default: break;
  }
}

template <typename T>
void copy_run(const char* src, int64_t ss, char* dst, int64_t ds, int64_t n) {
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  if (ss == 0 && ds == 1) {
    std::fill_n(d, n, *s);  // a broadcast run (Expand, Tile)
    return;
  }
  for (int64_t i = 0; i < n; ++i) d[i * ds] = s[i * ss];
}

void copy_elems(size_t es, const char* src, int64_t ss, char* dst, int64_t ds, int64_t n) {
  if (ss == 1 && ds == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
    return;
  }
  with_element_type(es, [&]<typename T>() { copy_run<T>(src, ss, dst, ds, n); });
}

// A transpose goes in tiles of 64x64 elements (both sides stay in cache), each in
// 4x4 blocks staged through a local array: the block's loads and stores are then
// contiguous runs of fixed length, which the compiler turns into vector shuffles.
constexpr int64_t kTile = 64;
constexpr int64_t kBlock = 4;

// A rows x cols block whose source is contiguous along rows and strided by `sc` along
// cols, into a destination contiguous along cols and strided by `dr` along rows.
template <typename T>
void transpose_tile(const T* s, int64_t sc, T* d, int64_t dr, int64_t rows, int64_t cols) {
  int64_t i = 0;
  for (; i + kBlock <= rows; i += kBlock) {
    int64_t j = 0;
    for (; j + kBlock <= cols; j += kBlock) {
      T block[kBlock][kBlock];
      for (int64_t jj = 0; jj < kBlock; ++jj)
        for (int64_t ii = 0; ii < kBlock; ++ii) block[jj][ii] = s[i + ii + (j + jj) * sc];
      for (int64_t ii = 0; ii < kBlock; ++ii)
        for (int64_t jj = 0; jj < kBlock; ++jj) d[(i + ii) * dr + j + jj] = block[jj][ii];
    }
    for (; j < cols; ++j)
      for (int64_t ii = 0; ii < kBlock; ++ii) d[(i + ii) * dr + j] = s[i + ii + j * sc];
  }
  for (; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) d[i * dr + j] = s[i + j * sc];
}

// strided_copy over merged dims when it is a transpose: the destination's inner run
// strides through the source while another dim (`row`) is the source's contiguous one.
// Without tiles each inner run would touch a new cache line per element.
bool tiled_transpose(size_t es, const Dims& dims, const char* s, const std::vector<int64_t>& ss, char* d,
                     const std::vector<int64_t>& ds) {
  size_t last = dims.size() - 1;
  if (ds[last] != 1 || ss[last] == 0 || ss[last] == 1) return false;
  size_t row = last;
  for (size_t k = 0; k < last; ++k)
    if (ss[k] == 1) row = k;
  // Thinner than a block, the plain strided loop is as good.
  if (row == last || dims[row] < kBlock || dims[last] < kBlock) return false;
  Dims batch;
  std::vector<int64_t> bss, bds;
  for (size_t k = 0; k < last; ++k)
    if (k != row) {
      batch.push_back(dims[k]);
      bss.push_back(ss[k]);
      bds.push_back(ds[k]);
    }
  int64_t rows = dims[row], cols = dims[last], sc = ss[last], dr = ds[row];
  int64_t col_tiles = (cols + kTile - 1) / kTile;
  int64_t tiles = (rows + kTile - 1) / kTile * col_tiles;
  auto ies = static_cast<int64_t>(es);
  with_element_type(es, [&]<typename T>() {
    parallel_for(num_elements(batch) * tiles, std::max<int64_t>(1, kElementwiseGrain / (kTile * kTile)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t t = b; t < e; ++t) {
                     int64_t rem = t / tiles, so = 0, dof = 0;
                     for (int64_t k = static_cast<int64_t>(batch.size()) - 1; k >= 0; --k) {
                       int64_t i = rem % batch[k];
                       rem /= batch[k];
                       so += i * bss[k];
                       dof += i * bds[k];
                     }
                     int64_t i0 = (t % tiles) / col_tiles * kTile, j0 = (t % tiles) % col_tiles * kTile;
                     transpose_tile<T>(reinterpret_cast<const T*>(s + (so + i0 + j0 * sc) * ies), sc,
                                       reinterpret_cast<T*>(d + (dof + i0 * dr + j0) * ies), dr,
                                       std::min(kTile, rows - i0), std::min(kTile, cols - j0));
                   }
                 });
  });
  return true;
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
  if (tiled_transpose(es, dims, s, ss, d, ds)) return;
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

void fill_elements(size_t es, void* dst, int64_t n, const void* value) {
  with_element_type(es, [&]<typename T>() {
    T v;
    std::memcpy(&v, value, sizeof(T));
    T* d = static_cast<T*>(dst);
    parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { std::fill(d + b, d + e, v); });
  });
}

void gather_by_tables(size_t es, const Dims& out_dims, const std::vector<std::vector<int64_t>>& tables,
                      const void* src, const Dims& src_dims, void* dst) {
  int64_t n = num_elements(out_dims);
  if (n == 0) return;
  int64_t rank = static_cast<int64_t>(out_dims.size());
  if (rank == 0) {
    std::memcpy(dst, src, es);
    return;
  }
  std::vector<int64_t> sstr = contiguous_strides(src_dims);
  int64_t inner = out_dims.back();
  int64_t outer = n / inner;
  const int64_t* last = tables.back().data();
  with_element_type(es, [&]<typename T>() {
    const T* s = static_cast<const T*>(src);
    T* d = static_cast<T*>(dst);
    parallel_for(outer, std::max<int64_t>(1, kElementwiseGrain / inner), [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
      int64_t rem = b;
      for (int64_t k = rank - 2; k >= 0; --k) {
        idx[k] = rem % out_dims[k];
        rem /= out_dims[k];
      }
      for (int64_t o = b; o < e; ++o) {
        const T* row = s;
        for (int64_t k = 0; k < rank - 1; ++k) row += tables[k][idx[k]] * sstr[k];
        T* out = d + o * inner;
        for (int64_t i = 0; i < inner; ++i) out[i] = row[last[i]];
        for (int64_t k = rank - 2; k >= 0; --k) {
          if (++idx[k] < out_dims[k]) break;
          idx[k] = 0;
        }
      }
    });
  });
}

}  // namespace ort_train
