// `ort_train train` (the default subcommand). Builds the training graph from
// the model and its description, optionally saves it, and runs the forward and
// backward pass on the first batch: prints the loss and the global gradient
// norm and, with --dump-gradients, writes d(loss)/d(initializer) per trainable
// initializer. Optimizer steps are not implemented yet (docs/cli.md).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "apps/commands.h"
#include "apps/training_setup.h"
#include "graph/onnx_io.h"
#include "runtime/batch_data.h"
#include "runtime/cpu/parallel.h"
#include "runtime/executor.h"

namespace ort_train::app {
namespace fs = std::filesystem;

void add_train_command(CLI::App& app, TrainArgs& args) {
  CLI::App* train = app.add_subcommand("train", "Build the training graph and compute gradients (default subcommand)");
  train->add_option("--model", args.setup.model, "forward ONNX model");
  train->add_option("--config", args.setup.config, "model description (YAML or JSON)");
  train->add_option("--batch-size", args.setup.batch_size, "samples per micro-batch (binds the dim 'batch')")
      ->check(CLI::PositiveNumber);
  train->add_option("--data", args.data, "batch directory, or 'synthetic'");
  train->add_option("--seed", args.seed, "seeds synthetic data and dropout");
  train->add_option("--threads", args.threads, "CPU threads (0 = all cores)");
  train->add_option("--repeat", args.repeat, "run forward+backward N times on the batch and report the median time")
      ->check(CLI::PositiveNumber);
  train->add_flag("--profile", args.profile, "print the time spent per op type over all runs");
  train->add_option("--save-training-graph", args.save_training_graph,
                    "write the forward+loss+backward graph as ONNX");
  train->add_option("--dump-gradients", args.dump_gradients,
                    "after the first backward pass, write DIR/<initializer>.pb per trainable initializer");
}

namespace {

Result<std::map<std::string, Tensor>> first_batch(const TrainingGraph& tg, const ModelDescription& desc,
                                                  const std::string& data, uint64_t seed) {
  std::vector<std::string> names;
  for (const ValueInfo* v : tg.model.graph.required_inputs()) names.push_back(v->name);
  if (data == "synthetic") {
    // Declared tensors first; graph inputs the description leaves out are declared from the model.
    std::vector<TensorDecl> decls = desc.inputs;
    decls.insert(decls.end(), desc.labels.begin(), desc.labels.end());
    for (const ValueInfo* v : tg.model.graph.required_inputs()) {
      if (std::any_of(decls.begin(), decls.end(), [&](const TensorDecl& d) { return d.name == v->name; })) continue;
      if (!v->shape) return invalid_argument("synthetic data: input '{}' has no shape; declare it under inputs:", v->name);
      decls.push_back(TensorDecl{v->name, v->dtype, *v->shape, std::nullopt});
    }
    return synthetic_batch(decls, desc.dims, seed);
  }
  ASSIGN_OR_RETURN(auto dirs, list_batch_dirs(data));
  return read_batch_dir(dirs[0], names);
}

Status dump_gradients(const TrainingGraph& tg, const std::map<std::string, Tensor>& out, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("cannot create {}: {}", dir, ec.message());
  for (const std::string& w : tg.gradients.trainable) {
    const Tensor& g = out.at(tg.gradients.gradient.at(w));
    RETURN_IF_ERROR(write_tensor_file(g, w, (fs::path(dir) / tensor_file_name(w)).string()));
  }
  spdlog::info("wrote {} gradients to {}", tg.gradients.trainable.size(), dir);
  return Status::Ok();
}

}  // namespace

Status train_command(const TrainArgs& args) {
  set_cpu_threads(args.threads);
  ASSIGN_OR_RETURN(Setup setup, load_setup(args.setup));
  spdlog::info("model {}{}", setup.model_path, setup.desc.path.empty() ? "" : ", description " + setup.desc.path);
  ASSIGN_OR_RETURN(TrainingGraph tg, build_training_graph(std::move(setup.forward), setup.desc));
  log_training_graph(tg);
  if (!args.save_training_graph.empty()) {
    RETURN_IF_ERROR(save_model(tg.model, args.save_training_graph));
    spdlog::info("wrote the training graph to {}", args.save_training_graph);
  }
  std::string data = !args.data.empty() ? args.data : setup.desc.data.train;
  if (data.empty()) {
    if (!args.dump_gradients.empty()) return invalid_argument("--dump-gradients needs data: give --data DIR or --data synthetic");
    spdlog::info("no --data: built the training graph only");
    return Status::Ok();
  }
  uint64_t seed = args.seed ? static_cast<uint64_t>(*args.seed) : static_cast<uint64_t>(setup.desc.seed.value_or(0));
  ASSIGN_OR_RETURN(auto feeds, first_batch(tg, setup.desc, data, seed));
  ASSIGN_OR_RETURN(auto executor, Executor::create(tg.model));
  RunOptions options;
  options.training = true;
  options.seed = seed;
  std::map<std::string, double> op_ms;
  if (args.profile) options.op_time_ms = &op_ms;
  std::vector<double> times;
  std::map<std::string, Tensor> out;
  for (int i = 0; i < args.repeat; ++i) {
    auto started = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(out, executor->run(feeds, options));
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
  }
  std::sort(times.begin(), times.end());
  spdlog::info("forward+backward: median {:.2f} ms over {} runs", times[times.size() / 2], times.size());
  if (args.profile) print_op_profile(op_ms, args.repeat);
  const Tensor& loss = out.at(tg.gradients.loss);
  double loss_value = loss.dtype() == DType::kDouble ? loss.data<double>()[0] : loss.data<float>()[0];
  double sq = 0;
  for (const std::string& w : tg.gradients.trainable) {
    const Tensor& g = out.at(tg.gradients.gradient.at(w));
    for (int64_t i = 0; i < g.numel(); ++i) {
      double v = g.dtype() == DType::kDouble ? g.data<double>()[i] : g.data<float>()[i];
      sq += v * v;
    }
  }
  spdlog::info("loss {:.6g}, gradient norm {:.6g} (first batch; peak intermediate memory {:.1f} MiB)", loss_value,
               std::sqrt(sq), executor->allocator().peak_bytes() / 1048576.0);
  if (!std::isfinite(loss_value)) spdlog::warn("the loss is not finite");
  if (!args.dump_gradients.empty()) RETURN_IF_ERROR(dump_gradients(tg, out, args.dump_gradients));
  return Status::Ok();
}

}  // namespace ort_train::app
