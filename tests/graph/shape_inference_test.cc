// Whole-graph shape inference: symbolic dims, bound dims, merging declared info.
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("broadcast of symbolic and known dims", "[graph][shape_inference]") {
  Node n{"n", "Add", "", {}, {}, {}, ""};
  Shape a{Dim("batch"), Dim(1), Dim(4)};
  Shape b{Dim(3), Dim(1)};
  auto r = broadcast_shapes({&a, &b}, n);
  REQUIRE(r.ok());
  REQUIRE(shape_to_string(*r) == "[batch,3,4]");
  Shape c{Dim("seq")};
  Shape d{Dim("other")};
  auto u = broadcast_shapes({&c, &d}, n);
  REQUIRE(u.ok());
  REQUIRE(shape_to_string(*u) == "[?]");  // two different symbols: unknown until run time
  Shape e{Dim(2)}, f{Dim(3)};
  REQUIRE_FALSE(broadcast_shapes({&e, &f}, n).ok());
}

TEST_CASE("dim_values bind symbols before inference", "[graph][shape_inference]") {
  Model m;
  m.opset_imports = {{"", 17}};
  m.graph.inputs.push_back({"x", DType::kFloat, Shape{Dim("batch"), Dim(4)}, ""});
  m.graph.initializers["w"] = make<float>({4}, {1, 2, 3, 4});
  m.graph.nodes.push_back({"mul", "Mul", "", {"x", "w"}, {"y"}, {}, ""});
  m.graph.outputs.push_back({"y", DType::kUndefined, std::nullopt, ""});
  ShapeInferenceOptions opts;
  opts.dim_values["batch"] = 8;
  REQUIRE(infer_shapes(m, opts).ok());
  REQUIRE(shape_to_string(m.graph.value("y")->shape) == "[8,4]");
  REQUIRE(m.graph.outputs[0].dtype == DType::kFloat);
  // The declared input keeps its symbol: binding is a property of the run, not of the model.
  REQUIRE(m.graph.inputs[0].shape->at(0).symbol == "batch");
}

TEST_CASE("dtype mismatches between inputs are reported with the node", "[graph][shape_inference]") {
  Model m;
  m.opset_imports = {{"", 17}};
  m.graph.inputs.push_back({"x", DType::kFloat, Shape{Dim(2)}, ""});
  m.graph.inputs.push_back({"i", DType::kInt64, Shape{Dim(2)}, ""});
  m.graph.nodes.push_back({"bad_add", "Add", "", {"x", "i"}, {"y"}, {}, ""});
  m.graph.outputs.push_back({"y", DType::kUndefined, std::nullopt, ""});
  Status st = infer_shapes(m);
  REQUIRE_FALSE(st.ok());
  REQUIRE_THAT(st.message(), Catch::Contains("bad_add"));
  REQUIRE_THAT(st.message(), Catch::Contains("int64"));
}

TEST_CASE("exported shape arithmetic folds to concrete shapes at load time", "[graph][shape_inference]") {
  // y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): PyTorch's x.view(x.size(0), -1)
  Model m;
  m.opset_imports = {{"", 17}};
  Graph& g = m.graph;
  g.inputs.push_back({"x", DType::kFloat, Shape{Dim("batch"), Dim(3), Dim(4)}, ""});
  g.initializers["zero"] = make<int64_t>({}, {0});
  g.initializers["axes0"] = make<int64_t>({1}, {0});
  g.initializers["minus1"] = make<int64_t>({1}, {-1});
  g.nodes.push_back({"shape", "Shape", "", {"x"}, {"s"}, {}, ""});
  g.nodes.push_back({"gather", "Gather", "", {"s", "zero"}, {"b"}, {}, ""});
  g.nodes.push_back({"unsq", "Unsqueeze", "", {"b", "axes0"}, {"b1"}, {}, ""});
  g.nodes.push_back({"concat", "Concat", "", {"b1", "minus1"}, {"target"}, {Attribute::make_int("axis", 0)}, ""});
  g.nodes.push_back({"reshape", "Reshape", "", {"x", "target"}, {"y"}, {}, ""});
  g.outputs.push_back({"y", DType::kUndefined, std::nullopt, ""});
  ShapeInferenceOptions opts;
  REQUIRE(infer_shapes(m, opts).ok());
  // batch is symbolic, so nothing folds, but the target's elements are followed (graph/dim_values.h).
  REQUIRE(shape_to_string(m.graph.value("y")->shape) == "[batch,12]");
  opts.dim_values["batch"] = 5;
  REQUIRE(infer_shapes(m, opts).ok());
  REQUIRE(shape_to_string(m.graph.value("y")->shape) == "[5,12]");
  // Without an evaluator the sizes are still followed element by element.
  opts.evaluate = nullptr;
  Model m2 = m;
  m2.graph.values.clear();
  REQUIRE(infer_shapes(m2, opts).ok());
  REQUIRE(shape_to_string(m2.graph.value("y")->shape) == "[5,12]");
}

// graph/dim_values.h: sizes computed from Shape(x) reach Reshape element by element.
TEST_CASE("Reshape reads sizes computed from shapes: symbols and numbers, element by element",
          "[graph][shape_inference]") {
  Model m;
  m.opset_imports = {{"", 14}};
  m.graph.inputs.push_back({"x", DType::kFloat, Shape{Dim("batch"), Dim("seq"), Dim(64)}, ""});
  m.graph.initializers["zero"] = make<int64_t>({}, {0});
  m.graph.initializers["one"] = make<int64_t>({}, {1});
  m.graph.initializers["axes"] = make<int64_t>({1}, {0});
  m.graph.initializers["heads"] = make<int64_t>({1}, {4});
  m.graph.initializers["size"] = make<int64_t>({1}, {16});
  m.graph.initializers["last"] = make<int64_t>({1}, {-1});
  m.graph.initializers["end"] = make<int64_t>({1}, {INT64_MAX});
  auto& n = m.graph.nodes;
  n.push_back({"shape", "Shape", "", {"x"}, {"s"}, {}, ""});
  n.push_back({"g0", "Gather", "", {"s", "zero"}, {"b"}, {}, ""});  // scalar: batch
  n.push_back({"g1", "Gather", "", {"s", "one"}, {"t"}, {}, ""});   // scalar: seq
  n.push_back({"u0", "Unsqueeze", "", {"b", "axes"}, {"b1"}, {}, ""});
  n.push_back({"u1", "Unsqueeze", "", {"t", "axes"}, {"t1"}, {}, ""});
  n.push_back({"cat", "Concat", "", {"b1", "t1", "heads", "size"}, {"target"}, {Attribute::make_int("axis", 0)}, ""});
  n.push_back({"reshape", "Reshape", "", {"x", "target"}, {"y"}, {}, ""});
  // Shape(y)[-1:] is now a number: what shape_folding folds (GPT-2's head size under its scale).
  n.push_back({"shape_y", "Shape", "", {"y"}, {"sy"}, {}, ""});
  n.push_back({"tail", "Slice", "", {"sy", "last", "end"}, {"d"}, {}, ""});
  n.push_back({"sq", "Squeeze", "", {"d", "axes"}, {"d0"}, {}, ""});
  n.push_back({"cast", "Cast", "", {"d0"}, {"d0i"}, {Attribute::make_int("to", 7)}, ""});
  n.push_back({"u2", "Unsqueeze", "", {"d0i", "axes"}, {"d1"}, {}, ""});
  n.push_back({"cat2", "Concat", "", {"b1", "d1", "last"}, {"target2"}, {Attribute::make_int("axis", 0)}, ""});
  n.push_back({"reshape2", "Reshape", "", {"y", "target2"}, {"z"}, {}, ""});
  m.graph.outputs.push_back({"z", DType::kUndefined, std::nullopt, ""});
  REQUIRE(infer_shapes(m).ok());
  CHECK(shape_to_string(m.graph.value("y")->shape) == "[batch,seq,4,16]");
  // The -1 of a computed target is the rest, seq * 4 here: no single symbol, so unknown.
  CHECK(shape_to_string(m.graph.value("z")->shape) == "[batch,16,?]");
}

// torch.onnx writes x.expand(b, hk, 2, s, d) with its target wrapped as
// Where(Equal(t, -1), 1, t), t = Reshape(Concat(sizes), [-1]): Llama's
// repeat_kv. The Expand's output shape is proved from the sizes, so
// attention_fusion can read the key/value heads unrepeated.
TEST_CASE("Expand reads a target computed from shapes through torch's Where(Equal(t, -1), 1, t)",
          "[graph][shape_inference]") {
  Model m;
  m.opset_imports = {{"", 14}};
  m.graph.inputs.push_back({"x", DType::kFloat, Shape{Dim("batch"), Dim(2), Dim("seq"), Dim(8)}, ""});
  m.graph.initializers["axes"] = make<int64_t>({1}, {0});
  m.graph.initializers["axis2"] = make<int64_t>({1}, {2});
  m.graph.initializers["rep"] = make<int64_t>({1}, {2});
  m.graph.initializers["flat"] = make<int64_t>({1}, {-1});
  m.graph.initializers["minus"] = make<int64_t>({5}, {-1, -1, -1, -1, -1});
  m.graph.initializers["ones"] = make<int64_t>({5}, {1, 1, 1, 1, 1});
  auto& n = m.graph.nodes;
  n.push_back({"shape", "Shape", "", {"x"}, {"s"}, {}, ""});
  std::vector<std::string> sizes;
  for (int i = 0; i < 4; ++i) {
    std::string k = std::to_string(i);
    m.graph.initializers["i" + k] = make<int64_t>({}, {i});
    n.push_back({"g" + k, "Gather", "", {"s", "i" + k}, {"d" + k}, {}, ""});
    n.push_back({"u" + k, "Unsqueeze", "", {"d" + k, "axes"}, {"e" + k}, {}, ""});
    sizes.push_back("e" + k);
  }
  n.push_back({"cat", "Concat", "", {sizes[0], sizes[1], "rep", sizes[2], sizes[3]}, {"c"},
               {Attribute::make_int("axis", 0)}, ""});
  n.push_back({"flatten", "Reshape", "", {"c", "flat"}, {"t"}, {}, ""});
  n.push_back({"eq", "Equal", "", {"t", "minus"}, {"is_minus"}, {}, ""});
  n.push_back({"where", "Where", "", {"is_minus", "ones", "t"}, {"target"}, {}, ""});
  n.push_back({"unsq", "Unsqueeze", "", {"x", "axis2"}, {"x5"}, {}, ""});
  n.push_back({"expand", "Expand", "", {"x5", "target"}, {"y"}, {}, ""});
  m.graph.outputs.push_back({"y", DType::kUndefined, std::nullopt, ""});
  REQUIRE(infer_shapes(m).ok());
  CHECK(shape_to_string(m.graph.value("y")->shape) == "[batch,2,2,seq,8]");

  SECTION("a size that may be -1 stops the chain: dims unknown, not guessed") {
    m.graph.inputs.push_back({"n_rep", DType::kInt64, Shape{Dim(1)}, ""});  // data: could be -1
    m.graph.initializers.erase("rep");
    n[std::find_if(n.begin(), n.end(), [](const Node& x) { return x.name == "cat"; }) - n.begin()].inputs[2] = "n_rep";
    m.graph.values.clear();  // what the first inference wrote
    REQUIRE(infer_shapes(m).ok());
    CHECK(shape_to_string(m.graph.value("y")->shape) == "[?,2,?,?,8]");
  }
}
