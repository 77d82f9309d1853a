// The held-out data (--eval-data) as a user gets it wrong (issue 51): data
// the model cannot evaluate fails before step 1, naming the file, and a
// training folder holding the held-out file trains without it, saying so.
#include <filesystem>

#include "graph/onnx_io.h"
#include "training/index_bounds.h"
#include "training/npz.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

namespace fs = std::filesystem;

// Token ids all `id`, [rows, 8]: the shape the bundled GPT reads.
Tensor ids(int64_t rows, int64_t id) {
  Tensor t = Tensor::host(DType::kInt64, {rows, 8});
  for (int64_t i = 0; i < rows * 8; ++i) t.data<int64_t>()[i] = id;
  return t;
}

std::string gpt_args() {
  std::string m = source_dir() + "/tests/models/gpt";
  return "--model " + m + "/model.onnx --config " + m + "/training.yaml --device cpu --threads 1 --batch-size 2";
}

// One held-out batch folder under `d` (token ids all `id`, labels all
// `label`): the --eval-data flags that train the GPT on its bundled batches.
std::string with_eval_batch(const Dir& d, int64_t id, int64_t label) {
  fs::create_directories(d.p / "eval" / "0");
  REQUIRE(write_tensor_file(ids(2, id), "input_ids", d / "eval/0/input_ids.pb").ok());
  REQUIRE(write_tensor_file(ids(2, label), "labels", d / "eval/0/labels.pb").ok());
  return gpt_args() + " --data " + source_dir() + "/tests/models/gpt/train_batches --eval-data " + (d / "eval");
}

}  // namespace

TEST_CASE("held_out: gather_index_bounds finds the token ids' table") {
  Model m = load_model(source_dir() + "/tests/models/gpt/model.onnx").value();
  std::vector<IndexBound> b = gather_index_bounds(m.graph);
  REQUIRE(b.size() == 1);  // the positions' Gather reads a computed range, not an input
  CHECK(b[0].input == "input_ids");
  CHECK(b[0].node == "/tok/Gather");
  CHECK(b[0].rows == 100);
  CHECK(check_index_bounds({{"input_ids", ids(2, 99)}}, b).ok());
  CHECK(check_index_bounds({{"input_ids", ids(2, -100)}}, b).ok());  // Gather counts negatives from the end
  Status s = check_index_bounds({{"input_ids", ids(2, 100)}}, b);
  CHECK(s.message() == "input 'input_ids' holds 100, but node '/tok/Gather' (Gather) indexes a table of 100 rows with it");
}

TEST_CASE("held_out: data the model cannot evaluate fails before step 1 and names the file") {
  Dir d("ort_train_held_out_bad");
  std::string args = with_eval_batch(d, 150, 1);
  CliOutcome o = run_cli(args + " --steps 5 --export " + (d / "out.onnx") + " --metrics " + (d / "m.jsonl"), d.p.string());
  INFO(o.stdout_text << o.stderr_text);
  CHECK(o.exit_code == 1);
  CHECK(o.stderr_text.find("held-out data " + (d / "eval") +
                           " (--eval-data): its batch: input 'input_ids' holds 150, but node '/tok/Gather' (Gather) "
                           "indexes a table of 100 rows with it") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "m.jsonl"));  // no step was taken
  CHECK_FALSE(fs::exists(d / "out.onnx"));
  // A wrong shape is caught the same way.
  Tensor short_rows = Tensor::host(DType::kInt64, {2, 5});
  for (int64_t i = 0; i < 10; ++i) short_rows.data<int64_t>()[i] = 1;
  REQUIRE(write_tensor_file(short_rows, "input_ids", d / "eval/0/input_ids.pb").ok());
  CliOutcome shape = run_cli(args + " --steps 5", d.p.string());
  INFO(shape.stderr_text);
  CHECK(shape.exit_code == 2);
  CHECK(shape.stderr_text.find("held-out data " + (d / "eval") + " (--eval-data): its batch: input 'input_ids'") !=
        std::string::npos);
}

// What the check before step 1 cannot see (labels past the classes reach
// only the loss): the last evaluation fails, and the trained model and the
// checkpoint are written all the same; the error names the held-out data.
TEST_CASE("held_out: a failed last evaluation still exports and checkpoints") {
  Dir d("ort_train_held_out_fails_late");
  std::string args = with_eval_batch(d, 1, 150);
  CliOutcome o = run_cli(args + " --steps 3 --export " + (d / "out.onnx") + " --checkpoint-dir " + (d / "ck"), d.p.string());
  INFO(o.stdout_text << o.stderr_text);
  CHECK(o.exit_code == 1);
  CHECK(o.stderr_text.find("evaluating the held-out data " + (d / "eval") +
                           ": node '/SoftmaxCrossEntropyLoss' (SoftmaxCrossEntropyLoss): label 150 is out of range for "
                           "100 classes") != std::string::npos);
  CHECK(fs::exists(d / "out.onnx"));
  CHECK(fs::exists(d / "ck/ckpt-00000003.ortc"));
}

TEST_CASE("held_out: a training folder holding the held-out file trains without it") {
  Dir d("ort_train_held_out_folder");
  fs::create_directories(d.p / "data");
  REQUIRE(write_npz({{"input_ids", ids(6, 3)}, {"labels", ids(6, 4)}}, d / "data/train.npz").ok());
  REQUIRE(write_npz({{"input_ids", ids(4, 5)}, {"labels", ids(4, 6)}}, d / "data/eval.npz").ok());
  CliOutcome o = run_cli(gpt_args() + " --data " + (d / "data") + " --eval-data " + (d / "data/eval.npz") +
                             " --epochs 1",
                         d.p.string());
  INFO(o.stdout_text << o.stderr_text);
  CHECK(o.exit_code == 0);
  CHECK(o.stdout_text.find("leaves out " + (d / "data/eval.npz") + ", the held-out data (--eval-data)") !=
        std::string::npos);
  CHECK(o.stdout_text.find("3 steps") != std::string::npos);  // 6 training rows in batches of 2, not 10
  // Neither --export nor --checkpoint-dir: said at the start.
  CHECK(o.stdout_text.find("this run keeps nothing: without --export OUT.onnx") != std::string::npos);
}

}  // namespace ort_train::testing
