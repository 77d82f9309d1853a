#include "apps/training_setup.h"

#include <spdlog/spdlog.h>

#include "graph/onnx_io.h"

namespace ort_train::app {

Result<Setup> load_setup(const SetupArgs& args) {
  Setup s;
  if (!args.config.empty()) {
    ASSIGN_OR_RETURN(s.desc, load_description(args.config));
  }
  s.model_path = !args.model.empty() ? args.model : s.desc.model;
  if (s.model_path.empty()) return invalid_argument("no model: give --model or `model:` in the description");
  if (args.batch_size > 0) s.desc.batch_size = args.batch_size;
  if (s.desc.batch_size && !s.desc.dims.count("batch")) s.desc.dims["batch"] = *s.desc.batch_size;
  ASSIGN_OR_RETURN(s.forward, load_model(s.model_path));
  return s;
}

int64_t count_elements(const Model& m, const std::vector<std::string>& names) {
  int64_t n = 0;
  for (const auto& name : names) n += m.graph.initializers.at(name).numel();
  return n;
}

void log_training_graph(const TrainingGraph& tg) {
  const GradientGraph& gg = tg.gradients;
  size_t forward = forward_node_count(tg);
  spdlog::info("training graph: {} forward + loss nodes, {} backward nodes; loss '{}'; built in {:.1f} ms", forward,
               tg.model.graph.nodes.size() - forward, gg.loss, tg.build_ms);
  spdlog::info("parameters: {} trainable tensors ({} elements), {} frozen tensors ({} elements)", gg.trainable.size(),
               count_elements(tg.model, gg.trainable), tg.frozen.size(), count_elements(tg.model, tg.frozen));
  for (const auto& w : gg.unreached)
    spdlog::warn("initializer '{}' has no differentiable path to the loss: it gets no gradient", w);
  for (const auto& glob : tg.unused_globs) spdlog::warn("trainable.exclude glob '{}' matches no initializer", glob);
}

}  // namespace ort_train::app
