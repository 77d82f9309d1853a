// Recompute on a built training graph: layer scopes from node names; the
// copies of a layer (a Dropout re-applied through its forward mask) placed in
// the backward and read there instead of the forward's activations, the
// evaluation part untouched, and the gradients of a training run with
// Dropout active equal to those without recompute bit for bit.
#include "training/recompute.h"

#include "graph/onnx_io.h"
#include "graph/reachability.h"
#include "runtime/executor.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

TrainingGraph bert_example() {
  auto desc = load_description(source_dir() + "/examples/bert/bert.yaml");
  REQUIRE(desc.ok());
  auto model = load_model(source_dir() + "/examples/bert/bert.onnx");
  REQUIRE(model.ok());
  auto tg = build_training_graph(std::move(model).value(), *desc);
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  return std::move(tg).value();
}

std::map<std::string, Tensor> bert_feeds() {
  // batch 16, seq 64 (bert.yaml); token ids below the vocabulary, all attended, every 7th labelled.
  Tensor ids = Tensor::host(DType::kInt64, {16, 64}), mask = Tensor::host(DType::kInt64, {16, 64}),
         labels = Tensor::host(DType::kInt64, {16, 64});
  for (int64_t i = 0; i < 16 * 64; ++i) {
    ids.data<int64_t>()[i] = (i * 37) % 1000;
    mask.data<int64_t>()[i] = 1;
    labels.data<int64_t>()[i] = i % 7 == 0 ? (i * 11) % 1000 : -100;
  }
  return {{"input_ids", ids}, {"attention_mask", mask}, {"labels", labels}};
}

}  // namespace

TEST_CASE("recompute: layer scopes are the first indexed module of a node's scope") {
  CHECK(layer_scope("/model/bert/encoder/layer.3/attention/self/query/MatMul") == "/model/bert/encoder/layer.3");
  CHECK(layer_scope("/model/transformer/h.0/attn/Softmax") == "/model/transformer/h.0");
  CHECK(layer_scope("/encoder/block.2/layer.0/SelfAttention/MatMul") == "/encoder/block.2");
  CHECK(layer_scope("/model/decoder/dropout_1/Dropout") == "");  // a module called a second time, no layer
  CHECK(layer_scope("/model/bert/embeddings/Add_1") == "");  // a node's own name is no scope
  CHECK(layer_scope("MatMul_3") == "");
  CHECK(layer_scope("/x/.5/Add") == "");
  CHECK(parse_recompute_mode("layers").value() == RecomputeMode::kLayers);
  CHECK(dotted_layer_scope("model.bert.encoder.layer.3.attention.self") == "model.bert.encoder.layer.3");
  CHECK(dotted_layer_scope("model.model.layers.11") == "model.model.layers.11");
  CHECK(dotted_layer_scope("model.bert.embeddings") == "");
  CHECK(dotted_layer_scope("0.weight") == "");  // an index with no list name before it
  CHECK(dotted_layer_scope("") == "");
  CHECK_FALSE(parse_recompute_mode("everything").ok());
}

// The dynamo exporter's node names carry no scope ("node_linear_3"): the
// layer is read from the module path in the node's metadata, outermost first.
TEST_CASE("recompute: a dynamo export's layer is read from its name_scopes metadata") {
  Node n;
  n.name = "node_linear_3";
  CHECK(layer_scope(n) == "");
  n.metadata = {{"namespace", ": LossOf/model.transformer.h.1: GPT2Block/linear_3: aten.linear"},
                {"pkg.torch.onnx.name_scopes",
                 "['', 'model', 'model.transformer', 'model.transformer.h.1', 'model.transformer.h.1.attn', 'linear_3']"}};
  CHECK(layer_scope(n) == "model.transformer.h.1");
  // The last entry is the FX node's own name, never a module.
  n.metadata = {{"pkg.torch.onnx.name_scopes", "['', 'model', 'layers.0']"}};
  CHECK(layer_scope(n) == "");
  // A scoped name wins over the metadata.
  n.name = "/model/bert/encoder/layer.2/Add";
  CHECK(layer_scope(n) == "/model/bert/encoder/layer.2");
}

TEST_CASE("recompute: a layer's copies feed the backward, Dropout through its forward mask") {
  TrainingGraph tg = bert_example();
  const std::vector<size_t> eval_before = nodes_reaching(tg.model.graph, tg.eval_outputs);
  const size_t nodes_before = tg.model.graph.nodes.size();
  auto report = apply_recompute(tg, RecomputeMode::kLayers, 0);
  REQUIRE(report.ok());
  CHECK(report->layers == std::vector<std::string>{"/model/bert/encoder/layer.0", "/model/bert/encoder/layer.1"});
  CHECK(report->recomputed == report->layers);
  CHECK(report->copied_nodes > 0);
  CHECK(tg.model.graph.nodes.size() == nodes_before + report->copied_nodes);
  CHECK(report->peak_after < report->peak_before);
  const Graph& g = tg.model.graph;
  // The evaluation part is the same nodes as before: no copy reaches the loss.
  CHECK(nodes_reaching(g, tg.eval_outputs).size() == eval_before.size());
  size_t reapplied = 0;
  for (const Node& n : g.nodes) {
    bool copy = n.name.find("_recompute") != std::string::npos;
    CHECK_FALSE((copy && n.op_type == "Dropout"));  // never drawn again
    if (copy && n.op_type == "DropoutGrad") {
      ++reapplied;
      CHECK(n.inputs[1].find("_recompute") == std::string::npos);  // the forward's own mask
    }
  }
  CHECK(reapplied >= 2);  // each layer's attention and output Dropouts
}

TEST_CASE("recompute: gradients with Dropout active are bit-identical to keeping the activations") {
  std::map<std::string, Tensor> grads[2];
  for (int k = 0; k < 2; ++k) {
    TrainingGraph tg = bert_example();
    if (k == 1) REQUIRE(apply_recompute(tg, RecomputeMode::kLayers, 0).ok());
    auto ex = Executor::create(tg.model);
    INFO(ex.status().message());
    REQUIRE(ex.ok());
    RunOptions options;
    options.training = true;
    options.seed = 7;
    options.step = 3;
    std::vector<std::string> fetch;
    for (const auto& [w, g] : tg.gradients.gradient) fetch.push_back(g);
    fetch.push_back(tg.gradients.loss);
    auto out = (*ex)->run(bert_feeds(), options, fetch);
    INFO(out.status().message());
    REQUIRE(out.ok());
    grads[k] = std::move(out).value();
  }
  REQUIRE(grads[0].size() == grads[1].size());
  for (const auto& [name, t] : grads[0]) {
    INFO(name);
    require_close(grads[1].at(name), t, 0, 0);
  }
}

// Recompute is a pass of its own phase, run through the pass manager:
// --disable-pass recompute with --recompute asked for is refused, not ignored.
TEST_CASE("recompute: the pass runs through the pass manager, and disabling it is refused") {
  TrainingGraph tg = bert_example();
  auto refused = apply_recompute(tg, RecomputeMode::kLayers, 0, {"recompute"});
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("the recompute pass is disabled"));
  const size_t nodes = tg.model.graph.nodes.size();
  auto done = apply_recompute(tg, RecomputeMode::kLayers, 0, {"bias_gelu_fusion"});
  REQUIRE(done.ok());
  CHECK(done->copied_nodes > 0);
  CHECK(tg.model.graph.nodes.size() == nodes + done->copied_nodes);
}

}  // namespace ort_train::testing
