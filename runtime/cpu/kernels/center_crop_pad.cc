// CPU kernel of CenterCropPad (any stored type): zero the output, then copy
// each output row's overlap with the input, row by row along the last dim
// (offsets from graph/ops/center_crop_pad.h).
#include <cstring>

#include "graph/ops/center_crop_pad.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status center_crop_pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Tensor& shape = ctx.input(1);
  ASSIGN_OR_RETURN(Dims out, center_crop_pad_dims(ctx.node(), x.dims(), shape.to_int64_vector()));
  if (out != y.dims())
    return shape_error("{}: output {} where the shape makes {}", ctx.node().describe(), dims_to_string(y.dims()),
                       dims_to_string(out));
  std::memset(y.raw(), 0, y.nbytes());
  const size_t rank = x.dims().size(), size = dtype_size(x.dtype());
  if (y.numel() == 0 || x.numel() == 0) return Status::Ok();
  if (rank == 0) {
    std::memcpy(y.raw(), x.raw(), size);
    return Status::Ok();
  }
  Dims offset(rank), in_strides(rank, 1);
  for (size_t d = 0; d < rank; ++d) offset[d] = center_crop_pad_offset(x.dims()[d], out[d]);
  for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * x.dims()[d];
  // The last dim's overlap: output [lo, hi) reads input [lo + offset, hi + offset).
  const int64_t last = static_cast<int64_t>(rank) - 1;
  const int64_t lo = std::max<int64_t>(0, -offset[last]);
  const int64_t hi = std::min(out[last], x.dims()[last] - offset[last]);
  if (hi <= lo) return Status::Ok();
  const auto* src = static_cast<const unsigned char*>(x.raw());
  auto* dst = static_cast<unsigned char*>(y.raw());
  Dims o(rank, 0);
  const int64_t rows = y.numel() / out[last];
  for (int64_t r = 0; r < rows; ++r) {
    int64_t in_off = 0;
    bool inside = true;
    for (int64_t d = 0; d < last && inside; ++d) {
      const int64_t i = o[d] + offset[d];
      inside = i >= 0 && i < x.dims()[d];
      in_off += i * in_strides[d];
    }
    if (inside)
      std::memcpy(dst + static_cast<size_t>(r * out[last] + lo) * size,
                  src + static_cast<size_t>(in_off + lo + offset[last]) * size, static_cast<size_t>(hi - lo) * size);
    for (int64_t d = last - 1; d >= 0; --d) {
      if (++o[d] < out[d]) break;
      o[d] = 0;
    }
  }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_KERNEL_FOR_DTYPES("", "CenterCropPad", 18, 1000, DeviceKind::kCpu, center_crop_pad, all_stored_dtypes());

}  // namespace ort_train
