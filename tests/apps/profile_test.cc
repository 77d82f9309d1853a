// `--profile`: the time per op type, then the costliest nodes by op type and
// input shapes (apps/op_profile.cc), for `train` and `run`.
#include "test_util.h"

namespace ort_train::testing {

TEST_CASE("cli.profile_prints_op_types_then_the_costliest_op_and_input_shapes") {
  Dir d("ort_train_cli_profile");
  const std::string m = source_dir() + "/tests/models/mlp";
  CliOutcome train = run_cli("train --model " + m + "/model.onnx --config " + m + "/training.yaml --data " + m +
                                 "/train_batches --repeat 3 --profile --device cpu",
                             d.p.string());
  INFO(train.stderr_text);
  REQUIRE(train.exit_code == 0);
  const std::string& out = train.stdout_text;
  const size_t by_op = out.find("op "), by_shape = out.find("op and input shapes (costliest)");
  REQUIRE(by_op != std::string::npos);
  REQUIRE(by_shape != std::string::npos);
  CHECK(by_op < by_shape);
  // The MLP's layers at the batch's shape: a row of the second table names
  // the op and the [4,64] activations it read.
  const std::string shapes = out.substr(by_shape);
  CHECK(shapes.find("Gemm [4,64]") != std::string::npos);
  CHECK(shapes.find("ms/run") != std::string::npos);

  CliOutcome run = run_cli("run --model " + m + "/model.onnx --inputs " + m + "/test_data_set_0 --profile", d.p.string());
  INFO(run.stderr_text);
  REQUIRE(run.exit_code == 0);
  CHECK(run.stdout_text.find("op and input shapes (costliest)") != std::string::npos);
}

}  // namespace ort_train::testing
