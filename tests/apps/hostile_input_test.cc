// Files from strangers: the three that crashed or leaked before (issue 15),
// each one clear message and a non-zero exit through the real command line.
//   - external data whose location leaves the model's folder (../, absolute,
//     a symlink out) was read and used as weights;
//   - ConstantOfShape of [2^30, 2^30] died with SIGSEGV;
//   - an .npy header claiming shape (100000000000, 64) over 64 bytes died
//     with SIGSEGV.
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "test_util.h"
#include "training/npz.h"

namespace ort_train::testing {
namespace {

namespace fs = std::filesystem;

void save(const onnx::ModelProto& m, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  REQUIRE(m.SerializeToOstream(&out));
}

onnx::ModelProto one_node_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  m.mutable_graph()->set_name("hostile");
  return m;
}

// y = x + w, w a float[4] initializer whose data lives at `location`.
onnx::ModelProto external_weight_model(const std::string& location) {
  onnx::ModelProto m = one_node_model();
  onnx::GraphProto* g = m.mutable_graph();
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  onnx::NodeProto* n = g->add_node();
  n->set_name("add");
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

// One node `op` named "big" whose inputs are initializers, output y.
struct Init {
  std::string name;
  int type;  // onnx::TensorProto::FLOAT or INT64
  std::vector<int64_t> dims;
  std::vector<double> values;
};
using IntAttrs = std::vector<std::pair<std::string, std::vector<int64_t>>>;
onnx::ModelProto constant_input_model(const std::string& op, const std::vector<Init>& inits, int opset = 17,
                                      const std::string& domain = "", const IntAttrs& attrs = {}) {
  onnx::ModelProto m = one_node_model();
  m.mutable_opset_import(0)->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  onnx::NodeProto* n = g->add_node();
  n->set_name("big");
  n->set_op_type(op);
  if (!domain.empty()) {
    n->set_domain(domain);
    auto* o = m.add_opset_import();
    o->set_domain(domain);
    o->set_version(1);
  }
  for (const auto& [name, ints] : attrs) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    if (name == "group") {  // the one scalar attribute the cases set
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(ints.at(0));
      continue;
    }
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : ints) a->add_ints(v);
  }
  for (const Init& i : inits) {
    n->add_input(i.name);
    if (i.name.empty()) continue;  // an omitted optional input
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(i.name);
    t->set_data_type(i.type);
    for (int64_t d : i.dims) t->add_dims(d);
    for (double v : i.values) {
      if (i.type == onnx::TensorProto::INT64) t->add_int64_data(static_cast<int64_t>(v));
      else t->add_float_data(static_cast<float>(v));
    }
  }
  n->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

// A float tensor of `dims`, every element 0.5.
Init floats(const std::string& name, std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return Init{name, onnx::TensorProto::FLOAT, std::move(dims), std::vector<double>(static_cast<size_t>(n), 0.5)};
}
Init ints(const std::string& name, std::vector<double> values) {
  return Init{name, onnx::TensorProto::INT64, {static_cast<int64_t>(values.size())}, std::move(values)};
}

}  // namespace

TEST_CASE("hostile.operands_that_do_not_fit_are_refused_by_name") {
  // Issue 33: each of these read or wrote past a buffer (AddressSanitizer saw
  // it; SIGSEGV or a silent garbage value without it). The shape rules now
  // check what their kernels index one operand by, and MaxPoolGrad its
  // indices; each is one message naming the node, before anything is written.
  Dir d("ort_train_operands");
  fs::create_directories(d / "empty");
  const std::string t = "com.ort_train";
  struct Case {
    const char* what;
    onnx::ModelProto model;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"MaxPoolGrad index past X",
       constant_input_model("MaxPoolGrad", {floats("dy", {1, 1, 2, 2}), Init{"idx", onnx::TensorProto::INT64, {1, 1, 2, 2}, {0, 99999, 3, 5}},
                                            ints("shape", {1, 1, 4, 4})}, 17, t),
       "outside its plane"},
      {"BatchNormalizationGrad scale of 1",
       constant_input_model("BatchNormalizationGrad", {floats("dy", {2, 3, 2, 2}), floats("x", {2, 3, 2, 2}),
                                                       floats("s", {1}), floats("m", {1}), floats("v", {1})}, 17, t),
       "one per channel"},
      {"GeluGrad X shorter than dY", constant_input_model("GeluGrad", {floats("dy", {100}), floats("x", {3})}, 17, t),
       "must have the shape of input 0"},
      {"SoftmaxGrad Y shorter than dY",
       constant_input_model("SoftmaxGrad", {floats("dy", {4, 10}), floats("probs", {3})}, 17, t),
       "must have the shape of input 0"},
      {"SliceGrad dY larger than its slice",
       constant_input_model("SliceGrad", {floats("dy", {100}), ints("shape", {3}), ints("st", {0}), ints("en", {100})},
                            17, t),
       "is not the slice"},
      {"PadGrad dY not X padded",
       constant_input_model("PadGrad", {floats("dy", {9, 9}), ints("shape", {2, 2})}, 17, t, {{"pads", {0, 0, 1, 1}}}),
       "padded by"},
      {"BatchNormalization scale of 1 for 50 channels",
       constant_input_model("BatchNormalization", {floats("x", {2, 50, 4}), floats("s", {1}), floats("b", {1}),
                                                   floats("m", {1}), floats("v", {1})}),
       "one per channel"},
      {"Conv bias of 1 for 8 channels",
       constant_input_model("Conv", {floats("x", {1, 3, 8, 8}), floats("w", {8, 3, 3, 3}), floats("b", {1})}),
       "one per output channel"},
      {"ConvTranspose bias of 1 for 8 channels",
       constant_input_model("ConvTranspose", {floats("x", {1, 3, 8, 8}), floats("w", {3, 8, 3, 3}), floats("b", {1})}),
       "one per output channel"},
      {"Conv with group 0 (the kernel divided channels by it; found by fuzz_model_execution)",
       constant_input_model("Conv", {floats("x", {1, 2, 4, 4}), floats("w", {2, 1, 3, 3})}, 17, "", {{"group", {0}}}),
       "group must be 1 or more, not 0"},
      {"ConvTranspose with group 0 (found by fuzz_model_execution)",
       constant_input_model("ConvTranspose", {floats("x", {1, 2, 3, 3}), floats("w", {2, 1, 3, 3})}, 17, "",
                            {{"group", {0}}}),
       "group must be 1 or more, not 0"},
      {"ConvTranspose W for other channels than X's (read group by group of X's channels)",
       constant_input_model("ConvTranspose", {floats("x", {1, 2, 3, 3}), floats("w", {3, 1, 3, 3})}),
       "input has 2 channels but W has 3"},
      {"ConvGrad with group 0", constant_input_model("ConvGrad", {floats("dy", {1, 2, 2, 2}), floats("x", {1, 2, 4, 4}),
                                                                  floats("w", {2, 1, 3, 3})}, 17, t, {{"group", {0}}}),
       "group must be 1 or more, not 0"},
      {"ConvTranspose with one output_shape value for two spatial dims (indexed before its start; found by "
       "fuzz_model_execution)",
       constant_input_model("ConvTranspose", {floats("x", {1, 1, 3, 3}), floats("w", {1, 2, 3, 3})}, 17, "",
                            {{"output_shape", {8}}}),
       "attributes do not match 2 spatial dims"},
      {"Conv with dilations near 2^62 (the window's span overflowed int64)",
       constant_input_model("Conv", {floats("x", {1, 1, 3, 3}), floats("w", {1, 1, 3, 3})}, 17, "",
                            {{"dilations", {int64_t{1} << 62, 1}}}),
       "window of dim 0 is out of range"},
      {"Gemm C that does not broadcast",
       constant_input_model("Gemm", {floats("a", {4, 5}), floats("b", {5, 6}), floats("c", {3, 7})}),
       "does not broadcast"},
      {"NegativeLogLikelihoodLoss labels shorter than N",
       constant_input_model("NegativeLogLikelihoodLoss", {floats("x", {10, 5}), ints("t", {1, 2})}),
       "without the class axis"},
      {"Less of int64 and float32 (read as int64: past the float buffer; found by fuzz_model_to_plan)",
       constant_input_model("Less", {ints("a", {1, 2, 3, 4}), floats("b", {4})}), "input 1 is float32"},
      {"Where with a float condition", constant_input_model("Where", {floats("c", {4}), floats("x", {4}), floats("z", {4})}),
       "the condition must be bool"},
      {"SoftmaxCrossEntropyLoss labels shorter than N",
       constant_input_model("SoftmaxCrossEntropyLoss", {floats("x", {10, 5}), ints("t", {1, 2})}),
       "without the class axis"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    save(c.model, d / "m.onnx");
    CliOutcome o = run_cli("--log-level error run --model " + (d / "m.onnx") + " --inputs " + (d / "empty") +
                               " --expected " + (d / "empty"),
                           d.p.string());
    INFO(o.stderr_text);
    CHECK((o.exit_code == 1 || o.exit_code == 2));
    CHECK(o.stderr_text.find("node 'big'") != std::string::npos);
    CHECK(o.stderr_text.find(c.says) != std::string::npos);
  }
}

TEST_CASE("hostile.huge_outputs_of_shape_ops_are_refused_by_name_within_max_memory") {
  // Each makes a float tensor of 8192 x 8192 (256 MiB) from a few bytes of
  // file; under --max-memory 64M each is refused before anything runs,
  // naming the node, the shape and the bytes.
  Dir d("ort_train_hostile_shape_ops");
  const int F = onnx::TensorProto::FLOAT, I = onnx::TensorProto::INT64;
  struct Case {
    std::string op;
    std::vector<Init> inits;
    std::string shape;
  };
  const std::string square = "[8192,8192]";
  for (const Case& c : {Case{"Expand", {{"x", F, {1}, {1}}, {"shape", I, {2}, {8192, 8192}}}, square},
                        Case{"Tile", {{"x", F, {1, 1}, {1}}, {"repeats", I, {2}, {8192, 8192}}}, square},
                        Case{"Pad", {{"x", F, {1, 1}, {1}}, {"pads", I, {4}, {0, 0, 8191, 8191}}}, square},
                        Case{"Resize", {{"x", F, {1, 1, 1, 1}, {1}}, {"", F, {}, {}}, {"scales", F, {4}, {1, 1, 8192, 8192}}},
                             "[1,1,8192,8192]"},
                        Case{"Range", {{"start", F, {}, {0}}, {"limit", F, {}, {67108864}}, {"delta", F, {}, {1}}},
                             "[67108864]"},
                        Case{"ConstantOfShape", {{"shape", I, {2}, {8192, 8192}}}, square}}) {
    INFO(c.op);
    const std::string model = (d.p / (c.op + ".onnx")).string();
    save(constant_input_model(c.op, c.inits), model);
    fs::create_directories(d.p / "inputs");
    CliOutcome o = run_cli("run --max-memory 64M --model " + model + " --inputs " + (d.p / "inputs").string(),
                           d.p.string());
    INFO(o.stderr_text);
    CHECK(o.exit_code == 1);
    CHECK(o.stderr_text.find("node 'big' (" + c.op + "): output 0 of shape " + c.shape +
                             " (float32) needs 268435456 bytes, more than the memory budget of 67108864 bytes") !=
          std::string::npos);
  }
  // A Reshape to a product the data does not have is a shape error, not an allocation.
  save(constant_input_model("Reshape", {{"x", F, {1}, {1}}, {"shape", I, {2}, {1 << 30, 1 << 30}}}),
       (d.p / "reshape.onnx").string());
  CliOutcome r = run_cli("run --model " + (d.p / "reshape.onnx").string() + " --inputs " + (d.p / "inputs").string(),
                         d.p.string());
  INFO(r.stderr_text);
  CHECK(r.exit_code == 2);
  CHECK(r.stderr_text.find("node 'big' (Reshape)") != std::string::npos);
}

TEST_CASE("hostile.max_memory_refuses_a_plan_that_does_not_fit") {
  Dir d("ort_train_hostile_max_memory");
  std::string m = source_dir() + "/tests/models/mlp";
  std::string cmd = "--model " + m + "/model.onnx --config " + m + "/training.yaml --steps 1 --batch-size 64 --device cpu";
  CliOutcome o = run_cli(cmd + " --max-memory 100K", d.p.string());
  INFO(o.stderr_text);
  CHECK(o.exit_code == 1);
  CHECK(o.stderr_text.find("the plan needs ") != std::string::npos);
  CHECK(o.stderr_text.find("more than the memory budget of 0.1 MiB set by --max-memory") != std::string::npos);
  CliOutcome bad = run_cli(cmd + " --max-memory lots", d.p.string());
  CHECK(bad.exit_code == 64);  // a bad command line
  CHECK(bad.stderr_text.find("--max-memory: 'lots' is not a size such as 2G, 512M or 1073741824 (bytes)") !=
        std::string::npos);
  CliOutcome fits = run_cli(cmd + " --max-memory 1G", d.p.string());
  INFO(fits.stderr_text);
  CHECK(fits.exit_code == 0);
}

TEST_CASE("hostile.description_paths_are_the_users_and_open_what_they_name") {
  // Issue 33, item 9: a description is its user's configuration, like the
  // command line: an absolute `model:` (a cluster config's /scratch/...), and
  // `..` or a link out of its folder, name the file that is opened. (Paths in
  // files from others stay confined: external data, the next test.)
  Dir d("ort_train_hostile_description");
  fs::create_directories(d.p / "conf");
  fs::create_directories(d.p / "models");
  const std::string mlp = source_dir() + "/tests/models/mlp";
  fs::copy_file(mlp + "/model.onnx", d.p / "models" / "m.onnx");
  fs::create_directory_symlink(mlp, d.p / "conf" / "link");
  auto body = read_file(mlp + "/training.yaml");
  REQUIRE(body.ok());
  const std::string conf = (d.p / "conf").string();
  for (const std::string& model : {mlp + "/model.onnx", std::string("../models/m.onnx"), std::string("link/model.onnx")}) {
    INFO(model);
    std::ofstream(d.p / "conf" / "desc.yaml") << "model: " << model << "\n" << *body;
    CliOutcome o = run_cli("inspect --config " + conf + "/desc.yaml", d.p.string());
    INFO(o.stderr_text);
    CHECK(o.exit_code == 0);
  }
  // A path that names nothing is one message with the path as opened.
  std::ofstream(d.p / "conf" / "desc.yaml") << "model: ../nowhere/m.onnx\n" << *body;
  CliOutcome o = run_cli("inspect --config " + conf + "/desc.yaml", d.p.string());
  INFO(o.stderr_text);
  CHECK(o.exit_code == 1);
  CHECK(o.stderr_text.find(conf + "/../nowhere/m.onnx") != std::string::npos);
}

TEST_CASE("hostile.external_data_outside_the_model_folder_is_refused") {
  Dir d("ort_train_hostile_external");
  fs::create_directories(d.p / "model");
  const std::string model = (d.p / "model" / "m.onnx").string();
  struct Case {
    std::string location, message;
  };
  fs::create_symlink("/etc/passwd", d.p / "model" / "weights.bin");
  for (const Case& c : {Case{"../../../../etc/passwd", "initializer 'w': external data location '../../../../etc/passwd' "
                                                       "leads out of the model's folder"},
                        Case{"/etc/passwd", "initializer 'w': external data location '/etc/passwd' is an absolute "
                                            "path; it must be a file in the model's folder"},
                        Case{"weights.bin", "initializer 'w': external data location 'weights.bin' leads out of the "
                                            "model's folder"}}) {
    INFO(c.location);
    save(external_weight_model(c.location), model);
    CliOutcome o = run_cli("inspect --model " + model, d.p.string());
    INFO(o.stderr_text);
    CHECK(o.exit_code == 1);
    CHECK(o.stderr_text.find(c.message) != std::string::npos);
  }
  // Inside the folder it loads (the check does not refuse what is legitimate):
  // inspect gets as far as asking for a loss.
  std::ofstream(d.p / "model" / "inside.bin", std::ios::binary).write("\0\0\x80?\0\0\0@\0\0@@\0\0\x80@", 16);
  save(external_weight_model("inside.bin"), model);
  CliOutcome ok = run_cli("inspect --model " + model, d.p.string());
  INFO(ok.stderr_text);
  CHECK(ok.stderr_text.find("external data") == std::string::npos);
  CHECK(ok.stderr_text.find("include no scalar loss") != std::string::npos);
}

TEST_CASE("hostile.constant_of_shape_beyond_memory_is_refused_by_name") {
  Dir d("ort_train_hostile_constant_of_shape");
  onnx::ModelProto m = one_node_model();
  onnx::GraphProto* g = m.mutable_graph();
  onnx::TensorProto* shape = g->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(int64_t{1} << 30);
  shape->add_int64_data(int64_t{1} << 30);
  onnx::NodeProto* n = g->add_node();
  n->set_name("huge");
  n->set_op_type("ConstantOfShape");
  n->add_input("shape");
  n->add_output("y");
  g->add_output()->set_name("y");
  save(m, (d.p / "m.onnx").string());
  fs::create_directories(d.p / "inputs");
  CliOutcome o = run_cli("run --model " + (d.p / "m.onnx").string() + " --inputs " + (d.p / "inputs").string(),
                         d.p.string());
  INFO(o.stderr_text);
  CHECK(o.exit_code == 1);
  CHECK(o.stderr_text.find("node 'huge' (ConstantOfShape): output 0 of shape [1073741824,1073741824] (float32) needs "
                           "4611686018427387904 bytes, more than the memory budget of") != std::string::npos);
}

TEST_CASE("hostile.npy_header_claiming_more_than_its_data_is_refused") {
  Dir d("ort_train_hostile_npz");
  // A valid archive with x of shape (1, 16) (64 bytes), whose header then claims (100000000000, 64).
  Tensor x = Tensor::from_vector<float>({1, 16}, std::vector<float>(16, 0.5f));
  Tensor labels = Tensor::from_vector<float>({1, 10}, std::vector<float>(10, 0.f));
  const std::string npz = (d.p / "data.npz").string();
  REQUIRE(write_npz({{"x", x}, {"labels", labels}}, npz).ok());
  std::string bytes = *read_file(npz);
  const std::string honest = "'shape': (1,16), }", lying = "'shape': (100000000000, 64), }";
  size_t at = bytes.find(honest);
  REQUIRE(at != std::string::npos);
  bytes.replace(at, honest.size() + (lying.size() - honest.size()), lying);  // eats header padding: same length
  std::ofstream(npz, std::ios::binary) << bytes;
  std::string m = source_dir() + "/tests/models/mlp";
  CliOutcome o = run_cli("--model " + m + "/model.onnx --config " + m + "/training.yaml --data " + npz +
                             " --steps 1 --batch-size 1 --device cpu",
                         d.p.string());
  INFO(o.stderr_text);
  CHECK(o.exit_code == 1);
  CHECK(o.stderr_text.find("x.npy: the .npy header's shape (100000000000, 64) of float32 needs 25600000000000 bytes of "
                           "data, the file holds 64") != std::string::npos);
}

}  // namespace ort_train::testing

namespace ort_train::testing {

TEST_CASE("hostile.cost_bombs_and_extreme_sizes_are_refused_by_name") {
  // Issue 33, items 8 and 10: a few bytes of file asking for more work or
  // elements than exist. Each is refused as the model loads, naming the node.
  Dir d("ort_train_hostile_extremes");
  fs::create_directories(d.p / "inputs");
  const int F = onnx::TensorProto::FLOAT, I = onnx::TensorProto::INT64;
  auto refused = [&](const std::string& name, const onnx::ModelProto& m, const std::string& message) {
    INFO(name);
    save(m, d / (name + ".onnx"));
    CliOutcome o = run_cli("run --model " + d / (name + ".onnx") + " --inputs " + d / "inputs", d.p.string());
    INFO(o.stderr_text);
    CHECK(o.exit_code != 0);
    CHECK(o.stderr_text.find("node 'big'") != std::string::npos);
    CHECK(o.stderr_text.find(message) != std::string::npos);
  };
  // Four 32 x 32 operands with eight distinct labels: 32^8 products per
  // operand, over a minute of the direct kernel (the file is 16 KB).
  std::vector<double> ones(32 * 32, 1.0);
  onnx::ModelProto einsum = constant_input_model(
      "Einsum", {{"a", F, {32, 32}, ones}, {"b", F, {32, 32}, ones}, {"c", F, {32, 32}, ones}, {"e", F, {32, 32}, ones}});
  onnx::AttributeProto* eq = einsum.mutable_graph()->mutable_node(0)->add_attribute();
  eq->set_name("equation");
  eq->set_type(onnx::AttributeProto::STRING);
  eq->set_s("ab,cd,ef,gh->");
  refused("einsum", einsum, "combinations of its labels");
  refused("range_tiny_delta",
          constant_input_model("Range", {{"start", F, {}, {0}}, {"limit", F, {}, {1}}, {"delta", F, {}, {1e-30}}}),
          "not a size a tensor can have");
  refused("range_infinite_limit",
          constant_input_model("Range", {{"start", F, {}, {0}},
                                         {"limit", F, {}, {std::numeric_limits<double>::infinity()}},
                                         {"delta", F, {}, {1}}}),
          "not a size a tensor can have");
  refused("range_int64_span",
          constant_input_model("Range", {{"start", I, {}, {-9223372036854775808.0}},
                                         {"limit", I, {}, {4611686018427387904.0}},
                                         {"delta", I, {}, {1}}}),
          "more elements than a tensor can hold");
  refused("pad_int64_min",
          constant_input_model("Pad", {{"x", F, {1, 1}, {1}}, {"pads", I, {4}, {-9223372036854775808.0, 0, 0, 0}}}),
          "pads value -9223372036854775808 is out of range");
  refused("pad_overflow",
          constant_input_model("Pad", {{"x", F, {1, 1}, {1}},
                                       {"pads", I, {4}, {0, 4611686018427387904.0, 0, 4611686018427387904.0}}}),
          "overflows its size");
}

// Issue 52 (a further round): steps x micro-batches x ranks past what the
// job's int64 micro-batch index counts is refused before training (it
// wrapped, and the one step never ended, so a stop signal never came due).
TEST_CASE("hostile.more_micro_batches_than_a_run_counts_are_refused") {
  Dir d("ort_train_hostile_micro_batches");
  const std::string mlp = source_dir() + "/tests/models/mlp";
  const std::string base = "train --log-level warn --model " + mlp + "/model.onnx --config " + mlp +
                           "/training.yaml --data " + mlp + "/train_batches --device cpu --optimizer sgd --lr 0.01 ";
  for (const char* flags : {"--steps 3 --grad-accum 4611686018427387904", "--steps 4611686018427387904 --grad-accum 2"}) {
    INFO(flags);
    CliOutcome o = run_cli(base + flags, d.p.string());
    INFO(o.stderr_text);
    CHECK(o.exit_code != 0);
    CHECK(o.stderr_text.find("more micro-batches than a run can count") != std::string::npos);
  }
}

}  // namespace ort_train::testing
