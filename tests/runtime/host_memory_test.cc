// The host's memory budget (runtime/cpu/host_memory.h): physical memory,
// lowered by RLIMIT_AS and the cgroup limit; and what happens past it, through
// the real binary under `ulimit -v`: a plan over it is refused before it runs,
// and an allocation that still fails is an error naming the node (it was a
// SIGSEGV: host storage never checked its allocation).
#include <onnx/onnx_pb.h>

#include <fstream>

#include "graph/onnx_io.h"
#include "runtime/cpu/host_memory.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

bool address_sanitized() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
  return false;
}

// y = Tile(x, r), x a 1-element float initializer; r an initializer holding
// `repeats`, or (when repeats < 0) a graph input fed at run time.
void save_tile(const std::string& path, int64_t repeats) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("tile");
  onnx::TensorProto* x = g->add_initializer();
  x->set_name("x");
  x->set_data_type(onnx::TensorProto::FLOAT);
  x->add_dims(1);
  x->add_float_data(1.f);
  if (repeats >= 0) {
    onnx::TensorProto* r = g->add_initializer();
    r->set_name("r");
    r->set_data_type(onnx::TensorProto::INT64);
    r->add_dims(1);
    r->add_int64_data(repeats);
  } else {
    onnx::ValueInfoProto* r = g->add_input();
    r->set_name("r");
    r->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
    r->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
  }
  onnx::NodeProto* n = g->add_node();
  n->set_name("big");
  n->set_op_type("Tile");
  n->add_input("x");
  n->add_input("r");
  n->add_output("y");
  g->add_output()->set_name("y");
  std::ofstream out(path, std::ios::binary);
  REQUIRE(m.SerializeToOstream(&out));
}

}  // namespace

TEST_CASE("host_memory.the_smallest_limit_is_the_budget") {
  CHECK(smallest_memory_limit(24 * kGiB, 0, std::nullopt) == 24 * kGiB);
  CHECK(smallest_memory_limit(24 * kGiB, 4 * kGiB, std::nullopt) == 4 * kGiB);
  CHECK(smallest_memory_limit(24 * kGiB, 0, std::string("2147483648")) == 2 * kGiB);
  CHECK(smallest_memory_limit(24 * kGiB, 8 * kGiB, std::string("2147483648")) == 2 * kGiB);
  // No limit: cgroup v2's "max", v1's page-rounded INT64_MAX, nothing known.
  CHECK(smallest_memory_limit(24 * kGiB, 0, std::string("max")) == 24 * kGiB);
  CHECK(smallest_memory_limit(24 * kGiB, 0, std::string("9223372036854771712")) == 24 * kGiB);
  CHECK(smallest_memory_limit(0, 0, std::nullopt) == 0);
  CHECK(smallest_memory_limit(0, 3 * kGiB, std::nullopt) == 3 * kGiB);
  CHECK(host_memory_bytes() > 0);
}

TEST_CASE("host_memory.ulimit_lowers_the_budget_and_a_failed_allocation_names_the_node") {
  // AddressSanitizer reserves terabytes of address space: no ulimit -v there.
  if (address_sanitized()) ORT_TRAIN_SKIP("an AddressSanitizer build cannot run under ulimit -v");
  Dir d("ort_train_host_memory");
  std::filesystem::create_directories(d.p / "inputs");
  const std::string limited = "ulimit -v 4000000 && " + ort_train_binary();  // 4,096,000,000 bytes
  // A 4 GiB output known at plan time: over the budget RLIMIT_AS sets.
  save_tile(d / "known.onnx", int64_t{1} << 30);
  CliOutcome k = run_shell(limited + " run --model " + d / "known.onnx" + " --inputs " + d / "inputs", d.p.string());
  INFO(k.stderr_text);
  CHECK(k.exit_code == 1);
  CHECK(k.stderr_text.find("node 'big' (Tile): output 0 of shape [1073741824] (float32) needs 4294967296 bytes, more "
                           "than the memory budget of 4096000000 bytes") != std::string::npos);
  // 3.9 GB known only at run time: under the budget, but not with the address
  // space the libraries already hold. The allocation fails; the node is named.
  save_tile(d / "fed.onnx", -1);
  REQUIRE(write_tensor_file(make<int64_t>({1}, {975000000}), "r", d / "inputs/r.pb").ok());
  CliOutcome f = run_shell(limited + " run --model " + d / "fed.onnx" + " --inputs " + d / "inputs", d.p.string());
  INFO(f.stderr_text);
  CHECK(f.exit_code == 1);
  CHECK(f.stderr_text.find("node 'big' (Tile): out of host memory") != std::string::npos);
}

}  // namespace ort_train::testing
