// Finite-difference checks of Pad (every mode), Tile, CumSum, Trilu and Dropout.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("Pad", {"Pad every mode, negative pads crop", [](Rng& r) {
  const char* modes[] = {"constant", "reflect", "edge", "wrap"};
  std::string mode = modes[r.integer(0, 3)];
  std::vector<int64_t> pads{1, 2, 2, mode == "constant" ? -1 : 1};
  return NodeSpec{.op = "Pad", .inputs = {r.uniform({3, 4}), make<int64_t>({4}, pads)},
                  .attributes = {Attribute::make_string("mode", mode)}, .opset = 19};
}, {}, 1e-5, 1e-6, 1e-6, 8});
GRAD_CASE("Pad", {"Pad opset 2 attribute", [](Rng& r) {
  return NodeSpec{.op = "Pad", .inputs = {r.uniform({2, 3})},
                  .attributes = {Attribute::make_ints("pads", {0, 1, 1, 0})}, .opset = 10};
}});
GRAD_CASE("Tile", {"Tile", [](Rng& r) {
  return NodeSpec{.op = "Tile", .inputs = {r.uniform({2, 3}), make<int64_t>({2}, {r.integer(1, 3), r.integer(1, 3)})}};
}});
GRAD_CASE("CumSum", {"CumSum exclusive/reverse", [](Rng& r) {
  return NodeSpec{.op = "CumSum", .inputs = {r.uniform({3, 4}), make<int64_t>({}, {r.integer(-2, 1)})},
                  .attributes = {Attribute::make_int("exclusive", r.integer(0, 1)),
                                 Attribute::make_int("reverse", r.integer(0, 1))}};
}, {}, 1e-5, 1e-6, 1e-6, 6});
GRAD_CASE("Trilu", {"Trilu upper and lower with k", [](Rng& r) {
  return NodeSpec{.op = "Trilu", .inputs = {r.uniform({2, 3, 4}), make<int64_t>({}, {r.integer(-1, 1)})},
                  .attributes = {Attribute::make_int("upper", r.integer(0, 1))}};
}});
GRAD_CASE("Dropout", {"Dropout in training (fixed seed, same mask each run)", [](Rng& r) {
  NodeSpec s{.op = "Dropout", .inputs = {r.uniform({4, 5}), make<float>({}, {0.4f}), make<bool>({}, {true})},
             .num_outputs = 2};
  s.run_options.training = true;
  s.run_options.seed = 7;
  return s;
}});
GRAD_CASE("Dropout", {"Dropout inference", [](Rng& r) {
  return NodeSpec{.op = "Dropout", .inputs = {r.uniform({3, 2})}};
}});

// dropout_add_fusion's DropoutAdd(X, R, ratio, training_mode): the residual of X's shape, and broadcast.
NodeSpec dropout_add(Rng& r, Dims x, Dims residual) {
  NodeSpec s{.op = "DropoutAdd",
             .inputs = {r.uniform(x), r.uniform(residual), make<float>({}, {0.4f}), make<bool>({}, {true})},
             .num_outputs = 2};
  s.domain = kOrtTrainDomain;
  s.run_options.training = true;
  s.run_options.seed = 7;
  return s;
}
GRAD_CASE("DropoutAdd", {"DropoutAdd in training, residual of X's shape (com.ort_train)", [](Rng& r) {
  return dropout_add(r, {4, 5}, {4, 5});
}});
GRAD_CASE("DropoutAdd", {"DropoutAdd in training, both operands broadcast (com.ort_train)", [](Rng& r) {
  return dropout_add(r, {3, 1}, {2, 1, 4});
}});

}  // namespace

TEST_CASE("gradcheck.layout_ops") { check_registered({"Pad", "Tile", "CumSum", "Trilu", "Dropout", "DropoutAdd"}); }

}  // namespace ort_train::testing
