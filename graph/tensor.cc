#include "graph/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "graph/dispatch.h"

namespace ort_train {

std::shared_ptr<Storage> Storage::host(size_t bytes) {
  // 64-byte alignment keeps vectorized kernels and BLAS on their fast paths.
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  // Out of memory (or past RLIMIT_AS): the executor turns this into an error
  // naming the node, the app into one message; never a write through null.
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return std::make_shared<Storage>(p, bytes, DeviceKind::kCpu, [](void* q) { std::free(q); });
}

std::shared_ptr<Storage> Storage::view(const std::shared_ptr<Storage>& parent, size_t offset, size_t bytes) {
  void* p = parent->data() ? static_cast<char*>(parent->data()) + offset : nullptr;
  return std::make_shared<Storage>(p, bytes, parent->device(), [keep = parent](void*) {});
}

void Storage::move_into(const std::shared_ptr<Storage>& parent, size_t offset, size_t bytes) {
  void* dst = static_cast<char*>(parent->data()) + offset;
  if (bytes > 0 && dst != ptr_) std::memcpy(dst, ptr_, bytes);
  if (deleter_) deleter_(ptr_);
  ptr_ = dst;
  bytes_ = bytes;
  deleter_ = [keep = parent](void*) {};
}

std::optional<uint64_t> checked_nbytes(DType dtype, const Dims& dims) {
  uint64_t bytes = dtype_size(dtype);
  if (bytes == 0) return std::nullopt;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) return std::nullopt;
  return bytes;
}

int64_t num_elements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n = mul_saturating(n, d);
  return n;
}

std::string dims_to_string(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

Tensor Tensor::host(DType dtype, Dims dims) {
  size_t bytes = static_cast<size_t>(num_elements(dims)) * dtype_size(dtype);
  return Tensor(dtype, std::move(dims), Storage::host(bytes));
}

Tensor Tensor::clone() const {
  Tensor t = host(dtype_, dims_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  dispatch_all(dtype_, [&]<typename T>() {
    const T* p = data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(p[i]);
  });
  return out;
}

std::vector<double> Tensor::to_double_vector() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  dispatch_stored(dtype_, [&]<typename T>() {
    const T* p = data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) out[i] = static_cast<float>(p[i]);
      else out[i] = static_cast<double>(p[i]);
    }
  });
  return out;
}

void Tensor::normalize_bools() {
  if (dtype_ != DType::kBool || !storage_) return;
  auto* p = static_cast<uint8_t*>(raw());
  for (int64_t i = 0; i < numel(); ++i) p[i] = p[i] != 0;
}

}  // namespace ort_train
