// A finite loss with an inf or NaN gradient (Sqrt at 0) must not train on:
// by default the run stops before the update, naming the gradient, and writes
// no export; --on-nonfinite skip skips the update, as GradScaler does. A
// learning rate that is not a finite number >= 0 is a bad command line.
#include <filesystem>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;
namespace fs = std::filesystem;

namespace {

// loss = mean(x * sqrt(w)), w = [0, 1, 4]: the loss is finite, d loss / d w[0] is inf.
fs::path make_sqrt_at_zero(const std::string& name, std::vector<float> w = {0, 1, 4}) {
  fs::path dir = fs::temp_directory_path() / ("ort_train_nonfinite_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Model m;
  m.opset_imports = {{"", 17}};
  m.graph.inputs.push_back({"x", DType::kFloat, Shape{Dim(2), Dim(3)}, ""});
  m.graph.initializers["w"] = make<float>({3}, std::move(w));
  m.graph.initializer_order = {"w"};
  m.graph.nodes.push_back({"root", "Sqrt", "", {"w"}, {"r"}, {}, ""});
  m.graph.nodes.push_back({"mul", "Mul", "", {"x", "r"}, {"y"}, {}, ""});
  m.graph.nodes.push_back({"mean", "ReduceMean", "", {"y"}, {"loss"}, {Attribute::make_int("keepdims", 0)}, ""});
  m.graph.outputs.push_back({"loss", DType::kFloat, Shape{}, ""});
  REQUIRE(save_model(m, (dir / "model.onnx").string()).ok());
  return dir;
}

}  // namespace

TEST_CASE("train.a_nonfinite_gradient_stops_the_run_before_the_update") {
  fs::path dir = make_sqrt_at_zero("stop");
  const std::string base = "--model " + (dir / "model.onnx").string() + " --optimizer Sgd --lr 0.1 --steps 3 " +
                           "--data synthetic --device cpu --export " + (dir / "out.onnx").string();
  CliOutcome o = run_cli(base, dir.string());
  INFO(o.stderr_text);
  CHECK(o.exit_code == 1);
  CHECK_THAT(o.stderr_text, Catch::Contains("step 1: the gradient of 'w' holds inf or NaN"));
  CHECK_THAT(o.stderr_text, Catch::Contains("--on-nonfinite skip"));
  CHECK_FALSE(fs::exists(dir / "out.onnx"));

  CliOutcome skipped = run_cli(base + " --on-nonfinite skip", dir.string());
  INFO(skipped.stderr_text);
  REQUIRE(skipped.exit_code == 0);
  CHECK_THAT(skipped.stdout_text + skipped.stderr_text, Catch::Contains("update skipped (--on-nonfinite skip)"));
  auto trained = load_model((dir / "out.onnx").string());
  REQUIRE(trained.ok());
  // Every step was skipped: w is as it was, not NaN.
  CHECK(trained->graph.initializers.at("w").to_double_vector() == std::vector<double>{0, 1, 4});
  fs::remove_all(dir);
}

// A NaN loss (Sqrt of -1) makes NaN gradients too: the message says so,
// instead of calling the loss finite.
TEST_CASE("train.a_nan_loss_is_named_as_such") {
  fs::path dir = make_sqrt_at_zero("nan_loss", {-1, 1, 4});
  CliOutcome o = run_cli("--model " + (dir / "model.onnx").string() +
                             " --optimizer Sgd --lr 0.1 --steps 2 --data synthetic --device cpu",
                         dir.string());
  INFO(o.stderr_text);
  CHECK(o.exit_code == 1);
  CHECK_THAT(o.stderr_text, Catch::Contains("the gradient of 'w' holds inf or NaN and so does the loss (NaN)"));
  CHECK_THAT(o.stderr_text, !Catch::Contains("is finite"));
  fs::remove_all(dir);
}

TEST_CASE("train.a_learning_rate_that_is_not_finite_is_a_bad_command_line") {
  fs::path dir = make_sqrt_at_zero("lr");
  for (const char* lr : {"nan", "inf", "-0.1"}) {
    CliOutcome o = run_cli("--model " + (dir / "model.onnx").string() + " --optimizer Sgd --steps 1 --data synthetic " +
                               "--device cpu --lr " + lr,
                           dir.string());
    INFO(lr << ": " << o.stderr_text);
    CHECK(o.exit_code == 64);
    CHECK_THAT(o.stderr_text, Catch::Contains("is not a finite learning rate"));
  }
  fs::remove_all(dir);
}
