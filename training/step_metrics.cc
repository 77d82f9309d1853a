#include "training/step_metrics.h"

#include <cmath>

#include "runtime/vector_ops.h"

namespace ort_train {

Result<double> loss_value(Device& device, const Tensor& loss) {
  ASSIGN_OR_RETURN(std::vector<double> v, loss_values(device, {loss}));
  return v[0];
}

Result<std::vector<double>> loss_values(Device& device, const std::vector<Tensor>& losses) {
  std::vector<Tensor> host;
  bool copied = false;
  for (const Tensor& loss : losses) {
    if (!dtype_is_float(loss.dtype()) || loss.numel() < 1)
      return invalid_argument("the loss must be a floating-point scalar, got {} {}", dtype_name(loss.dtype()),
                              dims_to_string(loss.dims()));
    if (loss.device() == DeviceKind::kCpu) {
      host.push_back(loss);
      continue;
    }
    host.push_back(Tensor::host(loss.dtype(), loss.dims()));
    RETURN_IF_ERROR(device.copy(loss, host.back()));  // queued: one synchronization for all
    copied = true;
  }
  if (copied) RETURN_IF_ERROR(device.synchronize());
  std::vector<double> values;
  for (const Tensor& t : host) values.push_back(float_element(t.dtype(), t.raw(), 0));
  return values;
}

Result<double> gradient_norm(Device& device, const std::vector<Tensor>& grads) {
  std::vector<Tensor> f32;
  double sq = 0;
  for (const Tensor& g : grads) {
    if (g.dtype() == DType::kFloat) {
      f32.push_back(g);
      continue;
    }
    if (!dtype_is_float(g.dtype()))
      return invalid_argument("a gradient of dtype {} has no norm", dtype_name(g.dtype()));
    ASSIGN_OR_RETURN(Tensor host, to_host(device, g));
    for (int64_t i = 0; i < host.numel(); ++i) {
      double v = float_element(host.dtype(), host.raw(), static_cast<size_t>(i));
      sq += v * v;
    }
  }
  if (!f32.empty()) {
    ASSIGN_OR_RETURN(VectorOps * math, vector_ops(device.kind()));
    ASSIGN_OR_RETURN(double n, math->global_norm(f32));
    sq += n * n;
  }
  return std::sqrt(sq);
}

}  // namespace ort_train
