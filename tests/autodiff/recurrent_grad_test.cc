// Finite-difference checks of RNN, GRU and LSTM's gradient (backpropagation
// through time over the training form's saved state): every differentiable
// input (X, W, R, B, the initial states, LSTM's peepholes) in each direction,
// both layouts, sequences shorter than T, clip, GRU's linear_before_reset,
// LSTM's input_forget and activations other than the defaults.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

struct Layer {
  const char* cell;
  int64_t directions = 1;
  std::string direction = "forward";
  int64_t layout = 0;
  bool lens = false;
  std::vector<Attribute> extra = {};
};

Attribute strings(const char* name, std::vector<std::string> v) {
  Attribute a;
  a.name = name;
  a.type = Attribute::Type::kStrings;
  a.strings = std::move(v);
  return a;
}

std::function<NodeSpec(Rng&)> layer(Layer l) {
  return [l](Rng& r) {
    const std::string cell = l.cell;
    const int64_t G = cell == "LSTM" ? 4 : (cell == "GRU" ? 3 : 1), T = 3, B = 2, I = 3, H = 2, D = l.directions;
    Dims x = l.layout == 0 ? Dims{T, B, I} : Dims{B, T, I};
    Dims state = l.layout == 0 ? Dims{D, B, H} : Dims{B, D, H};
    NodeSpec s{.op = l.cell, .inputs = {r.uniform(x), r.uniform({D, G * H, I}, -0.6, 0.6),
                                        r.uniform({D, G * H, H}, -0.6, 0.6), r.uniform({D, 2 * G * H}, -0.3, 0.3)}};
    Tensor lens;
    if (l.lens) lens = make<int32_t>({B}, {3, 1});
    s.inputs.push_back(lens);
    s.inputs.push_back(r.uniform(state));
    if (cell == "LSTM") {
      s.inputs.push_back(r.uniform(state));
      s.inputs.push_back(r.uniform({D, 3 * H}, -0.5, 0.5));
    }
    s.num_outputs = cell == "LSTM" ? 3 : 2;
    s.attributes = {Attribute::make_int("hidden_size", H), Attribute::make_string("direction", l.direction)};
    if (l.layout) s.attributes.push_back(Attribute::make_int("layout", 1));
    s.attributes.insert(s.attributes.end(), l.extra.begin(), l.extra.end());
    s.opset = 14;
    return s;
  };
}

GRAD_CASE("LSTM", {"LSTM forward, bias, initial states, peepholes", layer({"LSTM"})});
GRAD_CASE("LSTM", {"LSTM bidirectional, layout 1, sequence_lens",
                   layer({"LSTM", 2, "bidirectional", 1, true})});
GRAD_CASE("LSTM", {"LSTM reverse, input_forget, clip, sequence_lens",
                   layer({"LSTM", 1, "reverse", 0, true,
                          {Attribute::make_int("input_forget", 1), Attribute::make_float("clip", 2.5f)}})});
GRAD_CASE("LSTM", {"LSTM activations Sigmoid Softsign ScaledTanh",
                   layer({"LSTM", 1, "forward", 0, false,
                          {strings("activations", {"Sigmoid", "Softsign", "ScaledTanh"}),
                           [] { Attribute a; a.name = "activation_alpha"; a.type = Attribute::Type::kFloats;
                                a.floats = {1.5f}; return a; }(),
                           [] { Attribute a; a.name = "activation_beta"; a.type = Attribute::Type::kFloats;
                                a.floats = {0.7f}; return a; }()}})});
GRAD_CASE("GRU", {"GRU forward", layer({"GRU"})});
GRAD_CASE("GRU", {"GRU linear_before_reset, bidirectional, sequence_lens",
                  layer({"GRU", 2, "bidirectional", 0, true, {Attribute::make_int("linear_before_reset", 1)}})});
GRAD_CASE("GRU", {"GRU reverse, layout 1", layer({"GRU", 1, "reverse", 1, false})});
GRAD_CASE("RNN", {"RNN bidirectional, sequence_lens", layer({"RNN", 2, "bidirectional", 0, true})});
GRAD_CASE("RNN", {"RNN Softplus, layout 1", layer({"RNN", 1, "forward", 1, false,
                                                   {strings("activations", {"Softplus"})}})});

}  // namespace

TEST_CASE("gradcheck.recurrent") { check_registered({"RNN", "GRU", "LSTM"}); }

}  // namespace ort_train::testing
