// Resize's kernel at the edges a file can reach: an empty output asks for no
// sampling taps however long its other dims (fuzz_model_execution found a
// [1, 2, 4.7e10, 0] request allocating 1.5 TB of taps), and an empty input dim
// cannot feed a non-empty output.
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("Resize to an empty output makes no taps for its other dims", "[kernels][Resize]") {
  NodeSpec s{.op = "Resize",
             .inputs = {make<float>({1, 1, 2, 2}, {1, 2, 3, 4}), Tensor(), Tensor(),
                        make<int64_t>({4}, {1, 1, 47244640261, 0})},
             .attributes = {Attribute::make_string("mode", "linear")}};
  auto out = run_node(s);
  CHECK(out[0].dims() == Dims{1, 1, 47244640261, 0});
  CHECK(out[0].numel() == 0);
}

TEST_CASE("Resize refuses an empty input dim with a non-empty output", "[kernels][Resize]") {
  NodeSpec s{.op = "Resize",
             .inputs = {Tensor::host(DType::kFloat, {1, 1, 0, 2}), Tensor(), Tensor(), make<int64_t>({4}, {1, 1, 3, 2})},
             .attributes = {Attribute::make_string("mode", "nearest")}};
  for (bool sizes_constant : {false, true}) {  // refused by the shape rule when it can see the sizes
    INFO("sizes constant: " << sizes_constant);
    if (sizes_constant) s.constant_inputs = {3};
    Status st = run_node_error(s);
    REQUIRE_FALSE(st.ok());
    CHECK(st.message().find("dim 2 of the input is empty") != std::string::npos);
  }
}

TEST_CASE("Resize still samples a non-empty output", "[kernels][Resize]") {
  // Nearest, scale 2 along the last dim (asymmetric, floor: each input read twice).
  NodeSpec s{.op = "Resize",
             .inputs = {make<float>({1, 1, 1, 2}, {5, 7}), Tensor(), Tensor(), make<int64_t>({4}, {1, 1, 1, 4})},
             .attributes = {Attribute::make_string("mode", "nearest"),
                            Attribute::make_string("coordinate_transformation_mode", "asymmetric"),
                            Attribute::make_string("nearest_mode", "floor")}};
  auto out = run_node(s);
  require_close(out[0], make<float>({1, 1, 1, 4}, {5, 5, 7, 7}), 0, 0);
}
