// Models as today's PyTorch exports them (issue 49): torch 2.15's dynamo
// exporter, with its optimizer on (the default) and off, and through the
// export helper (tools/export_for_training.py), from
// tools/export_dynamo_models.py into tests/models/dynamo/<model>_<variant>.
// Each trains from its training.yaml (the one-liner's: the loss and nothing
// else, or the helper's description) to PyTorch's 10-step trajectory of
// the module itself (Lamb 1e-4 and 1e-2, AdamW 1e-3, SGD 0.1; 1e-5 relative,
// as every trajectory test), or is refused before step 1 with the reason.
#include <algorithm>
#include <filesystem>
#include <string>

#include "autodiff/training_graph.h"
#include "graph/onnx_io.h"
#include "test_util.h"

namespace ort_train::testing {

// tests/optimizers/optimizer_parity_test.cc's trajectory check.
void check_trajectories(const std::string& model_name, const std::string& losses_key);

namespace {
namespace fs = std::filesystem;

fs::path dynamo_dir(const std::string& name) { return fs::path(source_dir()) / "tests/models/dynamo" / name; }

Result<TrainingGraph> build(const std::string& name) {
  auto desc = load_description((dynamo_dir(name) / "training.yaml").string());
  REQUIRE(desc.ok());
  auto model = load_model((dynamo_dir(name) / "model.onnx").string());
  REQUIRE(model.ok());
  return build_training_graph(std::move(model).value(), *desc);
}

// Refused before step 1, the message naming `phrase`.
void check_refused(const std::string& name, const std::string& phrase) {
  auto tg = build(name);
  REQUIRE_FALSE(tg.ok());
  INFO(tg.status().message());
  CHECK(tg.status().message().find(phrase) != std::string::npos);
}

void check_trains(const std::string& name) {
  auto tg = build(name);
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  CHECK(tg->inference_batch_norms.empty());
  check_trajectories("dynamo/" + name, "losses");
}

}  // namespace

// optimize=False: the graph signature says what trains; buffers and the -inf
// causal mask stay frozen; GPT-2's torch.split is a SplitToSequence read by
// SequenceAt, lowered to slices at load.
TEST_CASE("dynamo_exports.causal_lm_plain") { check_trains("causal_lm_plain"); }
TEST_CASE("dynamo_exports.gpt2_plain") { check_trains("gpt2_plain"); }
TEST_CASE("dynamo_exports.llama_plain") { check_trains("llama_plain"); }
TEST_CASE("dynamo_exports.bert_plain") { check_trains("bert_plain"); }

// The exporter's defaults (optimize=True). Llama's folds can all be undone or
// are the same training: q/k/v/o and MLP weights stored transposed inside
// their linear, rotary tables folded from the inv_freq buffer (frozen), the
// RMSNorm weights of ones merged into one initializer (given back).
TEST_CASE("dynamo_exports.llama_optimize") {
  auto tg = build("llama_optimize");
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  CHECK_FALSE(tg->unfolded.empty());  // the merged RMSNorm weights
  check_trains("llama_optimize");
}
// The causal LM's out_proj bias is zero at initialization, so the optimizer
// dropped it from its Gemm (aten.linear's C): it is given back as zeros and
// trains, and the rest is Llama's folds.
TEST_CASE("dynamo_exports.causal_lm_optimize") {
  auto tg = build("causal_lm_optimize");
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  CHECK(std::any_of(tg->unfolded.begin(), tg->unfolded.end(), [](const std::string& line) {
    return line.find("zero bias(es)") != std::string::npos && line.find("attn.out_proj.bias") != std::string::npos;
  }));
  check_trains("causal_lm_optimize");
}
// The others cannot be trained as PyTorch trains them, and say so before step 1.
TEST_CASE("dynamo_exports.optimize_refusals") {
  // BatchNorm folded into its convolution: the weight and the statistics are
  // one tensor now.
  check_refused("resnet_optimize", "stem.1.weight");
  // Position and token-type lookups folded into new tensors (GPT-2's zero
  // Gemm biases are given back first; its position table is not).
  check_refused("gpt2_optimize", "model.transformer.wpe.weight");
  check_refused("bert_optimize", "model.bert.embeddings.position_embeddings.weight");
  check_refused("marian_optimize", "model.model.encoder.embed_positions.weight");
  check_refused("bert_optimize", "optimize=False");
}

// BatchNormalization in inference mode (the dynamo exporter's, even from
// train()): trains as the file says, normalizing with the running
// statistics, which is PyTorch's module with its BatchNorm in eval mode.
TEST_CASE("dynamo_exports.resnet_plain_trains_its_inference_batch_norm") {
  auto tg = build("resnet_plain");
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  CHECK(tg->inference_batch_norms.size() == 6);
  std::string warning = inference_batch_norm_warning(tg->inference_batch_norms);
  CHECK(warning.find("tools/export_for_training.py") != std::string::npos);
  check_trajectories("dynamo/resnet_plain", "losses_inference_batch_norm");
}

// The export helper's files and descriptions train as PyTorch trains the
// module: Marian's frozen sinusoidal positions and final_logits_bias, its
// padding row (the decoder starts from the pad token), and ResNet's
// BatchNorm back in training mode.
TEST_CASE("dynamo_exports.helper_causal_lm") { check_trains("causal_lm_helper"); }
TEST_CASE("dynamo_exports.helper_gpt2") { check_trains("gpt2_helper"); }
TEST_CASE("dynamo_exports.helper_llama") { check_trains("llama_helper"); }
TEST_CASE("dynamo_exports.helper_bert") { check_trains("bert_helper"); }
TEST_CASE("dynamo_exports.helper_marian") { check_trains("marian_helper"); }
TEST_CASE("dynamo_exports.helper_resnet") { check_trains("resnet_helper"); }

}  // namespace ort_train::testing
