// Large external-data weights mapped, not read, at load
// (graph/mapped_external_data.h): the values are the file's, reading in keeps
// the tensor's storage, a file changed after the load is an error naming the
// initializer (never SIGBUS or other bytes), and constant folding reads a
// mapped weight only when it folds it, not while autocast is still to come.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <onnx/onnx_pb.h>

#include "graph/mapped_external_data.h"
#include "graph/passes/pass.h"
#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kRows = 512, kCols = 1024;  // 2 MiB of float32: mapped at a 1 MiB threshold
constexpr uint64_t kOffset = 100;              // not page-aligned, as in real files

std::vector<float> weight_values(float shift) {
  std::vector<float> w(static_cast<size_t>(kRows * kCols));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 977) * 0.001f + shift;
  return w;
}

void write_weights(const fs::path& file, const std::vector<float>& w) {
  std::ofstream data(file, std::ios::binary | std::ios::trunc);
  std::string pad(kOffset, '\0');
  data.write(pad.data(), static_cast<std::streamsize>(pad.size()));
  data.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size() * sizeof(float)));
}

// y = x @ Transpose(w), w [kRows, kCols] in weights.bin at kOffset, as
// nn.Linear exports it.
void write_model(const fs::path& dir) {
  write_weights(dir / "weights.bin", weight_values(0.f));
  onnx::ModelProto mp;
  mp.set_ir_version(8);
  mp.add_opset_import()->set_version(17);
  auto* g = mp.mutable_graph();
  auto* init = g->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(kRows);
  init->add_dims(kCols);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = init->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "weights.bin");
  kv("offset", std::to_string(kOffset));
  kv("length", std::to_string(kRows * kCols * 4));
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  tt->mutable_shape()->add_dim()->set_dim_value(kCols);
  auto* t = g->add_node();
  t->set_name("transpose_w");
  t->set_op_type("Transpose");
  t->add_input("w");
  t->add_output("wt");
  auto* perm = t->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  perm->add_ints(1);
  perm->add_ints(0);
  auto* mm = g->add_node();
  mm->set_name("matmul");
  mm->set_op_type("MatMul");
  mm->add_input("x");
  mm->add_input("wt");
  mm->add_output("y");
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  std::ofstream(dir / "model.onnx", std::ios::binary) << mp.SerializeAsString();
}

Model load_mapped(const fs::path& dir) {
  LoadOptions options;
  options.map_external_from_bytes = uint64_t{1} << 20;
  auto m = load_model((dir / "model.onnx").string(), options);
  INFO(m.status().message());
  REQUIRE(m.ok());
  return std::move(m).value();
}

}  // namespace

TEST_CASE("mapped external data: the values are the file's, and reading in keeps the storage",
          "[graph][mapped_external_data]") {
  Dir dir("ort_train_mapped_values_" + std::to_string(::getpid()));
  write_model(dir.p);
  auto eager = load_model((dir.p / "model.onnx").string());
  REQUIRE(eager.ok());
  REQUIRE_FALSE(is_mapped_external(eager->graph.initializers.at("w")));  // no option: read at load

  const uint64_t before = mapped_external_bytes();
  {
    Model m = load_mapped(dir.p);
    const Tensor& w = m.graph.initializers.at("w");
    REQUIRE(is_mapped_external(w));
    REQUIRE(mapped_external_bytes() == before + kRows * kCols * 4);
    require_close(w, eager->graph.initializers.at("w"), 0, 0);  // read through the mapping
    auto copy = readable(w);  // read from the file into a copy of its own
    REQUIRE(copy.ok());
    REQUIRE(copy->raw() != w.raw());
    require_close(*copy, eager->graph.initializers.at("w"), 0, 0);
    REQUIRE(is_mapped_external(w));
    REQUIRE(readable(eager->graph.initializers.at("w"))->raw() == eager->graph.initializers.at("w").raw());
    const void* address = w.raw();
    std::shared_ptr<Storage> storage = w.storage();
    REQUIRE(read_in_initializers(m.graph).ok());
    REQUIRE_FALSE(is_mapped_external(w));
    REQUIRE(w.raw() == address);  // the same storage, now holding its own bytes
    REQUIRE(w.storage() == storage);
    REQUIRE(mapped_external_bytes() == before);
    require_close(w, eager->graph.initializers.at("w"), 0, 0);
    w.data<float>()[0] = 42.f;  // its own memory now: writable, and the file is untouched
    REQUIRE(read_in(w).ok());   // nothing left to read
  }
  auto again = load_model((dir.p / "model.onnx").string());
  REQUIRE(again.ok());
  require_close(again->graph.initializers.at("w"), eager->graph.initializers.at("w"), 0, 0);

  // Released while still mapped: the mapping goes with it.
  { Model m = load_mapped(dir.p); }
  REQUIRE(mapped_external_bytes() == before);
}

TEST_CASE("mapped external data: a file changed after the load is an error naming the initializer",
          "[graph][mapped_external_data][hostile]") {
  Dir dir("ort_train_mapped_changed_" + std::to_string(::getpid()));
  write_model(dir.p);
  const fs::path file = dir.p / "weights.bin";
  SECTION("rewritten in place, same size") {
    Model m = load_mapped(dir.p);
    ::usleep(20000);  // a later modification time even on a coarse clock
    write_weights(file, weight_values(1.f));
    Status s = read_in_initializers(m.graph);
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.message(), Catch::Contains("'w'") && Catch::Contains("changed after the model was loaded"));
  }
  SECTION("truncated") {
    Model m = load_mapped(dir.p);
    fs::resize_file(file, kOffset + 16);
    REQUIRE_FALSE(readable(m.graph.initializers.at("w")).ok());
    Status s = read_in_initializers(m.graph);  // an error, not SIGBUS
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.message(), Catch::Contains("'w'"));
  }
  SECTION("replaced by another file under its name") {
    Model m = load_mapped(dir.p);
    write_weights(dir.p / "other.bin", weight_values(2.f));
    fs::rename(dir.p / "other.bin", file);
    Status s = read_in_initializers(m.graph);
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.message(), Catch::Contains("'w'") && Catch::Contains("replaced or changed"));
  }
  SECTION("removed") {
    Model m = load_mapped(dir.p);
    fs::remove(file);
    Status s = read_in_initializers(m.graph);
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.message(), Catch::Contains("'w'"));
  }
}

TEST_CASE("mapped external data: constant folding reads a mapped weight when it folds it, not before autocast",
          "[graph][mapped_external_data][passes][constant_folding]") {
  Dir dir("ort_train_mapped_folding_" + std::to_string(::getpid()));
  write_model(dir.p);
  auto eager = load_model((dir.p / "model.onnx").string());
  REQUIRE(eager.ok());
  Model m = load_mapped(dir.p);
  std::weak_ptr<Storage> w = m.graph.initializers.at("w").storage();
  auto fold = PassRegistry::instance().create("constant_folding");
  REQUIRE(fold != nullptr);

  // The forward phase of a 16-bit build: left alone, still in the file.
  PassContext before_autocast;
  before_autocast.precision = DType::kBFloat16;
  before_autocast.autocast_to_come = true;
  auto r = fold->apply(m, before_autocast);
  REQUIRE(r.ok());
  REQUIRE_FALSE(*r);
  REQUIRE(m.graph.is_initializer("w"));
  REQUIRE(is_mapped_external(m.graph.initializers.at("w")));

  // Later: read, folded, and released with its last reader.
  PassContext later;
  later.precision = DType::kBFloat16;
  r = fold->apply(m, later);
  REQUIRE(r.ok());
  REQUIRE(*r);
  REQUIRE_FALSE(m.graph.is_initializer("w"));
  REQUIRE(w.expired());
  const Tensor& wt = m.graph.initializers.at("wt");
  REQUIRE_FALSE(is_mapped_external(wt));
  const Tensor& original = eager->graph.initializers.at("w");
  REQUIRE(wt.dims() == Dims{kCols, kRows});
  for (int64_t i = 0; i < kRows; i += 97)
    for (int64_t j = 0; j < kCols; j += 89)
      REQUIRE(wt.data<float>()[j * kRows + i] == original.data<float>()[i * kCols + j]);
}

TEST_CASE("mapped external data: a weight too large to fold is never read by constant folding",
          "[graph][mapped_external_data][passes][constant_folding][hostile]") {
  // 2^25 floats (128 MiB, over the fold limit of 2^24 elements), in a sparse
  // file that costs nothing on disk.
  Dir dir("ort_train_mapped_huge_" + std::to_string(::getpid()));
  write_model(dir.p);
  const int64_t rows = 4096, cols = 8192;
  fs::resize_file(dir.p / "weights.bin", kOffset + rows * cols * 4);
  onnx::ModelProto mp;
  {
    std::ifstream f(dir.p / "model.onnx", std::ios::binary);
    REQUIRE(mp.ParseFromIstream(&f));
  }
  auto* init = mp.mutable_graph()->mutable_initializer(0);
  init->set_dims(0, rows);
  init->set_dims(1, cols);
  for (auto& kv : *init->mutable_external_data())
    if (kv.key() == "length") kv.set_value(std::to_string(rows * cols * 4));
  mp.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(cols);
  {
    std::ofstream f(dir.p / "model.onnx", std::ios::binary | std::ios::trunc);
    REQUIRE(mp.SerializeToOstream(&f));
  }
  Model m = load_mapped(dir.p);
  auto fold = PassRegistry::instance().create("constant_folding");
  PassContext ctx;
  auto r = fold->apply(m, ctx);
  REQUIRE(r.ok());
  CHECK_FALSE(*r);
  CHECK(is_mapped_external(m.graph.initializers.at("w")));  // left for run time, and unread
}

}  // namespace ort_train::testing
