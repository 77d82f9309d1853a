#include "graph/passes/weight_cast_hoisting.h"

#include <cstring>
#include <unordered_set>

#include "graph/passes/pass.h"
#include "numerics/cast_value.h"

namespace ort_train {
namespace {

constexpr const char* kCopyKey = "ort_train.weight_copy:";

template <typename Half>
void round_into(const Tensor& weight, Tensor& low) {
  const float* w = weight.data<float>();
  Half* out = low.data<Half>();
  for (int64_t k = 0; k < weight.numel(); ++k) out[k] = cast_value<float, Half>(w[k]);
}

class WeightCastHoisting : public Pass {
 public:
  std::string name() const override { return "weight_cast_hoisting"; }
  PassOrder order() const override { return {.phases = kStepPhase, .after = {"state_outputs"}, .required = true}; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    Graph& g = model.graph;
    std::unordered_set<std::string> outputs;
    for (const ValueInfo& v : g.outputs) outputs.insert(v.name);
    int64_t hoisted = 0;
    std::erase_if(g.nodes, [&](const Node& n) {
      if (n.op_type != "Cast" || !n.domain.empty() || n.inputs.size() != 1 || n.outputs.size() != 1 ||
          outputs.count(n.outputs[0]) || !ctx.is_pinned(n.inputs[0]) || !g.is_initializer(n.inputs[0]))
        return false;
      const Tensor& weight = g.initializers.at(n.inputs[0]);
      const DType to = static_cast<DType>(n.attr_int("to", 0));
      if (weight.dtype() != DType::kFloat || !dtype_is_half(to)) return false;
      // A weight that lives on a device is not read here: the copy starts as
      // zeros, which the trainer overwrites from the weight before the first step.
      Tensor low = Tensor::host(to, weight.dims());
      if (weight.device() != DeviceKind::kCpu) std::memset(low.raw(), 0, low.nbytes());
      else if (to == DType::kFloat16) round_into<Float16>(weight, low);
      else round_into<BFloat16>(weight, low);
      g.initializers[n.outputs[0]] = low;
      g.initializer_order.push_back(n.outputs[0]);
      model.metadata_props.emplace_back(kCopyKey + n.outputs[0], n.inputs[0]);
      ctx.note(n.inputs[0] + " -> " + n.outputs[0]);
      ++hoisted;
      return true;
    });
    ctx.count(hoisted);
    return hoisted > 0;
  }
};

ORT_REGISTER_PASS(WeightCastHoisting);

}  // namespace

std::vector<HoistedCopy> hoisted_weight_copies(const Model& model) {
  std::vector<HoistedCopy> copies;
  const std::string key = kCopyKey;
  for (const auto& [k, weight] : model.metadata_props)
    if (k.rfind(key, 0) == 0) copies.push_back({weight, k.substr(key.size())});
  return copies;
}

}  // namespace ort_train
