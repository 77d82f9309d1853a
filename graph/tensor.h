// A dense, contiguous, row-major tensor: dtype + dims + shared storage.
// The IR keeps initializer and constant values in this type and the runtime
// computes in it, so an initializer feeds a kernel without a copy. Storage
// knows its device; only CPU storage may be read through data<T>() on the host.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graph/dtype.h"

namespace ort_train {

enum class DeviceKind { kCpu = 0, kCuda = 1 };

// A block of device memory; the deleter returns it to whoever allocated it.
class Storage {
 public:
  Storage(void* ptr, size_t bytes, DeviceKind device, std::function<void(void*)> deleter)
      : ptr_(ptr), bytes_(bytes), device_(device), deleter_(std::move(deleter)) {}
  ~Storage() {
    if (deleter_) deleter_(ptr_);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  DeviceKind device() const { return device_; }
  // Plain heap storage on the CPU (zero-initialized), for values that live outside any plan.
  static std::shared_ptr<Storage> host(size_t bytes);
  // `bytes` of `parent` starting at `offset`, on the parent's device; the view
  // keeps the parent alive (a parameter store's flat buffer outlives every
  // tensor that views it).
  static std::shared_ptr<Storage> view(const std::shared_ptr<Storage>& parent, size_t offset, size_t bytes);
  // Re-points this storage at `bytes` of `parent` from `offset` (same device),
  // after copying its first `bytes` there, and frees its own buffer: every
  // tensor sharing this storage now reads and writes the parent's bytes.
  // How the parameter store takes over the model's parameters without a
  // second copy. Views made of this storage before would dangle: call it
  // only on storage nothing views.
  void move_into(const std::shared_ptr<Storage>& parent, size_t offset, size_t bytes);

 private:
  void* ptr_;
  size_t bytes_;
  DeviceKind device_;
  std::function<void(void*)> deleter_;
};

using Dims = std::vector<int64_t>;

// The product of the dims, saturating at INT64_MAX: dims come from files, and
// a count that large is refused later against the memory budget, never wrapped.
int64_t num_elements(const Dims& dims);
// a * b with the same saturation, for the shape rules' size arithmetic.
inline int64_t mul_saturating(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
// The bytes a tensor of `dtype` and `dims` needs, in 64 bits; nullopt when a
// dim is negative, the dtype is not stored (dtype_size 0) or the product
// overflows. For sizes read from files, checked before anything is allocated.
std::optional<uint64_t> checked_nbytes(DType dtype, const Dims& dims);
std::string dims_to_string(const Dims& dims);

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Dims dims, std::shared_ptr<Storage> storage)
      : dtype_(dtype), dims_(std::move(dims)), storage_(std::move(storage)) {}
  // A new zero-filled host tensor.
  static Tensor host(DType dtype, Dims dims);
  template <typename T>
  static Tensor from_vector(Dims dims, const std::vector<T>& values);
  static Tensor scalar_f32(float v) { return from_vector<float>({}, {v}); }

  bool defined() const { return storage_ != nullptr || dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t dim(int64_t i) const { return dims_[static_cast<size_t>(i < 0 ? i + rank() : i)]; }
  int64_t numel() const { return num_elements(dims_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  DeviceKind device() const { return storage_ ? storage_->device() : DeviceKind::kCpu; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  void* raw() const { return storage_ ? storage_->data() : nullptr; }
  template <typename T>
  T* data() const { return static_cast<T*>(raw()); }
  template <typename T>
  std::span<T> span() const { return {data<T>(), static_cast<size_t>(numel())}; }

  // Same storage, new dims (element count must match).
  Tensor reshaped(Dims dims) const { return Tensor(dtype_, std::move(dims), storage_); }
  // Deep copy into fresh host storage.
  Tensor clone() const;
  // Reads an integer tensor (any integer dtype) as int64 values.
  std::vector<int64_t> to_int64_vector() const;
  // Reads a float/double/int tensor as double values.
  std::vector<double> to_double_vector() const;
  // Makes every byte of a host bool tensor read from a file 0 or 1 (any
  // non-zero byte is true, as in C and numpy's astype): a byte of 2..255 read
  // as a bool is undefined behaviour. Other dtypes are left alone.
  void normalize_bools();

 private:
  DType dtype_ = DType::kUndefined;
  Dims dims_;
  std::shared_ptr<Storage> storage_;
};

template <typename T>
Tensor Tensor::from_vector(Dims dims, const std::vector<T>& values) {
  Tensor t = host(dtype_of<T>(), std::move(dims));
  T* p = t.data<T>();
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.numel()); ++i) p[i] = values[i];
  return t;
}

}  // namespace ort_train
