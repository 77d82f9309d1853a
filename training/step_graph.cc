#include "training/step_graph.h"

#include <algorithm>
#include <set>

#include "graph/passes/pass_manager.h"
#include "graph/passes/state_outputs.h"
#include "graph/passes/weight_cast_hoisting.h"
#include "graph/reachability.h"

namespace ort_train {

Result<StepGraph> build_step_graph(const TrainingGraph& tg) { return build_step_graph(tg, tg.model); }

Result<StepGraph> build_step_graph(const TrainingGraph& tg, const Model& model) {
  StepGraph step;
  Model m = model;  // tensors are shared, not copied
  // 1 and 2 (step_graph.h): the state outputs, then the hoisted weight copies.
  PassManagerOptions passes;
  passes.passes = {};  // the step phase's passes are required ones (graph/passes/pass.h)
  passes.phase = kStepPhase;
  const std::set<std::string> trainable(tg.gradients.trainable.begin(), tg.gradients.trainable.end());
  RETURN_IF_ERROR(run_passes(m, trainable, passes).status().with_context("the step graph"));
  step.state_writebacks = state_writebacks(m.graph);
  step.hoisted = hoisted_weight_copies(m);
  // 3. The loss, the gradients and the state outputs, and what they need.
  std::vector<std::string> outputs = {tg.gradients.loss};
  for (const std::string& w : tg.gradients.trainable) outputs.push_back(tg.gradients.gradient.at(w));
  for (const auto& [out, init] : step.state_writebacks)
    if (std::find(outputs.begin(), outputs.end(), out) == outputs.end()) outputs.push_back(out);
  ASSIGN_OR_RETURN(step.model, extract_subgraph(m, outputs));
  return step;
}

bool is_classification(const LossSpec& loss) {
  return loss.type == "softmax_cross_entropy" || loss.type == "nll";
}

Result<Model> build_eval_graph(const TrainingGraph& tg) {
  std::vector<std::string> outputs{tg.gradients.loss};
  if (is_classification(tg.loss)) outputs.push_back(tg.loss.input);
  return extract_subgraph(tg.model, outputs);
}

}  // namespace ort_train
