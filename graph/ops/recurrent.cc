// Shape rules of RNN, GRU and LSTM, of their training forms (com.ort_train
// {RNN,GRU,LSTM}Training: a `saved` output more) and of their gradients
// (com.ort_train {RNN,GRU,LSTM}Grad), and the attribute reading all share.
#include "graph/ops/recurrent.h"

#include "graph/control_flow.h"

#include "graph/op_schema.h"

namespace ort_train {
namespace {

Result<RnnActivation> activation_kind(const std::string& name, const Node& node) {
  static const std::pair<const char*, RnnActivation> kNames[] = {
      {"Sigmoid", RnnActivation::kSigmoid}, {"Tanh", RnnActivation::kTanh}, {"Relu", RnnActivation::kRelu},
      {"Affine", RnnActivation::kAffine}, {"LeakyRelu", RnnActivation::kLeakyRelu},
      {"ThresholdedRelu", RnnActivation::kThresholdedRelu}, {"ScaledTanh", RnnActivation::kScaledTanh},
      {"HardSigmoid", RnnActivation::kHardSigmoid}, {"Elu", RnnActivation::kElu},
      {"Softsign", RnnActivation::kSoftsign}, {"Softplus", RnnActivation::kSoftplus}};
  for (const auto& [n, k] : kNames)
    if (name == n) return k;
  return unsupported("{}: activation '{}' is not one ONNX's recurrent layers define", node.describe(), name);
}

// ONNX Runtime's defaults for an activation whose alpha/beta the lists leave out.
void default_alpha_beta(RnnActivationFn& f) {
  switch (f.kind) {
    case RnnActivation::kLeakyRelu: f.alpha = 0.01f; break;
    case RnnActivation::kThresholdedRelu: case RnnActivation::kElu: f.alpha = 1.f; break;
    case RnnActivation::kScaledTanh: f.alpha = 1.f; f.beta = 1.f; break;
    case RnnActivation::kHardSigmoid: f.alpha = 0.2f; f.beta = 0.5f; break;
    case RnnActivation::kAffine: f.alpha = 1.f; f.beta = 0.f; break;
    default: break;
  }
}

bool takes_alpha(RnnActivation k) {
  return k == RnnActivation::kLeakyRelu || k == RnnActivation::kThresholdedRelu || k == RnnActivation::kScaledTanh ||
         k == RnnActivation::kHardSigmoid || k == RnnActivation::kElu || k == RnnActivation::kAffine;
}
bool takes_beta(RnnActivation k) {
  return k == RnnActivation::kScaledTanh || k == RnnActivation::kHardSigmoid || k == RnnActivation::kAffine;
}

Status read_activations(const Node& node, RecurrentSpec& s) {
  std::vector<std::string> names;
  if (const Attribute* a = node.attr("activations")) names = a->strings;
  const int64_t per = s.functions();
  if (names.empty()) {
    std::vector<std::string> one = s.cell == RecurrentCell::kRnn   ? std::vector<std::string>{"Tanh"}
                                   : s.cell == RecurrentCell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                   : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int64_t d = 0; d < s.directions; ++d) names.insert(names.end(), one.begin(), one.end());
  } else if (static_cast<int64_t>(names.size()) == per && s.directions == 2) {
    std::vector<std::string> twice = names;  // one list for both directions (ONNX Runtime accepts it too)
    names.insert(names.end(), twice.begin(), twice.end());
  }
  if (static_cast<int64_t>(names.size()) != per * s.directions)
    return invalid_argument("{}: needs {} activations ({} per direction), got {}", node.describe(),
                            per * s.directions, per, names.size());
  std::vector<float> alphas, betas;
  if (const Attribute* a = node.attr("activation_alpha")) alphas = a->floats;
  if (const Attribute* a = node.attr("activation_beta")) betas = a->floats;
  size_t ia = 0, ib = 0;
  for (const std::string& n : names) {
    RnnActivationFn f;
    ASSIGN_OR_RETURN(f.kind, activation_kind(n, node));
    default_alpha_beta(f);
    if (takes_alpha(f.kind) && ia < alphas.size()) f.alpha = alphas[ia++];
    if (takes_beta(f.kind) && ib < betas.size()) f.beta = betas[ib++];
    s.activations.push_back(f);
  }
  return Status::Ok();
}

}  // namespace

std::string recurrent_forward_name(const std::string& op_type) {
  for (const char* base : {"LSTM", "GRU", "RNN"})
    if (op_type.rfind(base, 0) == 0) return base;
  return op_type;
}

Result<RecurrentSpec> recurrent_spec(const Node& node, const std::string& op_type, int64_t opset) {
  RecurrentSpec s;
  s.cell = op_type == "RNN" ? RecurrentCell::kRnn : (op_type == "GRU" ? RecurrentCell::kGru : RecurrentCell::kLstm);
  std::string direction = node.attr_string("direction", "forward");
  if (direction == "bidirectional") s.directions = 2;
  else if (direction == "reverse") s.reverse = true;
  else if (direction != "forward")
    return invalid_argument("{}: direction must be forward, reverse or bidirectional, got '{}'", node.describe(),
                            direction);
  s.hidden = node.attr_int("hidden_size", 0);
  // (layout exists from opset 14; the project's forms carry it at their opset 1)
  s.layout = opset >= 14 || node.domain == kOrtTrainDomain ? node.attr_int("layout", 0) : 0;
  if (s.layout != 0 && s.layout != 1) return invalid_argument("{}: layout must be 0 or 1", node.describe());
  if (node.attr("clip")) {
    s.clip = node.attr_float("clip", 0.f);
    if (!(*s.clip > 0.f)) return invalid_argument("{}: clip must be positive", node.describe());
  }
  s.linear_before_reset = node.attr_int("linear_before_reset", 0) != 0;
  s.input_forget = node.attr_int("input_forget", 0) != 0;
  RETURN_IF_ERROR(read_activations(node, s));
  return s;
}

Result<RecurrentSizes> recurrent_sizes(const Node& node, RecurrentSpec& s,
                                       const std::vector<std::optional<Dims>>& inputs) {
  auto at = [&](size_t i) -> const std::optional<Dims>& {
    static const std::optional<Dims> absent;
    return i < inputs.size() ? inputs[i] : absent;
  };
  const auto &x = at(0), &w = at(1), &r = at(2);
  if (!x || !w || !r || x->size() != 3 || r->size() != 3)
    return shape_error("{}: X, W and R must be 3-D", node.describe());
  const int64_t G = s.gates(), D = s.directions;
  RecurrentSizes z;
  z.steps = (*x)[s.layout == 0 ? 0 : 1];
  z.batch = (*x)[s.layout == 0 ? 1 : 0];
  z.in = (*x)[2];
  z.hidden = (*r)[2];
  if (s.hidden > 0 && s.hidden != z.hidden)
    return shape_error("{}: hidden_size {} but R is for {}", node.describe(), s.hidden, z.hidden);
  s.hidden = z.hidden;
  // Each step is a trip of the cell: a sequence axis of 2^40 over an empty
  // batch stepped forever, computing nothing. Bounded as Loop and Scan are.
  if (z.steps > max_loop_trips())
    return invalid_argument("{}: a sequence of {} steps; a recurrence may take at most {}", node.describe(), z.steps,
                            max_loop_trips());
  const int64_t H = z.hidden;
  if (*w != Dims{D, G * H, z.in} || *r != Dims{D, G * H, H})
    return shape_error("{}: W {} and R {} do not fit X {} and {} hidden units", node.describe(), dims_to_string(*w),
                       dims_to_string(*r), dims_to_string(*x), H);
  const Dims state = s.layout == 0 ? Dims{D, z.batch, H} : Dims{z.batch, D, H};
  std::vector<std::pair<size_t, Dims>> want = {{3, {D, 2 * G * H}}, {5, state}};
  if (s.cell == RecurrentCell::kLstm) {
    want.push_back({6, state});
    want.push_back({7, {D, 3 * H}});
  }
  for (const auto& [i, dims] : want)
    if (at(i) && *at(i) != dims)
      return shape_error("{}: input {} is {}, not {}", node.describe(), i, dims_to_string(*at(i)),
                         dims_to_string(dims));
  return z;
}

Result<std::vector<int64_t>> sequence_lengths(const Node& node, const Tensor* lens, int64_t batch, int64_t steps) {
  if (!lens || lens->numel() == 0) return std::vector<int64_t>(static_cast<size_t>(batch), steps);
  std::vector<int64_t> v = lens->to_int64_vector();
  if (static_cast<int64_t>(v.size()) != batch)
    return shape_error("{}: sequence_lens has {} entries for a batch of {}", node.describe(), v.size(), batch);
  for (int64_t l : v)
    if (l < 0 || l > steps) return invalid_argument("{}: sequence length {} outside [0, {}]", node.describe(), l, steps);
  return v;
}

namespace {

// Index of the first output past the ONNX ones: `saved` on the training form.
size_t saved_output(RecurrentCell c) { return c == RecurrentCell::kLstm ? 3 : 2; }

Status recurrent_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(RecurrentSpec s, recurrent_spec(ctx.node(), recurrent_forward_name(ctx.node().op_type),
                                                   ctx.opset()));
  const DType dt = ctx.input_dtype(0);
  if (dt != DType::kFloat && dt != DType::kDouble && dt != DType::kUndefined)
    return unsupported("{}: {} takes float32 or float64, got {}", ctx.node().describe(), ctx.node().op_type,
                       dtype_name(dt));
  const OptShape& x = ctx.input_shape(0);
  const OptShape& r = ctx.input_shape(2);
  Dim hidden = s.hidden > 0 ? Dim(s.hidden) : (r && r->size() == 3 ? (*r)[2] : Dim());
  if (x && x->size() != 3) return shape_error("{}: X must be 3-D, got {}", ctx.node().describe(), shape_to_string(x));
  Dim t = x ? (*x)[s.layout == 0 ? 0 : 1] : Dim(), b = x ? (*x)[s.layout == 0 ? 1 : 0] : Dim();
  const Dim d(s.directions);
  auto set = [&](size_t i, Shape shape) {
    if (i < ctx.num_outputs()) ctx.set_output(i, dt, x ? OptShape(std::move(shape)) : std::nullopt);
  };
  set(0, s.layout == 0 ? Shape{t, d, b, hidden} : Shape{b, t, d, hidden});
  set(1, s.layout == 0 ? Shape{d, b, hidden} : Shape{b, d, hidden});
  if (s.cell == RecurrentCell::kLstm) set(2, s.layout == 0 ? Shape{d, b, hidden} : Shape{b, d, hidden});
  Dim k = hidden.known() ? Dim(s.saved_width()) : Dim();
  if (s.hidden <= 0 && hidden.known()) k = Dim((s.gates() + 2) * hidden.value);
  set(saved_output(s.cell), Shape{d, t, b, k});
  return Status::Ok();
}

// {RNN,GRU,LSTM}Grad(forward inputs..., saved, dY, dY_h [, dY_c]): one output per
// forward input, each its input's dtype and shape (sequence_lens' slot stays empty).
Status recurrent_grad_rule(InferContext& ctx) {
  const size_t forward_inputs = recurrent_forward_name(ctx.node().op_type) == "LSTM" ? 8 : 6;
  for (size_t i = 0; i < ctx.num_outputs() && i < forward_inputs; ++i)
    if (ctx.has_input(i)) ctx.set_output(i, ctx.input_dtype(i), ctx.input_shape(i));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "RNN", 7, 1000, recurrent_rule, kPlainOp);
ORT_REGISTER_OP("", "GRU", 7, 1000, recurrent_rule, kPlainOp);
ORT_REGISTER_OP("", "LSTM", 7, 1000, recurrent_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "RNNTraining", 1, 1000, recurrent_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "GRUTraining", 1, 1000, recurrent_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "LSTMTraining", 1, 1000, recurrent_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "RNNGrad", 1, 1000, recurrent_grad_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "GRUGrad", 1, 1000, recurrent_grad_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "LSTMGrad", 1, 1000, recurrent_grad_rule, kPlainOp);

}  // namespace ort_train
