// The default trainable set (autodiff/trainable_set.h) and the undoing of the
// dynamo exporter's folds (graph/dynamo_export.h), on small graphs that carry
// the metadata as torch 2.15's exporter writes it; the exports themselves
// train in tests/models/dynamo_exports_test.cc.
#include <algorithm>
#include <cmath>
#include <limits>

#include "autodiff/trainable_set.h"
#include "graph/dynamo_export.h"
#include "graph/onnx_metadata.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

constexpr const char* kKind = "pkg.torch.export.graph_signature.InputSpec.kind";
constexpr const char* kFolded = "pkg.onnxscript.optimizer.folded_from";

struct Builder {
  Model m;
  Builder() { m.opset_imports.push_back({"", 18}); }

  Builder& init(const std::string& name, Tensor t, MetadataProps meta = {}) {
    m.graph.initializers[name] = t;
    m.graph.initializer_order.push_back(name);
    m.graph.values[name] = ValueInfo{name, t.dtype(), shape_from_dims(t.dims()), "", "", std::move(meta)};
    return *this;
  }
  Builder& param(const std::string& name, Tensor t) { return init(name, std::move(t), {{kKind, "PARAMETER"}}); }
  Builder& folded(const std::string& name, Tensor t, const std::string& from) {
    return init(name, std::move(t), {{kFolded, from}});
  }
  // A node reading `inputs`, made from an FX node that read `placeholders`.
  Builder& node(const std::string& name, std::vector<std::string> inputs, const std::string& placeholders) {
    Node n;
    n.name = name;
    n.op_type = "Add";
    n.inputs = std::move(inputs);
    n.outputs = {name + "_out"};
    n.metadata = {{"pkg.torch.onnx.fx_node", "%" + name + " : [num_users=1] = call_function[target=torch.ops.aten."
                                                 "add.Tensor](args = (" + placeholders + "), kwargs = {})"}};
    m.graph.nodes.push_back(std::move(n));
    return *this;
  }
  // The graph signature: "p_a_weight: PARAMETER target='a.weight'" per entry.
  Builder& signature(const std::vector<std::pair<std::string, std::string>>& entries) {
    std::string text = "\n# inputs\n";
    for (const auto& [kind, target] : entries) {
      std::string ph = (kind == "PARAMETER" ? "p_" : "b_") + target;
      std::replace(ph.begin(), ph.end(), '.', '_');
      text += ph + ": " + kind + " target='" + target + "'" + (kind == "BUFFER" ? " persistent=True" : "") + "\n";
    }
    text += "x: USER_INPUT\n\n# outputs\nloss: USER_OUTPUT\n";
    m.graph.metadata = {{"pkg.torch.export.ExportedProgram.graph_signature", text}};
    return *this;
  }
};

Tensor floats(Dims dims, float start = 0.5f) {
  Tensor t = Tensor::host(DType::kFloat, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + 0.25f * static_cast<float>(i);
  return t;
}

const InitializerChoice* choice(const TrainableSet& s, const std::string& name) {
  for (const InitializerChoice& c : s.notable)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("trainable_set.a_file_without_metadata_trains_every_float_initializer_but_masks") {
  Tensor mask = floats({2, 2});
  mask.data<float>()[1] = -std::numeric_limits<float>::infinity();
  Tensor finfo_min = floats({2});
  finfo_min.data<float>()[0] = std::numeric_limits<float>::lowest();
  Builder b;
  b.init("w", floats({2, 2})).init("mask", mask).init("min_mask", finfo_min);
  b.init("ids", Tensor::from_vector<int64_t>({2}, {0, 1}));
  auto s = choose_trainable(b.m, {});
  REQUIRE(s.ok());
  CHECK_FALSE(s->graph_signature);
  CHECK(s->trainable == std::vector<std::string>{"w"});
  CHECK(s->frozen == std::vector<std::string>{"mask", "min_mask"});
  CHECK(choice(*s, "mask")->reason.find("-inf") != std::string::npos);
  CHECK(choice(*s, "min_mask")->reason.find("finfo.min") != std::string::npos);
  // A mask cannot be named to train.
  auto forced = choose_trainable(b.m, {.include = {"mask"}});
  REQUIRE_FALSE(forced.ok());
  CHECK(forced.status().message().find("'mask'") != std::string::npos);
}

TEST_CASE("trainable_set.the_graph_signature_and_folds_decide") {
  Builder b;
  b.signature({{"PARAMETER", "a.weight"}, {"PARAMETER", "lin.weight"}, {"BUFFER", "rope.inv_freq"}});
  b.param("a.weight", floats({2, 2}));
  b.init("rope.inv_freq", floats({2}), {{kKind, "BUFFER"}});
  b.folded("cos_table", floats({2, 2}), "['rope.inv_freq', 'arange', 'val_3']");  // a rotary table
  b.folded("val_9", floats({}), "['val_7', 'val_8']");                             // a folded scalar
  b.init("val_12", floats({}));                                                    // an exporter constant
  b.folded("val_20", floats({2, 3}), "['lin.weight']");                            // Wᵀ inside aten.linear
  b.node("linear", {"x", "val_20"}, "%x, %p_lin_weight");
  auto s = choose_trainable(b.m, {});
  INFO(s.status().message());
  REQUIRE(s.ok());
  CHECK(s->graph_signature);
  CHECK(s->trainable == std::vector<std::string>{"a.weight", "val_20"});
  CHECK(s->frozen == std::vector<std::string>{"rope.inv_freq", "cos_table", "val_9", "val_12"});
  CHECK(choice(*s, "val_20")->source == "lin.weight");
  CHECK(choice(*s, "rope.inv_freq")->reason == "a buffer in the graph signature");
  CHECK(choice(*s, "cos_table")->reason == "folded from buffers and constants");
  std::vector<std::string> lines = describe_choices(*s);
  CHECK(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("val_20 (= lin.weight)") != std::string::npos;
  }));
}

TEST_CASE("trainable_set.a_fold_the_file_cannot_undo_is_refused_until_the_description_settles_it") {
  Builder b;
  b.signature({{"PARAMETER", "pos.weight"}});
  // A lookup of positions folded into a new tensor: read by an Add that was
  // not the lookup's own op, and made of the table and constants.
  b.folded("embedding_1", floats({1, 2, 2}), "['pos.weight', 'arange', 'val_4']");
  b.node("add", {"x", "embedding_1"}, "%x, %embedding");
  auto s = choose_trainable(b.m, {});
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("'embedding_1', folded from pos.weight, arange, val_4") != std::string::npos);
  CHECK(s.status().message().find("optimize=False") != std::string::npos);
  CHECK(s.status().message().find("trainable: {exclude") != std::string::npos);
  auto frozen = choose_trainable(b.m, {.exclude = {"embedding_*"}});
  REQUIRE(frozen.ok());
  CHECK(frozen->frozen == std::vector<std::string>{"embedding_1"});
  auto trained = choose_trainable(b.m, {.include = {"embedding_1"}});
  REQUIRE(trained.ok());
  CHECK(trained->trainable == std::vector<std::string>{"embedding_1"});
  // One parameter alone, but transformed by the model (its consumer's FX node
  // did not read the parameter: an exp or a slice of it), is refused too.
  Builder e;
  e.signature({{"PARAMETER", "log_scale"}});
  e.folded("val_3", floats({2}), "['log_scale']");
  e.node("mul", {"x", "val_3"}, "%x, %exp");
  CHECK_FALSE(choose_trainable(e.m, {}).ok());
}

TEST_CASE("trainable_set.merged_parameters_are_given_back_or_refused") {
  Builder b;
  b.signature({{"PARAMETER", "a.bias"}, {"PARAMETER", "b.bias"}, {"PARAMETER", "c.bias"}});
  b.param("a.bias", floats({2}, 0.f));
  b.node("add_a", {"x", "a.bias"}, "%x, %p_a_bias");
  b.node("add_b", {"add_a_out", "a.bias"}, "%add_a, %p_b_bias");  // merged into a.bias: read b.bias in PyTorch
  Model given_back = b.m;
  std::vector<std::string> undone = undo_exporter_folds(given_back);
  REQUIRE(undone.size() == 1);
  CHECK(undone[0].find("b.bias") != std::string::npos);
  CHECK(given_back.graph.nodes[1].inputs[1] == "b.bias");
  CHECK(given_back.graph.nodes[0].inputs[1] == "a.bias");
  auto s = choose_trainable(given_back, {});
  REQUIRE(s.ok());
  CHECK(s->trainable == std::vector<std::string>{"a.bias", "b.bias"});
  // Not undone (never called): the file would train a.bias and b.bias as one.
  auto merged = choose_trainable(b.m, {});
  REQUIRE_FALSE(merged.ok());
  CHECK(merged.status().message().find("removed 1 parameter(s)") != std::string::npos);
  CHECK(merged.status().message().find("b.bias") != std::string::npos);
  // A node whose FX node read two merged parameters but that reads one
  // initializer: which is which cannot be told, so it stays refused.
  b.node("add_c", {"add_b_out", "a.bias"}, "%p_b_bias, %p_c_bias");
  Model ambiguous = b.m;
  undo_exporter_folds(ambiguous);
  auto refused = choose_trainable(ambiguous, {});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("c.bias") != std::string::npos);
}

TEST_CASE("trainable_set.a_tied_transpose_is_computed_from_its_parameter") {
  Tensor w = floats({2, 3});
  Tensor wt = Tensor::host(DType::kFloat, {3, 2});
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 3; ++c) wt.data<float>()[c * 2 + r] = w.data<float>()[r * 3 + c];
  Builder b;
  b.signature({{"PARAMETER", "wte.weight"}});
  b.param("wte.weight", w);
  b.folded("val_8", wt, "['wte.weight']");
  b.node("head", {"x", "val_8"}, "%x, %p_wte_weight");
  Model undone = b.m;
  std::vector<std::string> lines = undo_exporter_folds(undone);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("transposed") != std::string::npos);
  CHECK_FALSE(undone.graph.is_initializer("val_8"));
  REQUIRE(undone.graph.nodes[0].op_type == "Transpose");
  CHECK(undone.graph.nodes[0].inputs == std::vector<std::string>{"wte.weight"});
  CHECK(undone.graph.nodes[0].outputs == std::vector<std::string>{"val_8"});
  auto s = choose_trainable(undone, {});
  REQUIRE(s.ok());
  CHECK(s->trainable == std::vector<std::string>{"wte.weight"});
  // Values that are not the transpose: left folded, and refused (a second
  // copy of a parameter that also trains itself).
  Model other = b.m;
  other.graph.initializers.at("val_8").data<float>()[1] += 1.f;
  CHECK(undo_exporter_folds(other).empty());
  CHECK_FALSE(choose_trainable(other, {}).ok());
}

TEST_CASE("trainable_set.a_zero_bias_dropped_from_a_gemm_is_given_back") {
  auto gemm = [](Builder& b, const std::string& name, const std::string& weight, const std::string& fx_target,
                 const std::string& args, bool trans_b) {
    Node n;
    n.name = name;
    n.op_type = "Gemm";
    n.inputs = {"x", weight};
    n.outputs = {name + "_out"};
    if (trans_b) n.attributes.push_back(Attribute::make_int("transB", 1));
    n.metadata = {{"pkg.torch.onnx.fx_node", "%" + name + " : [num_users=1] = call_function[target=torch.ops.aten." +
                                                 fx_target + "](args = (" + args + "), kwargs = {})"}};
    b.m.graph.nodes.push_back(std::move(n));
  };
  Builder b;
  b.signature({{"PARAMETER", "fc.weight"}, {"PARAMETER", "fc.bias"}, {"PARAMETER", "proj.weight"},
               {"PARAMETER", "proj.bias"}});
  b.param("fc.weight", floats({3, 2}));    // nn.Linear: [out, in], read with transB
  b.param("proj.weight", floats({2, 4}));  // GPT-2's Conv1D: [in, out], addmm(bias, x, W)
  gemm(b, "linear", "fc.weight", "linear.default", "%x, %p_fc_weight, %p_fc_bias", true);
  gemm(b, "addmm", "proj.weight", "addmm.default", "%p_proj_bias, %x, %p_proj_weight", false);
  auto before = choose_trainable(b.m, {});
  REQUIRE_FALSE(before.ok());
  CHECK(before.status().message().find("fc.bias") != std::string::npos);
  Model restored = b.m;
  std::vector<std::string> lines = undo_exporter_folds(restored);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("2 zero bias(es)") != std::string::npos);
  const Graph& g = restored.graph;
  CHECK(g.nodes[0].inputs == std::vector<std::string>{"x", "fc.weight", "fc.bias"});
  CHECK(g.nodes[1].inputs == std::vector<std::string>{"x", "proj.weight", "proj.bias"});
  REQUIRE(g.is_initializer("fc.bias"));
  CHECK(g.initializers.at("fc.bias").dims() == Dims{3});
  CHECK(g.initializers.at("proj.bias").dims() == Dims{4});
  for (float v : g.initializers.at("proj.bias").span<float>()) CHECK(v == 0.f);
  auto s = choose_trainable(restored, {});
  INFO(s.status().message());
  REQUIRE(s.ok());
  CHECK(s->trainable == std::vector<std::string>{"fc.weight", "proj.weight", "fc.bias", "proj.bias"});
  // A Gemm whose FX node added no parameter (a bias computed in the model)
  // is left alone, and the missing parameter stays refused.
  Builder c;
  c.signature({{"PARAMETER", "fc.weight"}, {"PARAMETER", "fc.bias"}});
  c.param("fc.weight", floats({3, 2}));
  gemm(c, "linear", "fc.weight", "linear.default", "%x, %p_fc_weight, %scaled_bias", true);
  c.node("use_bias", {"x", "x"}, "%x, %p_fc_bias");
  Model untouched = c.m;
  CHECK(undo_exporter_folds(untouched).empty());
  CHECK_FALSE(choose_trainable(untouched, {}).ok());
}

}  // namespace ort_train::testing
