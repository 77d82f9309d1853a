// Whole-model gradients against PyTorch autograd: for each bundled model,
// tools/gradient_reference.py wrote the description (training.yaml), one batch
// (train_batches/0) and PyTorch's d(loss)/d(initializer) per trainable
// initializer (gradients/<escaped name>.pb, computed in float64). The training
// graph runs in float32 here; each gradient must match within
//   max |ours - ref| <= 1e-4 * max |ref| + 1e-6 * G
// where G is the largest |ref| over all of the model's gradients: the floor
// covers tensors whose exact gradient is zero (an attention key bias: softmax
// ignores a shift of all scores), where float32 rounding is all that remains.
// The loss must match within 1e-5 relative. The worst max|err| / max|ref| per
// model is printed (with the floor-only tensors reported apart).
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "autodiff/training_graph.h"
#include "graph/onnx_io.h"
#include "training/batch_data.h"
#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;
namespace {

double as_double(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kDouble ? t.data<double>()[i] : static_cast<double>(t.data<float>()[i]);
}

void check_model_gradients(const std::string& name) {
  fs::path dir = fs::path(source_dir()) / "tests/models" / name;
  INFO("model " << name);
  REQUIRE(fs::exists(dir / "training.yaml"));
  auto desc = load_description((dir / "training.yaml").string());
  INFO(desc.status().message());
  REQUIRE(desc.ok());
  auto model = load_model((dir / "model.onnx").string());
  REQUIRE(model.ok());
  auto tg = build_training_graph(std::move(model).value(), *desc);
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  CHECK(tg->gradients.unreached.empty());
  std::vector<std::string> names;
  for (const ValueInfo* v : tg->model.graph.required_inputs()) names.push_back(v->name);
  auto feeds = read_batch_dir((dir / "train_batches/0").string(), names);
  INFO(feeds.status().message());
  REQUIRE(feeds.ok());
  auto ex = Executor::create(tg->model);
  INFO(ex.status().message());
  REQUIRE(ex.ok());
  RunOptions options;
  options.training = true;
  auto out = (*ex)->run(*feeds, options);
  INFO(out.status().message());
  REQUIRE(out.ok());

  auto ref_loss = read_tensor_file((dir / "gradients/loss.pb").string());
  REQUIRE(ref_loss.ok());
  double loss = as_double(out->at(tg->gradients.loss), 0), expected_loss = as_double(ref_loss->tensor, 0);
  CHECK(std::abs(loss - expected_loss) <= 1e-5 * std::abs(expected_loss));

  struct Compared {
    std::string name;
    double max_err = 0, max_ref = 0;
  };
  std::vector<Compared> all;
  double largest = 0;
  for (const std::string& w : tg->gradients.trainable) {
    fs::path file = dir / "gradients" / tensor_file_name(w);
    INFO("initializer " << w << " (" << file.string() << ")");
    REQUIRE(fs::exists(file));
    auto ref = read_tensor_file(file.string());
    REQUIRE(ref.ok());
    const Tensor& g = out->at(tg->gradients.gradient.at(w));
    REQUIRE(g.dims() == ref->tensor.dims());
    Compared c{w};
    for (int64_t i = 0; i < g.numel(); ++i) {
      c.max_err = std::max(c.max_err, std::abs(as_double(g, i) - as_double(ref->tensor, i)));
      c.max_ref = std::max(c.max_ref, std::abs(as_double(ref->tensor, i)));
    }
    largest = std::max(largest, c.max_ref);
    all.push_back(c);
  }
  double worst = 0, worst_floor = 0;
  std::string worst_name, floor_name;
  for (const Compared& c : all) {
    INFO("initializer " << c.name << ": max|err| " << c.max_err << ", max|ref| " << c.max_ref);
    CHECK(c.max_err <= 1e-4 * c.max_ref + 1e-6 * largest);
    if (c.max_ref > 1e-3 * largest) {
      double rel = c.max_err / c.max_ref;
      if (rel >= worst) {
        worst = rel;
        worst_name = c.name;
      }
    } else if (c.max_err / largest >= worst_floor) {
      worst_floor = c.max_err / largest;
      floor_name = c.name;
    }
  }
  size_t compared = all.size();
  // Every reference file must correspond to a trainable initializer (nothing silently skipped).
  size_t ref_files = 0;
  for (const auto& e : fs::directory_iterator(dir / "gradients"))
    if (e.path().filename() != "loss.pb") ++ref_files;
  CHECK(ref_files == compared);
  std::printf("gradient parity %-15s %zu tensors, loss %.6g (PyTorch %.6g), worst max|err|/max|ref| %.2e (%s)",
              name.c_str(), compared, loss, expected_loss, worst, worst_name.c_str());
  if (!floor_name.empty())
    std::printf("; near-zero gradients: worst max|err|/G %.2e (%s)", worst_floor, floor_name.c_str());
  std::printf("\n");
}

}  // namespace

TEST_CASE("models.gradient_parity_mlp") { check_model_gradients("mlp"); }
TEST_CASE("models.gradient_parity_lenet") { check_model_gradients("lenet"); }
TEST_CASE("models.gradient_parity_bert") { check_model_gradients("bert"); }
TEST_CASE("models.gradient_parity_gpt") { check_model_gradients("gpt"); }
TEST_CASE("models.gradient_parity_transformer_lm") { check_model_gradients("transformer_lm"); }
TEST_CASE("models.gradient_parity_cnn_bn") { check_model_gradients("cnn_bn"); }
TEST_CASE("models.gradient_parity_mobilenet_v3") { check_model_gradients("mobilenet_v3"); }
TEST_CASE("models.gradient_parity_lstm_lm") { check_model_gradients("lstm_lm"); }
TEST_CASE("models.gradient_parity_gru_lm") { check_model_gradients("gru_lm"); }
TEST_CASE("models.gradient_parity_loop_branch") { check_model_gradients("loop_branch"); }
TEST_CASE("models.gradient_parity_bilstm_tagger") { check_model_gradients("bilstm_tagger"); }

}  // namespace ort_train::testing
