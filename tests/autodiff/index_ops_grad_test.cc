// Finite-difference checks of OneHot (its values), ReverseSequence and Compress.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("OneHot", {"OneHot values, axis 1, an index out of range", [](Rng& r) {
  Tensor idx = make<int64_t>({2, 3}, {0, 2, -1, 5, 1, 1});
  return NodeSpec{.op = "OneHot", .inputs = {idx, make<int64_t>({}, {4}), r.uniform({2})},
                  .attributes = {Attribute::make_int("axis", 1)}, .opset = 11, .constant_inputs = {1}};
}, {2}});
GRAD_CASE("ReverseSequence", {"ReverseSequence time-major and batch-major", [](Rng& r) {
  const bool batch_major = r.integer(0, 1) == 1;
  Dims d = batch_major ? Dims{2, 4, 3} : Dims{4, 2, 3};
  return NodeSpec{.op = "ReverseSequence", .inputs = {r.uniform(d), make<int64_t>({2}, {3, 1})},
                  .attributes = {Attribute::make_int("batch_axis", batch_major ? 0 : 1),
                                 Attribute::make_int("time_axis", batch_major ? 1 : 0)}};
}});
GRAD_CASE("Compress", {"Compress along an axis, a short condition", [](Rng& r) {
  Tensor cond = Tensor::host(DType::kBool, {3});
  cond.data<bool>()[0] = true, cond.data<bool>()[1] = false, cond.data<bool>()[2] = true;
  return NodeSpec{.op = "Compress", .inputs = {r.uniform({2, 4}), cond}, .attributes = {Attribute::make_int("axis", 1)},
                  .constant_inputs = {1}};
}});
GRAD_CASE("Compress", {"Compress flattened", [](Rng& r) {
  Tensor cond = Tensor::host(DType::kBool, {5});
  for (int64_t i = 0; i < 5; ++i) cond.data<bool>()[i] = i % 2 == 0;
  return NodeSpec{.op = "Compress", .inputs = {r.uniform({2, 3}), cond}, .constant_inputs = {1}};
}});

}  // namespace

TEST_CASE("gradcheck.index_ops") { check_registered({"OneHot", "ReverseSequence", "Compress"}); }

}  // namespace ort_train::testing
