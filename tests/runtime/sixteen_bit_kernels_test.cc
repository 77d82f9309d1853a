// "Runs in 16 bits" is one trait on the op's schema (kSixteenBitInput,
// graph/op_schema.h), read by half_activations; here both kernel tables are
// held to it: every op with the trait has bfloat16 and float16 kernels on the
// CPU and, in a build with the CUDA plugin, on the GPU.
#include <set>

#include "graph/op_schema.h"
#include "runtime/device.h"
#include "runtime/kernel.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

TEST_CASE("sixteen_bit: every op whose schema runs in 16 bits has 16-bit kernels on both devices") {
  std::vector<DeviceKind> devices = {DeviceKind::kCpu};
  if (has_cuda_kernels()) devices.push_back(DeviceKind::kCuda);
  std::set<std::string> traited;
  for (const OpSchema* s : OpRegistry::instance().all()) {
    if (sixteen_bit_inputs(s->traits, 16).empty()) continue;
    traited.insert((s->domain.empty() ? "" : s->domain + ".") + s->op_type);
    for (DeviceKind device : devices)
      for (DType low : {DType::kBFloat16, DType::kFloat16}) {
        INFO(s->op_type << " (opset " << s->min_opset << ") on " << (device == DeviceKind::kCuda ? "cuda" : "cpu") << " for " << dtype_name(low));
        CHECK(KernelRegistry::instance().find(s->domain, s->op_type, s->min_opset, device, low) != nullptr);
      }
  }
  // What half_activations followed before the trait: the trait holds them all.
  for (const char* op : {"Relu", "Tanh", "Sigmoid", "Neg", "Gelu", "Dropout", "Reshape", "Flatten", "Squeeze",
                         "Unsqueeze", "Identity", "Transpose", "Add", "Sub", "Mul", "Div", "Sum", "com.ort_train.Gelu",
                         "com.ort_train.Silu", "com.ort_train.Attention"}) {
    INFO(op);
    CHECK(traited.count(op) == 1);
  }
}

TEST_CASE("sixteen_bit: the trait names the inputs a 16-bit run reads in 16 bits") {
  auto inputs = [](const std::string& domain, const std::string& op, size_t n) {
    return sixteen_bit_inputs(OpRegistry::instance().traits(domain, op), n);
  };
  CHECK(inputs("", "Dropout", 3) == std::vector<size_t>{0});  // not the ratio or the training mode
  CHECK(inputs("", "Sum", 4) == std::vector<size_t>{0, 1, 2, 3});
  CHECK(inputs("", "Reshape", 2) == std::vector<size_t>{0});  // not the shape
  CHECK(inputs(kOrtTrainDomain, "Attention", 5) == std::vector<size_t>{0, 1, 2});  // Q, K, V; not the bias or mask
  CHECK(inputs("", "Softmax", 1).empty());
  CHECK(inputs("", "LayerNormalization", 3).empty());
}

}  // namespace
}  // namespace ort_train::testing
