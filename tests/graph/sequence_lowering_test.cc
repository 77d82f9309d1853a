// Sequences lowered to tensor ops at load (graph/sequence_lowering.h): the
// lowered graph computes what the sequence ops would, and a sequence used
// any other way is left for the executor to refuse by name.
#include <algorithm>

#include "graph/sequence_lowering.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

struct SeqModel {
  Model m;
  SeqModel() {
    m.opset_imports.push_back({"", 18});
    m.graph.inputs.push_back(ValueInfo{"x", DType::kFloat, Shape{Dim(int64_t{2}), Dim(int64_t{6})}});
  }
  SeqModel& constant(const std::string& name, Tensor t) {
    m.graph.initializers[name] = t;
    m.graph.initializer_order.push_back(name);
    m.graph.values[name] = ValueInfo{name, t.dtype(), shape_from_dims(t.dims())};
    return *this;
  }
  SeqModel& node(const std::string& op, std::vector<std::string> in, std::string out, std::vector<Attribute> attrs = {}) {
    Node n;
    n.name = op + "_" + out;
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {std::move(out)};
    n.attributes = std::move(attrs);
    m.graph.nodes.push_back(std::move(n));
    return *this;
  }
  SeqModel& output(const std::string& name) {
    m.graph.outputs.push_back(ValueInfo{name, DType::kFloat, std::nullopt});
    return *this;
  }
  bool has_op(const std::string& op) const {
    return std::any_of(m.graph.nodes.begin(), m.graph.nodes.end(), [&](const Node& n) { return n.op_type == op; });
  }
  std::map<std::string, Tensor> run() {
    REQUIRE(infer_shapes(m, {}).ok());
    auto ex = Executor::create(m);
    INFO(ex.status().message());
    REQUIRE(ex.ok());
    Tensor x = Tensor::host(DType::kFloat, {2, 6});
    for (int64_t i = 0; i < 12; ++i) x.data<float>()[i] = static_cast<float>(i);
    auto out = (*ex)->run({{"x", x}}, {});
    INFO(out.status().message());
    REQUIRE(out.ok());
    return std::move(out).value();
  }
};

}  // namespace

TEST_CASE("sequence_lowering.split_to_sequence_read_at_constant_positions_becomes_slices") {
  // GPT-2's q, k, v as the dynamo exporter writes torch.split: chunks of 2 along axis 1.
  SeqModel s;
  s.constant("two", Tensor::from_vector<int64_t>({}, {2}));
  s.constant("p1", Tensor::from_vector<int64_t>({}, {1}));
  s.constant("p2", Tensor::from_vector<int64_t>({}, {2}));
  s.node("SplitToSequence", {"x", "two"}, "chunks", {Attribute::make_int("axis", 1)});
  s.node("SequenceAt", {"chunks", "p1"}, "k").node("SequenceAt", {"chunks", "p2"}, "v");
  // Rows, keepdims 0: x[1].
  s.node("SplitToSequence", {"x"}, "rows", {Attribute::make_int("axis", 0), Attribute::make_int("keepdims", 0)});
  s.node("SequenceAt", {"rows", "p1"}, "row1");
  // Sizes given: [1, 5] -> the second chunk is columns 1..5.
  s.constant("sizes", Tensor::from_vector<int64_t>({2}, {1, 5}));
  s.node("SplitToSequence", {"x", "sizes"}, "parts", {Attribute::make_int("axis", 1)});
  s.constant("last", Tensor::from_vector<int64_t>({}, {-1}));
  s.node("SequenceAt", {"parts", "last"}, "tail");
  s.output("k").output("v").output("row1").output("tail");
  auto lowered = lower_sequences(s.m);
  REQUIRE(lowered.ok());
  CHECK(lowered->size() == 3);
  CHECK_FALSE(s.has_op("SplitToSequence"));
  CHECK_FALSE(s.has_op("SequenceAt"));
  auto out = s.run();
  require_close(out.at("k"), make<float>({2, 2}, {2, 3, 8, 9}), 0, 0);
  require_close(out.at("v"), make<float>({2, 2}, {4, 5, 10, 11}), 0, 0);
  require_close(out.at("row1"), make<float>({6}, {6, 7, 8, 9, 10, 11}), 0, 0);
  require_close(out.at("tail"), make<float>({2, 5}, {1, 2, 3, 4, 5, 7, 8, 9, 10, 11}), 0, 0);
}

TEST_CASE("sequence_lowering.sequence_construct_becomes_concat_identity_and_a_count") {
  SeqModel s;
  s.constant("p0", Tensor::from_vector<int64_t>({}, {-2}));
  s.node("Neg", {"x"}, "nx").node("SequenceConstruct", {"x", "nx"}, "seq");
  s.node("ConcatFromSequence", {"seq"}, "stacked", {Attribute::make_int("axis", 0), Attribute::make_int("new_axis", 1)});
  s.node("ConcatFromSequence", {"seq"}, "joined", {Attribute::make_int("axis", 1)});
  s.node("SequenceAt", {"seq", "p0"}, "first").node("SequenceLength", {"seq"}, "count");
  s.output("stacked").output("joined").output("first");
  s.m.graph.outputs.push_back(ValueInfo{"count", DType::kInt64, Shape{}});
  REQUIRE(lower_sequences(s.m).ok());
  CHECK_FALSE(s.has_op("SequenceConstruct"));
  auto out = s.run();
  CHECK(out.at("stacked").dims() == Dims{2, 2, 6});
  CHECK(out.at("joined").dims() == Dims{2, 12});
  CHECK(out.at("joined").data<float>()[6] == -0.f);
  CHECK(out.at("joined").data<float>()[7] == -1.f);
  CHECK(out.at("first").dims() == Dims{2, 6});  // position -2 of two: x itself
  CHECK(out.at("first").data<float>()[11] == 11.f);
  CHECK(out.at("count").data<int64_t>()[0] == 2);
}

TEST_CASE("sequence_lowering.insert_erase_empty_and_identity_at_constant_positions") {
  // SequenceEmpty, then x inserted at the end, -x at the front, x + x at
  // position 1: [-x, 2x, x]; erasing the last leaves [-x, 2x].
  SeqModel s;
  s.constant("p1", Tensor::from_vector<int64_t>({}, {1}));
  s.constant("p0", Tensor::from_vector<int64_t>({}, {0}));
  s.node("Neg", {"x"}, "nx").node("Add", {"x", "x"}, "twice");
  s.node("SequenceEmpty", {}, "s0").node("SequenceInsert", {"s0", "x"}, "s1");
  s.node("SequenceInsert", {"s1", "nx", "p0"}, "s2").node("SequenceInsert", {"s2", "twice", "p1"}, "s3");
  s.node("Identity", {"s3"}, "s3i").node("SequenceErase", {"s3i"}, "s4");
  s.node("SequenceLength", {"s4"}, "count").node("SequenceAt", {"s4", "p1"}, "second");
  s.node("ConcatFromSequence", {"s3"}, "all", {Attribute::make_int("axis", 0)});
  s.output("second").output("all");
  s.m.graph.outputs.push_back(ValueInfo{"count", DType::kInt64, Shape{}});
  auto lowered = lower_sequences(s.m);
  REQUIRE(lowered.ok());
  CHECK(lowered->size() == 6);  // Empty, three Inserts, Identity, Erase
  for (const char* op : {"SequenceEmpty", "SequenceInsert", "SequenceErase", "SequenceAt", "SequenceLength"})
    CHECK_FALSE(s.has_op(op));
  auto out = s.run();
  CHECK(out.at("count").data<int64_t>()[0] == 2);
  CHECK(out.at("second").data<float>()[3] == 6.f);
  REQUIRE(out.at("all").dims() == Dims{6, 6});
  CHECK(out.at("all").data<float>()[1] == -1.f);   // -x first
  CHECK(out.at("all").data<float>()[13] == 2.f);   // then 2x
  CHECK(out.at("all").data<float>()[25] == 1.f);   // then x
}

TEST_CASE("sequence_lowering.a_sequence_used_otherwise_is_given_back_whole") {
  // A position known only at run time cannot be lowered: the split becomes
  // slices, the sequence one SequenceConstruct of them, and running names the
  // SequenceAt as an op without a kernel.
  SeqModel s;
  s.m.graph.inputs.push_back(ValueInfo{"where", DType::kInt64, Shape{}});
  s.constant("two", Tensor::from_vector<int64_t>({}, {2}));
  s.node("SplitToSequence", {"x", "two"}, "chunks", {Attribute::make_int("axis", 1)});
  s.node("SequenceAt", {"chunks", "where"}, "picked").output("picked");
  auto lowered = lower_sequences(s.m);
  REQUIRE(lowered.ok());
  CHECK(lowered->size() == 1);
  CHECK_FALSE(s.has_op("SplitToSequence"));
  CHECK(s.has_op("SequenceConstruct"));
  CHECK(s.has_op("SequenceAt"));
  // A sequence that is a graph output stays one too.
  SeqModel o;
  o.node("SequenceConstruct", {"x", "x"}, "pair");
  o.m.graph.outputs.push_back(ValueInfo{"pair", DType::kUndefined, std::nullopt});
  REQUIRE(lower_sequences(o.m).ok());
  CHECK(o.has_op("SequenceConstruct"));
  // Chunks of a size the file does not fix (x's dims unknown), read at
  // constant positions only: still slices.
  SeqModel u;
  u.m.graph.inputs[0].shape = std::nullopt;
  u.constant("two", Tensor::from_vector<int64_t>({}, {2}));
  u.constant("p1", Tensor::from_vector<int64_t>({}, {1}));
  u.node("SplitToSequence", {"x", "two"}, "chunks", {Attribute::make_int("axis", 1)});
  u.node("SequenceAt", {"chunks", "p1"}, "k").output("k");
  REQUIRE(lower_sequences(u.m).ok());
  CHECK_FALSE(u.has_op("SplitToSequence"));
  require_close(u.run().at("k"), make<float>({2, 2}, {2, 3, 8, 9}), 0, 0);
}

// Issue 52: a split list (or a dim split by 1) of millions became millions
// of Slices; past 65536 tensors the lowering refuses the node by name.
TEST_CASE("sequence_lowering.a_split_into_too_many_tensors_is_refused_by_name") {
  SeqModel s;
  std::vector<int64_t> sizes(70000, 0);
  sizes[0] = 6;
  s.constant("sizes", Tensor::from_vector<int64_t>({70000}, sizes));
  s.node("SplitToSequence", {"x", "sizes"}, "parts", {Attribute::make_int("axis", 1)});
  s.node("ConcatFromSequence", {"parts"}, "y", {Attribute::make_int("axis", 1)});
  s.output("y");
  auto lowered = lower_sequences(s.m);
  REQUIRE_FALSE(lowered.ok());
  CHECK_THAT(lowered.status().message(), Catch::Contains("SplitToSequence_parts") &&
                                             Catch::Contains("more than 65536 tensors"));
  // A dim of 2^40 split by 1: refused without listing its chunks.
  SeqModel wide;
  wide.m.graph.inputs[0].shape = Shape{Dim(int64_t{2}), Dim(int64_t{1} << 40)};
  wide.node("SplitToSequence", {"x"}, "cols", {Attribute::make_int("axis", 1)});
  wide.node("ConcatFromSequence", {"cols"}, "y", {Attribute::make_int("axis", 1)});
  wide.output("y");
  auto refused = lower_sequences(wide.m);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("more than 65536 tensors"));
}

}  // namespace ort_train::testing
