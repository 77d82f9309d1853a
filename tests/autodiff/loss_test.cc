// The appended losses: values against hand-computed references and gradients
// against finite differences, for every type and reduction.
#include <cmath>

#include "autodiff/gradient_builder.h"
#include "autodiff/loss.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

// in0 -> Identity -> out0; the loss reads out0 and a label graph input.
struct LossModel {
  Model model;
  std::string loss;
  std::string grad;
};

LossModel build(const LossSpec& spec_in, const Tensor& x, const Tensor& target) {
  NodeSpec s{.op = "Identity", .inputs = {x}};
  LossModel lm;
  lm.model = single_node_model(s);
  lm.model.graph.inputs.push_back(ValueInfo{"target", target.dtype(), shape_from_dims(target.dims()), ""});
  auto b = GraphBuilder::create(lm.model, {});
  REQUIRE(b.ok());
  LossSpec spec = spec_in;
  spec.input = "out0";
  spec.target = "target";
  auto loss = append_loss(**b, spec);
  INFO(loss.status().message());
  REQUIRE(loss.ok());
  lm.loss = *loss;
  lm.model.graph.outputs.push_back(*lm.model.graph.value(lm.loss));
  auto g = build_gradients(**b, lm.loss, {"in0"});
  INFO(g.status().message());
  REQUIRE(g.ok());
  lm.grad = g->gradient.at("in0");
  return lm;
}

double run_loss(Executor& ex, const std::string& loss, const Tensor& x, const Tensor& t, Tensor* grad = nullptr,
                const std::string& grad_name = "") {
  auto out = ex.run({{"in0", x}, {"target", t}});
  INFO(out.status().message());
  REQUIRE(out.ok());
  if (grad) *grad = out->at(grad_name);
  return out->at(loss).data<double>()[0];
}

// Checks value against `expected` and the gradient against central differences.
void check_loss(const LossSpec& spec, const Tensor& x, const Tensor& target, double expected) {
  INFO("loss " << spec.type << " reduction " << spec.reduction);
  LossModel lm = build(spec, x, target);
  auto ex = Executor::create(lm.model);
  REQUIRE(ex.ok());
  Tensor g;
  double value = run_loss(**ex, lm.loss, x, target, &g, lm.grad);
  CHECK(value == Approx(expected).epsilon(1e-12));
  for (int64_t i = 0; i < x.numel(); ++i) {
    Tensor p = Tensor::host(DType::kDouble, x.dims()), m = Tensor::host(DType::kDouble, x.dims());
    for (int64_t k = 0; k < x.numel(); ++k) p.data<double>()[k] = m.data<double>()[k] = x.data<double>()[k];
    const double h = 1e-6;
    p.data<double>()[i] += h;
    m.data<double>()[i] -= h;
    double numeric = (run_loss(**ex, lm.loss, p, target) - run_loss(**ex, lm.loss, m, target)) / (2 * h);
    INFO("element " << i);
    CHECK(g.data<double>()[i] == Approx(numeric).margin(1e-7).epsilon(1e-6));
  }
}

}  // namespace

TEST_CASE("loss.regression_losses") {
  Tensor x = make<double>({2, 3}, {0.5, -1.0, 2.0, 0.25, 0.0, -0.75});
  Tensor t = make<double>({2, 3}, {0.0, -0.5, 1.0, 1.0, 0.5, -1.0});
  double sq = 0, ab = 0, bce = 0;
  for (int i = 0; i < 6; ++i) {
    double xi = x.data<double>()[i], ti = t.data<double>()[i], d = xi - ti;
    sq += d * d;
    ab += std::abs(d);
    bce += std::max(xi, 0.0) - xi * ti + std::log1p(std::exp(-std::abs(xi)));
  }
  check_loss({.type = "mse", .reduction = "mean"}, x, t, sq / 6);
  check_loss({.type = "mse", .reduction = "sum"}, x, t, sq);
  check_loss({.type = "l1", .reduction = "mean"}, x, t, ab / 6);
  check_loss({.type = "bce_with_logits", .reduction = "mean"}, x, t, bce / 6);
  check_loss({.type = "bce_with_logits", .reduction = "sum"}, x, t, bce);
}

TEST_CASE("loss.classification_losses_class_axis_last") {
  // logits [2, 2, 3]: batch 2, seq 2, 3 classes; one target ignored.
  Tensor x = make<double>({2, 2, 3}, {0.1, 0.2, 0.3, 1.0, -1.0, 0.5, 0.0, 0.0, 2.0, -0.5, 0.25, 0.75});
  Tensor t = make<int64_t>({2, 2}, {2, 0, -100, 1});
  double total = 0;
  int count = 0;
  for (int r = 0; r < 4; ++r) {
    int64_t label = t.data<int64_t>()[r];
    if (label == -100) continue;
    const double* row = x.data<double>() + r * 3;
    double lse = std::log(std::exp(row[0]) + std::exp(row[1]) + std::exp(row[2]));
    total += lse - row[label];
    ++count;
  }
  check_loss({.type = "softmax_cross_entropy", .reduction = "mean"}, x, t, total / count);
  check_loss({.type = "softmax_cross_entropy", .reduction = "sum"}, x, t, total);
  // nll reads log-probabilities: -x[label] averaged over kept targets.
  double nll = 0;
  for (int r = 0; r < 4; ++r)
    if (t.data<int64_t>()[r] != -100) nll -= x.data<double>()[r * 3 + t.data<int64_t>()[r]];
  check_loss({.type = "nll", .reduction = "mean"}, x, t, nll / count);
}

TEST_CASE("loss.bad_specs_are_refused") {
  NodeSpec s{.op = "Identity", .inputs = {make<float>({2, 3}, {1, 2, 3, 4, 5, 6})}};
  Model m = single_node_model(s);
  m.graph.inputs.push_back(ValueInfo{"target", DType::kFloat, Shape{2, 3}, ""});
  auto b = GraphBuilder::create(m, {});
  REQUIRE(b.ok());
  auto bad_type = append_loss(**b, {.type = "hinge", .input = "out0", .target = "target"});
  CHECK(bad_type.status().message().find("hinge") != std::string::npos);
  auto float_target = append_loss(**b, {.type = "softmax_cross_entropy", .input = "out0", .target = "target"});
  CHECK(float_target.status().message().find("integer class indices") != std::string::npos);
  auto missing = append_loss(**b, {.type = "mse", .input = "nope", .target = "target"});
  CHECK(missing.status().message().find("'nope'") != std::string::npos);
  auto no_output = append_loss(**b, {.output = "loss"});
  CHECK(no_output.status().message().find("'loss'") != std::string::npos);
}

}  // namespace ort_train::testing
