// LayerNormalization's Mean and InvStdDev outputs over many rows: written from
// several threads, they must all land in the one output tensor (a lazily
// allocated output taken inside the parallel loop once raced and lost rows).
#include <cmath>

#include "test_util.h"

namespace ort_train::testing {

TEST_CASE("layer_norm.statistics_outputs_with_many_rows") {
  int64_t rows = 4096, n = 8;
  Tensor x = random_tensor({rows, n}, 3);
  NodeSpec s{.op = "LayerNormalization", .inputs = {x, random_tensor({n}, 4, 0.5f, 1.5f)},
             .attributes = {Attribute::make_int("axis", -1)}, .num_outputs = 3};
  for (int repeat = 0; repeat < 200; ++repeat) {
    auto out = run_node(s);
    REQUIRE(out[1].numel() == rows);
    int64_t wrong = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < n; ++i) mean += x.data<float>()[r * n + i];
      mean /= static_cast<double>(n);
      for (int64_t i = 0; i < n; ++i) var += std::pow(x.data<float>()[r * n + i] - mean, 2);
      var /= static_cast<double>(n);
      bool ok = std::abs(out[1].data<float>()[r] - mean) <= 1e-6 &&
                std::abs(out[2].data<float>()[r] * std::sqrt(var + 1e-5) - 1.0) <= 1e-5;
      wrong += !ok;
    }
    INFO("run " << repeat);
    REQUIRE(wrong == 0);
  }
}

}  // namespace ort_train::testing
