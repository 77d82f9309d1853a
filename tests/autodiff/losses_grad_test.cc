// Finite-difference checks of SoftmaxCrossEntropyLoss and
// NegativeLogLikelihoodLoss: every reduction, ignore_index, class weights,
// spatial dims, and SCE's log_prob output feeding the loss too.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

std::function<NodeSpec(Rng&)> loss(const char* op, bool weights, bool spatial, bool log_prob_out) {
  return [=](Rng& r) {
    int64_t n = r.integer(1, 3), c = r.integer(2, 4);
    Dims scores{n, c}, labels{n};
    if (spatial) {
      scores.push_back(2);
      labels.push_back(2);
    }
    Tensor y = r.indices(labels, 0, c - 1);
    y.data<int64_t>()[0] = -1;  // ignored
    const char* reductions[] = {"mean", "sum", "none"};
    NodeSpec s{.op = op, .inputs = {r.uniform(scores, -2, 2), y},
               .attributes = {Attribute::make_string("reduction", reductions[r.integer(0, 2)]),
                              Attribute::make_int("ignore_index", -1)},
               .num_outputs = log_prob_out ? size_t{2} : size_t{1}};
    if (weights) s.inputs.push_back(r.uniform({c}, 0.5, 1.5));
    return s;
  };
}

GRAD_CASE("SoftmaxCrossEntropyLoss", {"SCE plain", loss("SoftmaxCrossEntropyLoss", false, false, false), {0}, 1e-5, 1e-6, 1e-6, 6});
GRAD_CASE("SoftmaxCrossEntropyLoss", {"SCE weights, spatial, log_prob output", loss("SoftmaxCrossEntropyLoss", true, true, true), {0}, 1e-5, 1e-6, 1e-6, 6});
GRAD_CASE("NegativeLogLikelihoodLoss", {"NLL plain", loss("NegativeLogLikelihoodLoss", false, false, false), {0}, 1e-5, 1e-6, 1e-6, 6});
GRAD_CASE("NegativeLogLikelihoodLoss", {"NLL weights and spatial", loss("NegativeLogLikelihoodLoss", true, true, false), {0}, 1e-5, 1e-6, 1e-6, 6});

}  // namespace

TEST_CASE("gradcheck.losses") { check_registered({"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"}); }

}  // namespace ort_train::testing
