// One gradient element's unscaling for --precision fp16 (GradScaler's
// unscale_): the element is checked before it is multiplied, so an inf or NaN
// anywhere marks the step, and is multiplied by 1/scale (left as it is when
// that is 1). The CPU's vector ops and the GPU's kernel both run this.
#pragma once
#include <cmath>

#include "numerics/host_device.h"

namespace ort_train {

ORT_HOST_DEVICE float unscale_element(float v, float inv_scale, bool& non_finite) {
  if (!std::isfinite(v)) non_finite = true;
  return inv_scale == 1.f ? v : v * inv_scale;
}

}  // namespace ort_train
