// CenterCropPad (opset 18): along each dim `axes` names (all by default) the
// input is cropped or zero-padded to `shape` about its centre, as ONNX's
// reference: output index o reads input index o + offset, where offset is
// (in - out) / 2 rounded down when cropping and -((out - in) / 2) when
// padding. Its gradient is CenterCropPad of dY back to the input's dims.
#pragma once
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"

namespace ort_train {

// Per dim of `in`: the output size. `shape` holds one size per axis.
Result<Dims> center_crop_pad_dims(const Node& node, const Dims& in, const Dims& shape);

// Output index o of a dim resized from `in` to `out` reads input index o + offset.
inline int64_t center_crop_pad_offset(int64_t in, int64_t out) {
  return in >= out ? (in - out) / 2 : -((out - in) / 2);
}

}  // namespace ort_train
