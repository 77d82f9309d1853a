// Gradient rules of RNN, GRU and LSTM: the forward becomes com.ort_train
// {RNN,GRU,LSTM}Training, which also writes `saved` (each step's gate
// pre-activations, hidden state and cell extra, graph/ops/recurrent.h), and
// one {RNN,GRU,LSTM}Grad node backpropagates through time over it, giving
// every differentiable input's gradient at once.
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

std::function<Status(GradientContext&)> recurrent_rule(const std::string& cell) {
  return [cell](GradientContext& c) -> Status {
    const bool lstm = cell == "LSTM";
    const size_t forward_inputs = lstm ? 8 : 6, forward_outputs = lstm ? 3 : 2;
    RETURN_IF_ERROR(c.as_training_form(cell + "Training"));
    ASSIGN_OR_RETURN(std::string saved, c.ensure_output(forward_outputs));
    std::vector<std::string> inputs;
    for (size_t i = 0; i < forward_inputs; ++i) inputs.push_back(c.has_input(i) ? c.I(i) : "");
    inputs.push_back(saved);
    for (size_t i = 0; i < forward_outputs; ++i) inputs.push_back(c.has_GO(i) ? c.GO(i) : "");
    ASSIGN_OR_RETURN(auto grads, c.add(cell + "Grad", inputs, forward_inputs, c.node().attributes, kOrtTrainDomain));
    // No output for sequence_lens' slot nor for inputs the model left out.
    std::vector<std::string>& outs = c.builder().model().graph.nodes.back().outputs;
    for (size_t i = 0; i < forward_inputs; ++i)
      if (i == 4 || !c.has_input(i)) outs[i].clear();
    for (size_t i = 0; i < forward_inputs; ++i)
      if (i != 4 && c.needs_GI(i)) c.set_GI(i, grads[i]);
    return Status::Ok();
  };
}

}  // namespace

// sequence_lens (input 4) holds lengths: no gradient.
ORT_GRADIENT("RNN").no_gradient_for({4}).rule(recurrent_rule("RNN"));
ORT_GRADIENT("GRU").no_gradient_for({4}).rule(recurrent_rule("GRU"));
ORT_GRADIENT("LSTM").no_gradient_for({4}).rule(recurrent_rule("LSTM"));

}  // namespace ort_train
