// Loading, sorting and saving ONNX models: the IR round trip.
#include <filesystem>
#include <fstream>

#include <onnx/onnx_pb.h>

#include "graph/topo_sort.h"
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ort_train_test_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// y = relu(x * w + b), with the nodes stored in reverse order as ONNX Runtime's test models do.
Model unsorted_model() {
  Model m;
  m.ir_version = 10;  // newer than Debian's onnx 1.12 knows
  m.producer_name = "ort_train_test";
  m.opset_imports = {{"", 21}};
  Graph& g = m.graph;
  g.name = "unsorted";
  g.inputs.push_back({"x", DType::kFloat, Shape{Dim("batch"), Dim(3)}, ""});
  g.outputs.push_back({"y", DType::kFloat, Shape{Dim("batch"), Dim(3)}, ""});
  g.initializers["w"] = make<float>({3}, {1, 2, 3});
  g.initializers["b"] = make<float>({3}, {-1, 0, 1});
  g.initializer_order = {"w", "b"};
  Node relu{"relu", "Relu", "", {"xwb"}, {"y"}, {}, ""};
  Node add{"add", "Add", "", {"xw", "b"}, {"xwb"}, {}, ""};
  Node mul{"mul", "Mul", "", {"x", "w"}, {"xw"}, {Attribute::make_string("note", "kept"),
                                                  Attribute::make_ints("ints", {1, -2}),
                                                  Attribute::make_float("f", 0.5f)}, ""};
  g.nodes = {relu, add, mul};
  return m;
}

}  // namespace

TEST_CASE("topological_sort orders unsorted nodes and keeps file order among independent ones", "[graph][sort]") {
  Model m = unsorted_model();
  REQUIRE(topological_sort(m.graph).ok());
  REQUIRE(m.graph.nodes[0].name == "mul");
  REQUIRE(m.graph.nodes[1].name == "add");
  REQUIRE(m.graph.nodes[2].name == "relu");
}

TEST_CASE("topological_sort reports a cycle and a dangling input by name", "[graph][sort]") {
  Model m = unsorted_model();
  m.graph.nodes[2].inputs[0] = "y";  // mul reads relu's output: a cycle
  Status st = topological_sort(m.graph);
  REQUIRE_FALSE(st.ok());
  REQUIRE_THAT(st.message(), Catch::Contains("cycle"));
  Model d = unsorted_model();
  d.graph.nodes[1].inputs[1] = "nowhere";
  st = topological_sort(d.graph);
  REQUIRE_THAT(st.message(), Catch::Contains("nowhere"));
  REQUIRE_THAT(st.message(), Catch::Contains("add"));
}

TEST_CASE("save then load keeps names, attributes, values and metadata", "[graph][onnx_io]") {
  fs::path dir = temp_dir("roundtrip");
  Model m = unsorted_model();
  REQUIRE(topological_sort(m.graph).ok());
  m.metadata_props.push_back({"key", "value"});
  std::string path = (dir / "m.onnx").string();
  REQUIRE(save_model(m, path).ok());
  auto loaded = load_model(path);
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  const Model& l = *loaded;
  REQUIRE(l.ir_version == 10);
  REQUIRE(l.opset("") == 21);
  REQUIRE(l.producer_name == "ort_train_test");
  REQUIRE(l.metadata_props.size() == 1);
  REQUIRE(l.graph.nodes.size() == 3);
  const Node& mul = l.graph.nodes[0];
  REQUIRE(mul.name == "mul");
  REQUIRE(mul.attr_string("note", "") == "kept");
  REQUIRE(mul.attr_ints("ints") == std::vector<int64_t>{1, -2});
  REQUIRE(mul.attr_float("f", 0) == 0.5f);
  REQUIRE(l.graph.inputs[0].shape->at(0).symbol == "batch");
  require_close(l.graph.initializers.at("w"), make<float>({3}, {1, 2, 3}));
  REQUIRE(l.graph.initializer_order == std::vector<std::string>{"w", "b"});
  // Saving the loaded model again gives identical bytes: nothing drifts.
  std::string path2 = (dir / "m2.onnx").string();
  REQUIRE(save_model(l, path2).ok());
  REQUIRE(*read_file(path) == *read_file(path2));
  fs::remove_all(dir);
}

TEST_CASE("a loaded model runs and its outputs are right", "[graph][onnx_io]") {
  fs::path dir = temp_dir("run");
  std::string path = (dir / "m.onnx").string();
  REQUIRE(save_model(unsorted_model(), path).ok());
  auto m = load_model(path);
  REQUIRE(m.ok());
  REQUIRE(infer_shapes(*m).ok());
  auto ex = Executor::create(*m);
  REQUIRE(ex.ok());
  auto out = (*ex)->run({{"x", make<float>({2, 3}, {1, 1, 1, -1, -1, -1})}});
  REQUIRE(out.ok());
  require_close(out->at("y"), make<float>({2, 3}, {0, 2, 4, 0, 0, 0}));
  fs::remove_all(dir);
}

TEST_CASE("external-data initializers are read from beside the model", "[graph][onnx_io]") {
  fs::path dir = temp_dir("external");
  std::vector<float> w = {1.5f, 2.5f, 3.5f, 4.5f};
  {
    std::ofstream data(dir / "weights.bin", std::ios::binary);
    std::string pad(16, '\0');  // a nonzero offset, as real files have
    data.write(pad.data(), 16);
    data.write(reinterpret_cast<const char*>(w.data()), 16);
  }
  onnx::ModelProto mp;
  mp.set_ir_version(8);
  mp.add_opset_import()->set_version(17);
  auto* g = mp.mutable_graph();
  auto* init = g->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(4);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const char* v) {
    auto* e = init->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "weights.bin");
  kv("offset", "16");
  kv("length", "16");
  auto* n = g->add_node();
  n->set_op_type("Identity");
  n->add_input("w");
  n->add_output("y");
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  {
    std::ofstream f(dir / "ext.onnx", std::ios::binary);
    f << mp.SerializeAsString();
  }
  auto m = load_model((dir / "ext.onnx").string());
  INFO(m.status().message());
  REQUIRE(m.ok());
  require_close(m->graph.initializers.at("w"), make<float>({4}, {1.5f, 2.5f, 3.5f, 4.5f}));

  // A truncated external file is an error naming the initializer.
  fs::resize_file(dir / "weights.bin", 20);
  auto bad = load_model((dir / "ext.onnx").string());
  REQUIRE_FALSE(bad.ok());
  REQUIRE_THAT(bad.status().message(), Catch::Contains("'w'"));
  fs::remove_all(dir);
}

TEST_CASE("missing, truncated and non-ONNX files give one clear error", "[graph][onnx_io]") {
  auto missing = load_model("/nonexistent/model.onnx");
  REQUIRE_THAT(missing.status().message(), Catch::Contains("file not found"));
  fs::path dir = temp_dir("bad");
  std::string path = (dir / "m.onnx").string();
  REQUIRE(save_model(unsorted_model(), path).ok());
  std::string bytes = *read_file(path);
  {
    std::ofstream f(dir / "cut.onnx", std::ios::binary);
    f << bytes.substr(0, bytes.size() / 2);
  }
  auto cut = load_model((dir / "cut.onnx").string());
  REQUIRE_FALSE(cut.ok());
  REQUIRE_THAT(cut.status().message(), Catch::Contains("not a valid ONNX model"));
  fs::remove_all(dir);
}

TEST_CASE("write_file_atomic never leaves a partial file at the target", "[graph][onnx_io]") {
  fs::path dir = temp_dir("atomic");
  std::string path = (dir / "f.bin").string();
  REQUIRE(write_file_atomic(path, "complete").ok());
  // Writing into a folder that does not exist fails and leaves the old file untouched.
  REQUIRE_FALSE(write_file_atomic((dir / "no" / "f.bin").string(), "x").ok());
  REQUIRE(*read_file(path) == "complete");
  for (const auto& e : fs::directory_iterator(dir)) REQUIRE(e.path().filename() == "f.bin");
  fs::remove_all(dir);
}

TEST_CASE("the ONNX Runtime tiny BERT test model (unsorted, decomposed LayerNorm) loads and sorts", "[graph][onnx_io][shared]") {
  fs::path peers = fs::path(source_dir()) / ".." / "shared" / "peers" / "onnxruntime_testdata";
  if (!fs::exists(peers)) {
    ORT_TRAIN_SKIP("../shared/peers/onnxruntime_testdata is absent (a user's clone has no ../shared)");
  }
  int loaded = 0;
  for (const auto& e : fs::recursive_directory_iterator(peers)) {
    if (e.path().extension() != ".onnx") continue;
    auto m = load_model(e.path().string());
    INFO(e.path().string() << ": " << m.status().message());
    REQUIRE(m.ok());
    ++loaded;
  }
  REQUIRE(loaded > 0);
}

TEST_CASE("a real exported model survives save and load and gives the same outputs", "[graph][onnx_io]") {
  fs::path src = fs::path(source_dir()) / "tests" / "models" / "bert";
  auto m = load_model((src / "model.onnx").string());
  REQUIRE(m.ok());
  fs::path dir = temp_dir("bert_roundtrip");
  std::string saved = (dir / "bert.onnx").string();
  REQUIRE(save_model(*m, saved).ok());
  auto again = load_model(saved);
  REQUIRE(again.ok());
  REQUIRE(again->graph.nodes.size() == m->graph.nodes.size());
  for (size_t i = 0; i < m->graph.nodes.size(); ++i) {
    REQUIRE(again->graph.nodes[i].name == m->graph.nodes[i].name);
    REQUIRE(again->graph.nodes[i].attributes.size() == m->graph.nodes[i].attributes.size());
  }
  std::map<std::string, Tensor> feeds;
  for (const char* name : {"input_ids", "attention_mask", "token_type_ids"})
    feeds[name] = read_tensor_file((src / "test_data_set_0" / (std::string(name) + ".pb")).string())->tensor;
  auto run = [&](Model& model) {
    REQUIRE(infer_shapes(model).ok());
    auto ex = Executor::create(model);
    REQUIRE(ex.ok());
    auto out = (*ex)->run(feeds);
    REQUIRE(out.ok());
    return out->at("logits");
  };
  Tensor a = run(*m), b = run(*again);
  require_close(b, a, 0, 0);
  fs::remove_all(dir);
}

TEST_CASE("onnx_io: an initializer whose data disagrees with its dims is refused by name") {
  onnx::TensorProto p;
  p.set_name("w");
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(4);
  p.set_raw_data(std::string(8, '\0'));  // two floats for four
  auto short_data = tensor_from_proto(p, "");
  REQUIRE_FALSE(short_data.ok());
  CHECK(short_data.status().message() == "tensor 'w' holds 2 values but dims [4] need 4");
  p.set_dims(0, -4);
  auto negative = tensor_from_proto(p, "");
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.status().message() == "tensor 'w' has a negative dimension");
  p.set_dims(0, int64_t{1} << 40);
  p.add_dims(1 << 20);
  auto huge = tensor_from_proto(p, "");
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.status().message().find("tensor 'w' has implausible dims") == 0);
}

// Found by fuzz_model_execution: a bool byte of 5 read as a bool is
// undefined behaviour (an If's condition held one).
TEST_CASE("onnx_io: bool bytes other than 0 and 1 load as true") {
  onnx::TensorProto p;
  p.set_name("flags");
  p.set_data_type(onnx::TensorProto::BOOL);
  p.add_dims(4);
  p.set_raw_data(std::string("\x00\x01\x05\xff", 4));
  auto t = tensor_from_proto(p, "");
  REQUIRE(t.ok());
  const auto* bytes = static_cast<const uint8_t*>(t->raw());
  CHECK(std::vector<int>(bytes, bytes + 4) == std::vector<int>{0, 1, 1, 1});
}

// Found by the 2026-11-26 hostile-input round: an empty required input or a
// node without outputs reached the shape rules and kernels (SIGSEGV).
TEST_CASE("onnx_io: a node with an empty required input or no output is refused by name") {
  auto load_with = [](std::vector<std::string> inputs, std::vector<std::string> outputs) {
    onnx::ModelProto mp;
    mp.set_ir_version(8);
    mp.add_opset_import()->set_version(17);
    auto* g = mp.mutable_graph();
    auto* x = g->add_input();
    x->set_name("x");
    x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* n = g->add_node();
    n->set_name("n");
    n->set_op_type(inputs.size() == 1 ? "Relu" : "Clip");
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    g->add_output()->set_name(outputs.empty() || outputs[0].empty() ? "x" : outputs[0]);
    return load_model_from_bytes(mp.SerializeAsString(), "");
  };
  auto empty = load_with({""}, {"y"});
  REQUIRE_FALSE(empty.ok());
  CHECK_THAT(empty.status().message(), Catch::Contains("node 'n' (Relu): input 0 ('X') is required but the node leaves it empty"));
  auto none = load_with({"x"}, {});
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.status().message(), Catch::Contains("node 'n' (Relu): the node has no output"));
  // Clip's min and max are optional: leaving min empty is fine.
  auto optional = load_with({"x", "", "x"}, {"y"});
  INFO(optional.status().message());
  CHECK(optional.ok());
}
