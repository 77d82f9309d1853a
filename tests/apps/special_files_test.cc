// Files that are not what they claim (issue 33's special files): a FIFO,
// /dev/zero or a link to itself where a model, description or batch should
// be is one clear error, never a hang or an abort; external data that is a
// folder is refused instead of read as zeros; outputs that are links or
// devices are written through, never replaced; a checkpoint folder's .lock
// that is a link is refused and what it points to is left alone. Each case
// makes its own file here; nothing is committed.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <onnx/onnx_pb.h>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;
namespace fs = std::filesystem;

namespace {

std::string mlp() { return source_dir() + "/tests/models/mlp"; }

std::string train_mlp(const std::string& extra) {
  return "--log-level warn --model " + mlp() + "/model.onnx --config " + mlp() + "/training.yaml --data " + mlp() +
         "/train_batches --optimizer sgd --lr 0.01 --device cpu --steps 2 " + extra;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("files.special_files_as_inputs_are_refused_not_waited_on") {
  Dir d("ort_train_special_inputs");
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
  struct Case {
    std::string args, expect;
  };
  for (const Case& c : {
           Case{"inspect --model " + (d / "fifo"), "is a FIFO, not a regular file"},
           Case{"inspect --model /dev/zero", "is a character device, not a regular file"},
           Case{"--model " + mlp() + "/model.onnx --config " + (d / "fifo") + " --steps 1", "is a FIFO"},
           Case{"--model " + mlp() + "/model.onnx --config /dev/zero --steps 1", "is a character device"},
           Case{"run --model " + mlp() + "/model.onnx --inputs " + (d / "fifo"), ""},
       }) {
    CliOutcome o = run_cli(c.args, d.p.string());
    INFO(c.args << "\n" << o.stderr_text);
    CHECK(o.exit_code != 0);
    CHECK(o.exit_code < 64);  // an error, not a crash (a signal would show as 128 + n)
    if (!c.expect.empty()) CHECK_THAT(o.stderr_text, Catch::Contains(c.expect));
  }
  // A batch file that is a link to itself.
  fs::create_directories(d.p / "batches" / "0");
  fs::create_symlink(d.p / "batches" / "0" / "x.pb", d.p / "batches" / "0" / "x.pb");
  fs::copy_file(mlp() + "/train_batches/0/labels.pb", d.p / "batches" / "0" / "labels.pb");
  CliOutcome loop = run_cli("--log-level warn --model " + mlp() + "/model.onnx --config " + mlp() +
                                "/training.yaml --data " + (d / "batches") + " --optimizer sgd --steps 1 --device cpu",
                            d.p.string());
  INFO(loop.stderr_text);
  CHECK(loop.exit_code == 1);
  CHECK_THAT(loop.stderr_text, Catch::Contains("x.pb"));
}

TEST_CASE("files.external_data_that_is_a_folder_is_refused") {
  Dir d("ort_train_external_folder");
  Model m;
  m.opset_imports = {{"", 17}};
  m.graph.inputs.push_back({"x", DType::kFloat, Shape{Dim(4)}, ""});
  m.graph.initializers["w"] = make<float>({4}, {1, 2, 3, 4});
  m.graph.initializer_order = {"w"};
  m.graph.nodes.push_back({"mul", "Mul", "", {"x", "w"}, {"y"}, {}, ""});
  m.graph.outputs.push_back({"y", DType::kFloat, Shape{Dim(4)}, ""});
  REQUIRE(save_model(m, d / "model.onnx").ok());
  // Rewrite w as external data whose location is a folder.
  auto bytes = read_file(d / "model.onnx");
  REQUIRE(bytes.ok());
  onnx::ModelProto mp;
  REQUIRE(mp.ParseFromString(*bytes));
  auto* w = mp.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value("weights");
  fs::create_directories(d.p / "weights");
  std::ofstream(d / "model.onnx", std::ios::binary | std::ios::trunc) << mp.SerializeAsString();
  auto loaded = load_model(d / "model.onnx");
  REQUIRE_FALSE(loaded.ok());
  CHECK_THAT(loaded.status().message(), Catch::Contains("directory"));
}

TEST_CASE("files.outputs_that_are_links_or_devices_are_written_through") {
  Dir d("ort_train_special_outputs");
  // --metrics /dev/stdout: the lines on standard output, the link left as it is.
  CliOutcome out = run_cli(train_mlp("--metrics /dev/stdout"), d.p.string());
  INFO(out.stderr_text);
  REQUIRE(out.exit_code == 0);
  CHECK_THAT(out.stdout_text, Catch::Contains("\"step\": 2"));
  CHECK(fs::is_symlink("/dev/stdout"));
  CHECK_FALSE(fs::exists("/dev/stdout.partial"));
  // A link to a regular file: written through; the link stays a link.
  std::ofstream(d / "target.jsonl") << "old\n";
  fs::create_symlink(d.p / "target.jsonl", d.p / "link.jsonl");
  CliOutcome link = run_cli(train_mlp("--metrics " + (d / "link.jsonl") + " --export " + (d / "model_link.onnx")),
                            d.p.string());
  INFO(link.stderr_text);
  REQUIRE(link.exit_code == 0);
  CHECK(fs::is_symlink(d.p / "link.jsonl"));
  CHECK_THAT(read_all(d / "target.jsonl"), Catch::Contains("\"step\": 2"));
}

TEST_CASE("files.a_lock_that_is_a_link_is_refused_and_its_target_untouched") {
  Dir d("ort_train_lock_link");
  fs::create_directories(d.p / "ckpt");
  std::ofstream(d / "precious.txt") << "precious\n";
  fs::create_symlink(d.p / "precious.txt", d.p / "ckpt" / ".lock");
  CliOutcome o = run_cli(train_mlp("--checkpoint-dir " + (d / "ckpt")), d.p.string());
  INFO(o.stderr_text);
  CHECK(o.exit_code == 1);
  CHECK_THAT(o.stderr_text, Catch::Contains("is a symbolic link: refused"));
  CHECK(read_all(d / "precious.txt") == "precious\n");
}

// Issue 52, items 2 and 5: names ort_train chooses (a checkpoint's, metrics'
// .partial) with a link or a FIFO planted at them before the run. The link is
// replaced and its target left as it was; the FIFO is no reason to wait.
TEST_CASE("files.links_and_fifos_planted_at_names_ort_train_chooses_are_replaced") {
  Dir d("ort_train_planted_names");
  fs::create_directories(d.p / "ckpt");
  std::ofstream(d / "victim.txt") << "precious\n";
  std::ofstream(d / "victim2.txt") << "precious\n";
  fs::create_symlink("../victim.txt", d.p / "ckpt" / "ckpt-00000002.ortc");
  fs::create_symlink(d.p / "victim2.txt", d.p / "m.jsonl.partial");
  REQUIRE(::mkfifo((d / "ckpt/ckpt-00000001.ortc").c_str(), 0600) == 0);
  CliOutcome o = run_shell("timeout 120 " + ort_train_binary() + " " +
                               train_mlp("--checkpoint-dir " + (d / "ckpt") + " --save-every 1 --metrics " +
                                         (d / "m.jsonl")),
                           d.p.string());
  INFO(o.stderr_text);
  REQUIRE(o.exit_code == 0);
  CHECK(read_all(d / "victim.txt") == "precious\n");
  CHECK(read_all(d / "victim2.txt") == "precious\n");
  CHECK(fs::is_regular_file(fs::symlink_status(d.p / "ckpt" / "ckpt-00000002.ortc")));
  CHECK(fs::is_regular_file(fs::symlink_status(d.p / "ckpt" / "ckpt-00000001.ortc")));
  CHECK(fs::is_regular_file(fs::symlink_status(d.p / "m.jsonl")));
  CHECK_THAT(read_all(d / "m.jsonl"), Catch::Contains("\"step\": 2"));
}

TEST_CASE("files.a_fifo_at_the_metrics_partial_name_is_replaced_not_waited_on") {
  Dir d("ort_train_partial_fifo");
  REQUIRE(::mkfifo((d / "m.jsonl.partial").c_str(), 0600) == 0);
  // A wait would end at timeout's 120 s with exit 124.
  CliOutcome o = run_shell("timeout 120 " + ort_train_binary() + " " + train_mlp("--metrics " + (d / "m.jsonl")),
                           d.p.string());
  INFO(o.stderr_text);
  REQUIRE(o.exit_code == 0);
  CHECK(fs::is_regular_file(fs::symlink_status(d.p / "m.jsonl")));
  CHECK_FALSE(fs::exists(fs::symlink_status(d.p / "m.jsonl.partial")));
}

TEST_CASE("files.a_fifo_named_as_metrics_with_no_reader_is_an_error_not_a_wait") {
  Dir d("ort_train_metrics_fifo");
  REQUIRE(::mkfifo((d / "m.fifo").c_str(), 0600) == 0);
  CliOutcome o = run_shell("timeout 120 " + ort_train_binary() + " " + train_mlp("--metrics " + (d / "m.fifo")),
                           d.p.string());
  INFO(o.stderr_text);
  CHECK(o.exit_code == 1);
  CHECK_THAT(o.stderr_text, Catch::Contains("a FIFO no process reads"));
}

// Issue 52, item 5 (a further round): the tensor files ort_train names in a
// folder the user gave (--dump-gradients DIR/<initializer>.pb, run --outputs
// DIR/<output>.pb) replace a link planted there, dangling or not.
TEST_CASE("files.links_planted_at_tensor_files_ort_train_names_are_replaced") {
  Dir d("ort_train_planted_tensor_files");
  fs::create_directories(d.p / "dg");
  fs::create_directories(d.p / "out");
  std::ofstream(d / "victim.txt") << "precious\n";
  fs::create_symlink(d.p / "victim.txt", d.p / "dg" / "fc1.weight.pb");
  fs::create_symlink(d.p / "not_there.txt", d.p / "dg" / "fc1.bias.pb");
  fs::create_symlink(d.p / "victim.txt", d.p / "out" / "logits.pb");
  CliOutcome o = run_shell("timeout 120 " + ort_train_binary() + " " + train_mlp("--dump-gradients " + (d / "dg")),
                           d.p.string());
  INFO(o.stderr_text);
  REQUIRE(o.exit_code == 0);
  o = run_shell("timeout 120 " + ort_train_binary() + " run --model " + mlp() + "/model.onnx --inputs " + mlp() +
                    "/test_data_set_0 --outputs " + (d / "out"),
                d.p.string());
  INFO(o.stderr_text);
  REQUIRE(o.exit_code == 0);
  CHECK(read_all(d / "victim.txt") == "precious\n");
  CHECK_FALSE(fs::exists(d.p / "not_there.txt"));
  for (const char* f : {"dg/fc1.weight.pb", "dg/fc1.bias.pb", "out/logits.pb"})
    CHECK(fs::is_regular_file(fs::symlink_status(d.p / f)));
}
