// Finite-difference checks of GatherND, ScatterND, ScatterElements and TopK.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

// Index tuples into the leading dims of `data` (repeats allowed unless `unique`).
Tensor nd_indices(Rng& r, const Dims& data, int64_t count, int64_t depth, bool unique) {
  Tensor t = Tensor::host(DType::kInt64, {count, depth});
  std::vector<std::vector<int64_t>> seen;
  for (int64_t i = 0; i < count; ++i) {
    std::vector<int64_t> tuple;
    do {
      tuple.clear();
      for (int64_t d = 0; d < depth; ++d) {
        int64_t v = r.integer(0, data[static_cast<size_t>(d)] - 1);
        tuple.push_back(r.integer(0, 1) ? v - data[static_cast<size_t>(d)] : v);  // negative indices too
      }
      auto norm = tuple;
      for (int64_t d = 0; d < depth; ++d)
        if (norm[static_cast<size_t>(d)] < 0) norm[static_cast<size_t>(d)] += data[static_cast<size_t>(d)];
      if (!unique || std::find(seen.begin(), seen.end(), norm) == seen.end()) {
        seen.push_back(norm);
        break;
      }
    } while (true);
    for (int64_t d = 0; d < depth; ++d) t.data<int64_t>()[i * depth + d] = tuple[static_cast<size_t>(d)];
  }
  return t;
}

GRAD_CASE("GatherND", {"GatherND repeated tuples", [](Rng& r) {
  Dims d{3, 4, 2};
  return NodeSpec{.op = "GatherND", .inputs = {r.uniform(d), nd_indices(r, d, 5, 2, false)}};
}});
// Before opset 16 (ScatterND had no reduction): ELECTRA's opset-14 export.
GRAD_CASE("GatherND", {"GatherND at opset 13", [](Rng& r) {
  Dims d{3, 4, 2};
  return NodeSpec{.op = "GatherND", .inputs = {r.uniform(d), nd_indices(r, d, 4, 1, false)}, .opset = 13};
}});
// batch_dims 1: each batch's tuples index its own [4, 2] slice, repeats included.
GRAD_CASE("GatherND", {"GatherND batch_dims 1", [](Rng& r) {
  Tensor idx = Tensor::host(DType::kInt64, {2, 3, 1});
  for (int64_t i = 0; i < idx.numel(); ++i) idx.data<int64_t>()[i] = r.integer(-4, 3);
  return NodeSpec{.op = "GatherND", .inputs = {r.uniform({2, 4, 2}), idx},
                  .attributes = {Attribute::make_int("batch_dims", 1)}};
}});
GRAD_CASE("ScatterND", {"ScatterND overwrite", [](Rng& r) {
  Dims d{4, 3};
  return NodeSpec{.op = "ScatterND", .inputs = {r.uniform(d), nd_indices(r, d, 2, 1, true), r.uniform({2, 3})}};
}});
GRAD_CASE("ScatterND", {"ScatterND add", [](Rng& r) {
  Dims d{4, 3};
  return NodeSpec{.op = "ScatterND", .inputs = {r.uniform(d), nd_indices(r, d, 3, 2, false), r.uniform({3})},
                  .attributes = {Attribute::make_string("reduction", "add")}};
}});
GRAD_CASE("ScatterElements", {"ScatterElements overwrite along a negative axis", [](Rng& r) {
  // Each row writes distinct columns, so the result does not depend on write order.
  Tensor idx = Tensor::host(DType::kInt64, {3, 2});
  for (int64_t i = 0; i < 3; ++i) {
    int64_t a = r.integer(0, 3), b = (a + r.integer(1, 3)) % 4;
    idx.data<int64_t>()[i * 2] = a;
    idx.data<int64_t>()[i * 2 + 1] = b - 4;
  }
  return NodeSpec{.op = "ScatterElements", .inputs = {r.uniform({3, 4}), idx, r.uniform({3, 2})},
                  .attributes = {Attribute::make_int("axis", -1)}};
}});
GRAD_CASE("ScatterElements", {"ScatterElements add with repeats", [](Rng& r) {
  return NodeSpec{.op = "ScatterElements", .inputs = {r.uniform({3, 4}), r.indices({2, 4}, 0, 2), r.uniform({2, 4})},
                  .attributes = {Attribute::make_int("axis", 0), Attribute::make_string("reduction", "add")}};
}});
GRAD_CASE("GatherElements", {"GatherElements repeated indices along axis 1", [](Rng& r) {
  return NodeSpec{.op = "GatherElements", .inputs = {r.uniform({3, 4}), r.indices({3, 5}, -4, 3)},
                  .attributes = {Attribute::make_int("axis", 1)}};
}});
// Before opset 16 (ScatterElements had no reduction): the gradient scatter-adds
// through com.ort_train ScatterElements, so no opset of the model's is needed.
GRAD_CASE("GatherElements", {"GatherElements at opset 13", [](Rng& r) {
  return NodeSpec{.op = "GatherElements", .inputs = {r.uniform({4, 3}), r.indices({5, 3}, -4, 3)}, .opset = 13};
}});
GRAD_CASE("Scatter", {"Scatter (opset 10 name) overwrite", [](Rng& r) {
  Tensor idx = Tensor::host(DType::kInt64, {1, 3});
  for (int64_t i = 0; i < 3; ++i) idx.data<int64_t>()[i] = i;  // distinct rows per column
  return NodeSpec{.op = "Scatter", .inputs = {r.uniform({3, 3}), idx, r.uniform({1, 3})}, .opset = 10};
}, {0}});
GRAD_CASE("TopK", {"TopK largest along the last axis", [](Rng& r) {
  Dims d = r.shape(1, 3, 5);
  d.back() = std::max<int64_t>(d.back(), 3);
  return NodeSpec{.op = "TopK", .inputs = {r.distinct(d), make<int64_t>({1}, {2})}, .num_outputs = 2};
}});
GRAD_CASE("TopK", {"TopK smallest along axis 0", [](Rng& r) {
  return NodeSpec{.op = "TopK", .inputs = {r.distinct({4, 3}), make<int64_t>({1}, {3})},
                  .attributes = {Attribute::make_int("axis", 0), Attribute::make_int("largest", 0)},
                  .num_outputs = 2};
}});

}  // namespace

TEST_CASE("gradcheck.scatter_gather_nd") { check_registered({"GatherND", "ScatterND", "ScatterElements", "Scatter", "GatherElements", "TopK"}); }

}  // namespace ort_train::testing
