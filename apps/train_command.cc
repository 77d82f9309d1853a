// `ort_train train` (the default subcommand): the command line, then the
// run's parts in order. It builds the training graph from the model and its
// description (apps/training_setup.h, shared with inspect), optionally saves
// it and dumps the first batch's gradients, builds the Trainer, hands it to
// the training loop (training/training_run.h), and exports the forward model
// with the trained weights. With no steps anywhere (command line or
// description) and no optimizer given, it stops after the first backward pass.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "apps/commands.h"
#include "apps/option_checks.h"
#include "apps/training_setup.h"
#include "graph/onnx_io.h"
#include "runtime/communicator.h"
#include "runtime/cpu/gemm_backend.h"
#include "runtime/cpu/parallel.h"
#include "runtime/executor.h"
#include "runtime/kernel_choice.h"
#include "runtime/memory_estimate.h"
#include "runtime/timed_runs.h"
#include "training/batch_data.h"
#include "training/checkpoint.h"
#include "training/data_files.h"
#include "training/finite_state.h"
#include "training/forward_for_export.h"
#include "training/kernel_choice_agreement.h"
#include "training/lora_files.h"
#include "training/rank_agreement.h"
#include "training/recompute.h"
#include "training/step_metrics.h"
#include "training/stop_signals.h"
#include "training/trainer.h"
#include "training/training_run.h"

namespace ort_train::app {
namespace fs = std::filesystem;

namespace {

// Under mpirun: how the ranks share the work and the gradients.
void add_parallel_options(CLI::App* train, TrainArgs& args) {
  train->add_option("--bucket-mb", args.bucket_mb,
                    "under mpirun: gradient bucket size in MiB; each bucket's allreduce starts while the backward "
                    "runs (0: reduce after the backward)")
      ->check(number_at_least(0));
  train->add_option("--allreduce-dtype", args.allreduce_dtype,
                    "under mpirun: fp32 (default) or bf16, the gradients rounded to bfloat16 for the sum over the "
                    "ranks (half the bytes; the optimizer still reads float32)")
      ->check(one_of({"fp32", "bf16"}));
  train->add_option("--zero", args.zero,
                    "under mpirun: 1 keeps each rank's optimizer state for 1/N of the parameters (ZeRO stage 1; "
                    "CPU so far); 2 also its gradients (stage 2); 0 (default) replicates both")
      ->check(whole_number_in(0, 2));
  train->add_option("--comm-timeout", args.comm_timeout,
                    "under mpirun: seconds a collective may wait for the other ranks before the job ends with a "
                    "message naming it (default 600; 0: forever)")
      ->check(number_at_least(0));
}

// What a run writes: metrics, the exported model, checkpoints.
void add_output_options(CLI::App* train, TrainArgs& args) {
  train->add_option("--metrics", args.metrics, "write one JSON object per optimizer step to this file");
  train->add_option("--tensorboard", args.tensorboard,
                    "write TensorBoard event files into this folder: loss, lr, grad norm, throughput, held-out loss "
                    "and perplexity per step, and the command line as text");
  train->add_option("--export", args.export_path, "after training, write the forward model with trained weights");
  train->add_option("--export-adapters", args.export_adapters,
                    "with the description's lora:, after training write the adapters as safetensors in PEFT's layout "
                    "(base_model.model.<module>.lora_A.weight ...), with adapter_config.json in the same folder");
  train->add_option("--log-every", args.log_every, "log every N steps (default: about ten lines)")
      ->check(whole_number_at_least(0));
  train->add_option("--checkpoint-dir", args.checkpoint_dir, "write checkpoints into this folder");
  train->add_option("--save-every", args.save_every, "checkpoint every N steps (and at the end)")
      ->check(whole_number_at_least(0));
  train->add_option("--keep", args.keep, "keep the newest N checkpoints")->check(whole_number_at_least(1))->capture_default_str();
  train->add_flag("--async-checkpoint", args.async_checkpoint,
                  "write checkpoints on a background thread: the step pauses only to copy the state into host memory "
                  "(which then takes that much memory more while the file is written); a later checkpoint and the "
                  "end of the run wait for it, and a failed write stops the run at the next step");
  train->add_flag("--resume", args.resume, "continue from the newest complete checkpoint in --checkpoint-dir");
}

}  // namespace

void add_train_command(CLI::App& app, TrainArgs& args) {
  CLI::App* train = app.add_subcommand(
      "train", "Train a model: build its gradient graph, run the optimizer over the data, checkpoint and export "
               "(the default subcommand)");
  train->add_option("--model", args.setup.model, "forward ONNX model (REQUIRED, unless the description has model:)");
  train->add_option("--config", args.setup.config, "model description (YAML or JSON)");
  // Bad values are command-line errors (exit 64), found before anything loads.
  train->add_option("--optimizer", args.optimizer, "Sgd, Adam, AdamW or Lamb (case-insensitive)")
      ->transform(CLI::Validator(
          [](std::string& name) -> std::string {
            // The same names and spelling rules as the description; the value becomes the canonical name.
            auto parsed = parse_description("optimizer: {name: \"" + name + "\"}", "", "--optimizer");
            if (!parsed.ok()) return "'" + name + "' is not one of: Sgd, Adam, AdamW, Lamb";
            name = parsed->optimizer.name;
            return "";
          },
          "NAME"));
  train->add_option("--lr", args.lr, "peak learning rate")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            double lr = std::strtod(v.c_str(), nullptr);
            return std::isfinite(lr) && lr >= 0 ? "" : "'" + v + "' is not a finite learning rate >= 0";
          },
          "LR"));
  train->add_option("--on-nonfinite", args.on_nonfinite,
                    "a step whose gradients hold inf or NaN under a finite loss: stop (default; the error names the "
                    "first such gradient, before any update) or skip its update, as GradScaler does")
      ->check(one_of({"stop", "skip"}));
  train->add_option("--steps", args.steps, "optimizer steps to take")->check(whole_number_at_least(0));
  train->add_option("--epochs", args.epochs, "passes over the data (when --steps is not given)")
      ->check(whole_number_at_least(1));
  add_device_option(train, args.device, "cpu or cuda[:i] (default: cuda when a GPU is usable, else cpu)");
  train->add_option("--kernel-choices", args.kernel_choices,
                    "keep the kernels chosen by timing (attention) in this JSON file: read at the start, written after "
                    "the first step, so a later run on the same device skips the timing (default with "
                    "--checkpoint-dir: kernel_choices.json there, read on --resume)");
  add_gemm_library_option(train, args.gemm_library);
  train->add_flag("--deterministic", args.deterministic,
                  "bit-identical runs: deterministic GPU algorithms, no atomics in reductions; across MPI ranks, "
                  "gradients summed in rank order; OpenBLAS for the CPU's GEMMs");
  train->add_flag("--no-tf32", args.no_tf32, "float32 matrix products and convolutions in full float32 on a GPU");
  train->add_option("--prefetch", args.prefetch,
                    "micro-batches read ahead by background threads, one each, while the step runs (default 1; 0: "
                    "read on the step's thread); the time a step still waits shows as data_ms in --metrics")
      ->check(whole_number_in(0, 64));
  train->add_option("--grad-accum", args.grad_accum, "micro-batches per optimizer step")->check(whole_number_at_least(1));
  add_output_options(train, args);
  add_parallel_options(train, args);
  add_dim_option(train, args.setup);
  train->add_option("--batch-size", args.setup.batch_size, "samples per micro-batch (binds the dim 'batch')")
      ->check(whole_number_at_least(1));
  add_pass_options(train, args.setup);
  add_precision_option(train, args.setup);
  add_max_memory_option(train, args.setup.max_memory);
  add_recompute_option(train, args.setup);
  train->add_option("--data", args.data,
                    "training data: an .npz file, a folder of .npz shards or batch folders, a glob, a list file "
                    "(one path per line), a token file (.bin), or 'synthetic'");
  train->add_option("--adapters", args.adapters,
                    "with the description's lora:, start from these adapters (safetensors in PEFT's layout, as "
                    "--export-adapters and PEFT's save_pretrained write them) instead of a fresh init");
  train->add_option("--eval-data", args.eval_data, "held-out data (batch directory or .npz) evaluated after training");
  train->add_option("--eval-every", args.eval_every, "also evaluate the held-out data every N steps (0: only at the end)")
      ->check(whole_number_at_least(0));
  train->add_option("--seed", args.seed, "seeds synthetic data and dropout");
  train->add_option("--threads", args.threads, "CPU threads (0 = all cores, split between the ranks on this machine)")
      ->check(whole_number_in(0, kMaxCpuThreads));
  train->add_option("--repeat", args.repeat, "run forward+backward N times on the batch and report the median time")
      ->check(whole_number_at_least(1));
  train->add_flag("--profile", args.profile,
                  "print the time spent per op type, and per op and input shapes (with --repeat N: over runs 2..N; no "
                  "training unless --steps or "
                  "--epochs is given)");
  train->add_option("--save-training-graph", args.save_training_graph,
                    "write the forward+loss+backward graph as ONNX");
  train->add_option("--dump-gradients", args.dump_gradients,
                    "after the first backward pass, write DIR/<initializer>.pb per trainable initializer");
}

namespace {

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

// One forward+backward on the first micro-batch, on the trainer's own
// executor (the plan, placement and kernel choices training uses): timing
// (--repeat, --profile), loss and gradient norm, and --dump-gradients.
// Nothing is updated, and the first step overwrites the gradients.
Status first_pass(const TrainArgs& args, Trainer& trainer, const BatchSource& source, uint64_t seed) {
  ASSIGN_OR_RETURN(auto feeds, source(0));
  RunOptions options;
  options.training = true;
  options.seed = seed;
  ASSIGN_OR_RETURN(TimedRuns runs, run_timed(trainer.executor(), feeds, options, args.repeat, args.profile));
  spdlog::info("forward+backward: median {:.2f} ms over {} runs", runs.median_ms(), runs.ms.size());
  if (args.profile) print_op_profile(runs);
  // Read as the trainer reads them (training/step_metrics.h), where they were computed.
  const TrainingGraph& tg = trainer.graph();
  Device& device = trainer.device();
  ASSIGN_OR_RETURN(double loss, loss_value(device, runs.outputs.at(tg.gradients.loss)));
  std::vector<Tensor> grads;
  for (const std::string& w : tg.gradients.trainable) grads.push_back(runs.outputs.at(tg.gradients.gradient.at(w)));
  ASSIGN_OR_RETURN(double norm, gradient_norm(device, grads));
  spdlog::info("loss {:.6g}, gradient norm {:.6g} (first batch; peak intermediate memory {:.1f} MiB)", loss, norm,
               trainer.executor().allocator().peak_bytes() / 1048576.0);
  if (!std::isfinite(loss)) spdlog::warn("the loss is not finite");
  if (args.dump_gradients.empty()) return Status::Ok();
  for (auto& [name, t] : runs.outputs) {
    ASSIGN_OR_RETURN(t, to_host(device, t));
  }
  return dump_gradients(tg, runs.outputs, args.dump_gradients);
}

// What ranks compare of their training data: its micro-batches per epoch and
// what it holds (shards, rows, bytes; a batch folder's files' sizes added up).
std::string data_identity(const std::string& data, const BatchSource& source) {
  std::string what = fmt::format("{} micro-batches per epoch, {}", source.per_epoch, source.description);
  auto files = resolve_data_files(data);
  if (!files.ok() || files->kind != DataFiles::Kind::kBatchDirs) return what;
  std::error_code ec;
  uintmax_t bytes = 0;
  for (auto it = fs::recursive_directory_iterator(data, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) bytes += it->file_size(ec);
  return fmt::format("{}, {} bytes", what, ec ? 0 : bytes);
}

// Under mpirun or srun with more than one process: data parallelism. Only
// rank 0 reports, writes metrics, checkpoints and exports; the others log
// warnings and errors, prefixed with their rank. --threads 0 means the cores;
// ranks that share a node share its cores, so `mpirun -np 4` on one machine
// does not run four threads per core.
Result<std::shared_ptr<Communicator>> start_job(const TrainArgs& args) {
  int local_ranks = launch_info_from_environment().local_size;
  set_cpu_threads(args.threads > 0 ? args.threads : std::max(1, cpu_cores() / local_ranks));
  ASSIGN_OR_RETURN(std::shared_ptr<Communicator> comm, job_communicator());
  if (comm->rank() != 0) {
    spdlog::set_level(std::max(spdlog::get_level(), spdlog::level::warn));
    spdlog::set_pattern(fmt::format("[%H:%M:%S.%e] [rank {}] [%^%l%$] %v", comm->rank()));
  }
  RETURN_IF_ERROR(apply_max_memory(args.setup.max_memory));
  RETURN_IF_ERROR(parse_recompute_mode(args.setup.recompute).status());
  comm->set_ordered_sums(args.deterministic);
  comm->set_timeout(args.comm_timeout);
  return comm;
}

// Everything a run needs before its Trainer: the model and description with
// the command line over it, the graphs, the device, the data, the step count.
struct Prepared {
  Setup setup;
  ForwardForExport forward;  // what --export writes (rank 0 only), its tensors not held
  PreparedGraph graph;
  bool training = false;  // false: one forward and backward on the first batch, nothing updated
  int64_t steps = 0;
  std::string data;
  uint64_t seed = 0;
  std::optional<BatchSource> source;  // none: no data and nothing to train (the graph is built only)
};

Result<Prepared> prepare(const TrainArgs& args, bool lead) {
  Prepared p;
  ASSIGN_OR_RETURN(p.setup, load_setup(args.setup));
  ModelDescription& desc = p.setup.desc;
  if (!args.optimizer.empty()) desc.optimizer.name = args.optimizer;  // checked and spelled by its validator
  if (args.lr) desc.optimizer.lr = *args.lr;
  if (args.steps) desc.steps = *args.steps;
  if (args.grad_accum) desc.grad_accum = *args.grad_accum;
  if (args.epochs) desc.epochs = *args.epochs;
  if (args.seed) desc.seed = *args.seed;  // before the graph: LoRA's A is drawn from it
  spdlog::info("model {}{}", p.setup.model_path, desc.path.empty() ? "" : ", description " + desc.path);
  if (lead && !args.export_path.empty()) p.forward = ForwardForExport(p.setup.forward, p.setup.model_path);
  DeviceSettings settings;
  settings.deterministic = args.deterministic;
  settings.allow_tf32 = !args.no_tf32;
  // Under a launcher each rank takes the GPU of its local rank unless --device names one
  // (not yet run on a machine with several GPUs).
  settings.index = launch_info_from_environment().local_rank;
  // --deterministic also pins every measured kernel choice to its deterministic default.
  KernelChoices::instance().set_deterministic(args.deterministic);
  RETURN_IF_ERROR(set_gemm_library(args.gemm_library));
  ASSIGN_OR_RETURN(p.graph, prepare_graph(std::move(p.setup.forward), p.setup, args.setup, args.device, settings));
  log_training_graph(p.graph.tg);
  log_pass_reports(p.graph.tg);
  if (p.graph.recompute) log_recompute(args.setup, *p.graph.recompute);
  if (!args.save_training_graph.empty() && lead) {
    RETURN_IF_ERROR(save_model(p.graph.step.model, args.save_training_graph));
    spdlog::info("wrote the training graph to {}", args.save_training_graph);
  }
  p.training = desc.steps.value_or(0) > 0 || (!args.steps && (!desc.optimizer.name.empty() || desc.epochs));
  p.steps = desc.steps.value_or(p.training ? 100 : 0);
  p.data = !args.data.empty() ? args.data : desc.data.train;
  if (p.data.empty()) {
    if (!p.training) {
      if (!args.dump_gradients.empty())
        return invalid_argument("--dump-gradients needs data: give --data DIR or --data synthetic");
      spdlog::info("no --data and no steps: built the training graph only");
      return p;
    }
    spdlog::info("no --data: training on synthetic data of the described shapes");
    p.data = "synthetic";
  }
  p.seed = args.seed ? static_cast<uint64_t>(*args.seed) : static_cast<uint64_t>(desc.seed.value_or(0));
  // The held-out data: its shards are left out of the training data's.
  desc.data.eval = !args.eval_data.empty() ? args.eval_data : desc.data.eval;
  ASSIGN_OR_RETURN(p.source, make_batch_source(p.data, p.graph.tg, desc, p.seed));
  return p;
}

// The planned peak memory, logged and checked against the device's budget.
// An incomplete estimate is a lower bound, printed when most intermediates'
// sizes are known; when most wait for the data (an unbound batch dim) it is
// no bound worth printing.
Status check_memory(const PreparedGraph& g) {
  MemoryEstimate plan = estimate_memory(g.step.model, gradient_outputs(g.tg));
  const double activations = plan.peak_activation_bytes / 1048576.0;
  const bool bound_says_something = plan.sized >= plan.unsized;
  spdlog::info("planned peak: weights {:.2f} MiB + {}; memory budget {:.1f} MiB", plan.initializer_bytes / 1048576.0,
               plan.complete         ? fmt::format("activations {:.2f} MiB", activations)
               : bound_says_something ? fmt::format("activations {:.2f} MiB (a lower bound: some sizes depend on the "
                                                    "data or on unbound dims)", activations)
                                      : std::string("activations not known before the first batch (their sizes "
                                                    "depend on the data or on unbound dims)"),
               g.device->memory_budget() / 1048576.0);
  return check_plan_fits(g.step.model, plan, *g.device);
}

TrainerOptions trainer_options(const TrainArgs& args, const Prepared& p, std::shared_ptr<Communicator> comm) {
  const ModelDescription& desc = p.setup.desc;
  TrainerOptions options;
  // A run that only measures keeps no optimizer state (SGD without momentum has none).
  options.optimizer = resolve_optimizer_settings(p.training ? desc.optimizer : OptimizerConfig{.name = "Sgd"});
  options.schedule = desc.schedule;
  options.steps = p.steps;
  options.grad_accum = desc.grad_accum.value_or(1);
  options.seed = p.seed;
  options.device = p.graph.device;
  options.communicator = std::move(comm);
  options.bucket_bytes = static_cast<size_t>(args.bucket_mb * 1048576.0);
  options.zero_stage = args.zero;
  options.prefetch = args.prefetch;
  options.loss_scale = desc.loss_scale;
  options.skip_nonfinite = args.on_nonfinite == "skip";
  options.allreduce_dtype = args.allreduce_dtype == "bf16" ? DType::kBFloat16 : DType::kFloat;
  return options;
}

void log_start(const TrainArgs& args, const Prepared& p, const TrainerOptions& options, const Communicator& comm) {
  const ModelDescription& desc = p.setup.desc;
  const TrainingGraph& tg = p.graph.tg;
  if (desc.has_loss_scale && tg.loss_scale_input.empty())
    spdlog::warn("loss_scale: is read by --precision fp16 only; this run is {} and scales nothing",
                 tg.autocast.low == DType::kBFloat16 ? "bf16" : "fp32");
  if (!tg.loss_scale_input.empty())
    spdlog::info("fp16 loss scaling: initial scale {:g}, x{:g} after {} clean steps, x{:g} after an overflow",
                 desc.loss_scale.init_scale, desc.loss_scale.growth_factor, desc.loss_scale.growth_interval,
                 desc.loss_scale.backoff_factor);
  // Said before the first step, not found out after the last.
  if (comm.rank() == 0 && args.export_path.empty() && args.checkpoint_dir.empty() && args.export_adapters.empty())
    spdlog::warn("this run keeps nothing: without --export OUT.onnx (the trained model) or --checkpoint-dir DIR "
                 "(checkpoints to resume from) the trained weights are lost when it ends");
  spdlog::info("training: device {}, {} rank{} ({}), {} parameters, optimizer {} (lr {:g}{}), {} steps x {} "
               "micro-batches{}, data {}",
               p.graph.device->description(), comm.size(), comm.size() > 1 ? "s" : "", comm.backend(),
               count_elements(tg.model, tg.gradients.trainable), options.optimizer.name, options.optimizer.lr,
               options.optimizer.huggingface ? ", huggingface mode" : "", options.steps, options.grad_accum,
               comm.size() > 1 ? " per rank" : "",
               p.data == p.source->description ? p.data : fmt::format("{} ({})", p.data, p.source->description));
  if (p.graph.device->kind() == DeviceKind::kCpu)
    spdlog::info("CPU GEMMs: OpenBLAS kernels {}; oneDNN {}; float32 products by {}",
                 openblas_kernel_description(), onednn_description(),
                 args.deterministic                  ? "OpenBLAS (--deterministic)"
                 : args.gemm_library == "measured"   ? "the faster per shape (measured at the first step)"
                 : args.gemm_library == "onednn"     ? "oneDNN (--gemm-library onednn)"
                                                     : "OpenBLAS (--gemm-library measured times oneDNN against it)");
}

// Before the first collective (Trainer::create broadcasts the weights):
// ranks given other flags stop here together, not in a collective.
Status agree(const TrainArgs& args, const Prepared& p, const TrainerOptions& options,
             const std::map<std::string, std::string>& fingerprint, Communicator& comm) {
  std::map<std::string, std::string> settings = fingerprint;
  settings["steps"] = std::to_string(p.steps);
  settings["zero"] = std::to_string(args.zero);
  settings["bucket_bytes"] = std::to_string(options.bucket_bytes);
  settings["allreduce_dtype"] = args.allreduce_dtype;
  settings["deterministic"] = args.deterministic ? "yes" : "no";
  settings["gemm_library"] = args.gemm_library;
  // Every number that shapes the trajectory, at full precision (a rank with
  // other betas, another seed or schedule trained apart without a word).
  auto opt = [](const std::optional<double>& v) { return v ? fmt::format("{}", *v) : std::string("none"); };
  const OptimizerSettings& o = options.optimizer;
  settings["lr"] = fmt::format("{}", o.lr);
  settings["optimizer numbers"] =
      fmt::format("betas {} {}, eps {}, weight_decay {}, momentum {}, max_grad_norm {}, ratio {} {}, no_decay {}",
                  o.beta1, o.beta2, o.eps, o.weight_decay, o.momentum, opt(o.max_grad_norm), opt(o.ratio_min),
                  opt(o.ratio_max), fmt::join(o.no_decay, " "));
  const ScheduleConfig& sc = options.schedule;
  settings["schedule"] = fmt::format("{}, warmup {}, total {}, power {}, lr_end {}, cycles {}", sc.type,
                                     sc.warmup_steps, sc.total_steps ? std::to_string(*sc.total_steps) : "none",
                                     opt(sc.power), opt(sc.lr_end), opt(sc.num_cycles));
  const LossScaleConfig& ls = options.loss_scale;
  settings["loss_scale"] = fmt::format("{} {} {} {}", ls.init_scale, ls.growth_factor, ls.backoff_factor,
                                       ls.growth_interval);
  settings["seed"] = std::to_string(options.seed);
  settings["on_nonfinite"] = options.skip_nonfinite ? "skip" : "stop";
  // What the ranks write and when: a checkpoint (ZeRO gathers its state from
  // every rank), an evaluation (a sum over the ranks) and the log's figures
  // are collectives too, so a rank told to checkpoint alone would wait for
  // the others until --comm-timeout. Paths may differ (node-local folders).
  auto given = [](const std::string& path) { return path.empty() ? "no" : "yes"; };
  settings["checkpoint_dir given"] = given(args.checkpoint_dir);
  settings["save_every"] = std::to_string(args.save_every);
  settings["keep"] = std::to_string(args.keep);
  settings["async_checkpoint"] = args.async_checkpoint ? "yes" : "no";
  settings["resume"] = args.resume ? "yes" : "no";
  settings["eval_data given"] = given(p.setup.desc.data.eval);
  settings["eval_every"] = std::to_string(args.eval_every);
  settings["export given"] = given(args.export_path);
  settings["metrics given"] = given(args.metrics);
  settings["tensorboard given"] = given(args.tensorboard);
  settings["log_every"] = std::to_string(args.log_every);
  // The data by what it holds, not its path (node-local copies may sit
  // elsewhere); walked only when there are ranks to compare with.
  if (comm.size() > 1) settings["data"] = data_identity(p.data, *p.source);
  return check_ranks_agree(comm, settings);
}

Status log_memory(const TrainArgs& args, Trainer& trainer, Communicator& comm) {
  size_t state_bytes = 0;
  for (const auto& [name, t] : trainer.optimizer().state()) state_bytes += t->nbytes();
  const bool zero = args.zero > 0 && comm.size() > 1;
  spdlog::info("optimizer state: {:.2f} MiB ({} bytes) on this rank{}", state_bytes / 1048576.0, state_bytes,
               zero ? fmt::format(" (ZeRO-{}: 1/{} of it)", args.zero, comm.size()) : "");
  ASSIGN_OR_RETURN(std::string per_rank, every_rank(comm, static_cast<double>(trainer.gradient_bytes()), "bytes", 0));
  spdlog::info("gradients: {:.2f} MiB ({} bytes) on this rank{}{}", trainer.gradient_bytes() / 1048576.0,
               trainer.gradient_bytes(),
               zero && args.zero == 2 ? fmt::format(" (ZeRO-2: a 1/{} share of {} bytes and one bucket)", comm.size(),
                                                    trainer.gradient_share_bytes())
                                      : "",
               per_rank);
  return Status::Ok();
}

RunSettings run_settings(const TrainArgs& args, const Prepared& p, std::map<std::string, std::string> fingerprint) {
  RunSettings s;
  s.steps = p.steps;
  s.fingerprint = std::move(fingerprint);
  s.checkpoint_dir = args.checkpoint_dir;
  s.save_every = args.save_every;
  s.keep = args.keep;
  s.background_checkpoints = args.async_checkpoint;
  s.resume = args.resume;
  s.zero = args.zero > 0;
  s.kernel_choices = args.kernel_choices;
  s.metrics = args.metrics;
  s.tensorboard = args.tensorboard;
  s.command_line = args.command_line;
  s.log_every = args.log_every;
  s.eval_data = p.setup.desc.data.eval;
  s.eval_every = args.eval_every;
  s.description = p.setup.desc;
  s.seed = p.seed;
  return s;
}

// Kernel choices made by timing (runtime/kernel_choice.h): a resumed run
// makes the ones the run it continues made, so it continues bit-exactly.
Status load_kernel_choices(const TrainArgs& args, const Device& device) {
  std::string in = args.kernel_choices;
  if (in.empty() && args.resume && !args.checkpoint_dir.empty())
    in = (fs::path(args.checkpoint_dir) / "kernel_choices.json").string();
  return in.empty() ? Status::Ok() : KernelChoices::instance().load(in, device.description());
}

// With the description's lora: what trains, by name, sharing the graph's
// storage (so the trained values are there after the run), and --adapters
// read into it. Without lora:, --adapters and --export-adapters are errors.
Result<LoraTensors> lora_tensors(const TrainArgs& args, const Prepared& p, const LoraPlan& plan) {
  LoraTensors lora;
  if (plan.adapters.empty()) {
    if (!args.adapters.empty() || !args.export_adapters.empty())
      return invalid_argument("--{} needs the description's lora: (lora: {{targets: [...], rank: 8}})",
                              args.adapters.empty() ? "export-adapters" : "adapters");
    return lora;
  }
  lora.plan = &plan;
  const Graph& g = p.graph.tg.model.graph;
  std::set<std::string> adapters;
  for (const LoraAdapter& ad : plan.adapters) adapters.insert({ad.a, ad.b});
  for (const std::string& name : p.graph.tg.selection.trainable) {
    lora.values[name] = g.initializers.at(name);
    if (!adapters.count(name)) lora.train_also.push_back(name);
  }
  if (!args.adapters.empty()) {
    RETURN_IF_ERROR(read_peft_adapters(args.adapters, lora));
    spdlog::info("adapters from {}: {} adapters{}", args.adapters, plan.adapters.size(),
                 lora.train_also.empty() ? "" : " (and the train_also tensors the file holds)");
  }
  return lora;
}

// After the run: the metrics drawn, the trained model written (rank 0).
// The trainer is let go before the export, so that the frozen weights read
// again from the model file (forward_for_export.h) and the merge do not add to
// the training's memory.
Status finish(const TrainArgs& args, const RunOutcome& out, std::unique_ptr<Trainer> trainer,
              const ForwardForExport& forward, const LoraTensors& lora, bool lead, int& exit_code) {
  if (out.stopped_by != 0) {
    exit_code = out.resumable ? kExitStoppedResumable : 128 + out.stopped_by;
    return Status::Ok();
  }
  if (!out.metrics_file.empty()) {
    std::string svg = fs::path(out.metrics_file).replace_extension(".svg").string();
    RETURN_IF_ERROR(write_metrics_plot({out.metrics_file}, svg));
    spdlog::info("plotted the metrics: {}", svg);
  }
  if (!lead || (args.export_path.empty() && args.export_adapters.empty())) return out.last_evaluation;
  RETURN_IF_ERROR(check_finite_state(*trainer, "after the last step, before the export"));
  RETURN_IF_ERROR(trainer->sync_to_host());
  Model model = forward.with_live_initializers();  // while the trainer holds them
  trainer.reset();
  if (!args.export_adapters.empty()) {
    RETURN_IF_ERROR(write_peft_adapters(args.export_adapters, lora));
    spdlog::info("wrote the {} adapters (PEFT's layout) to {}, and adapter_config.json beside them",
                 lora.plan->adapters.size(), args.export_adapters);
  }
  if (args.export_path.empty()) return out.last_evaluation;
  RETURN_IF_ERROR(forward.read_released(model));
  if (lora.plan) RETURN_IF_ERROR(merge_adapters(model, lora));
  RETURN_IF_ERROR(save_model(model, args.export_path));  // its folder was made by check_can_write
  spdlog::info("wrote the trained model{} to {}",
               lora.plan ? fmt::format(", its {} adapters merged into their weights,", lora.plan->adapters.size())
                         : "",
               args.export_path);
  return out.last_evaluation;
}

}  // namespace

Status train_command(const TrainArgs& args, int& exit_code) {
  ASSIGN_OR_RETURN(std::shared_ptr<Communicator> comm, start_job(args));
  const bool lead = comm->rank() == 0;
  // Before anything else: a second run on the same folder stops here.
  std::unique_ptr<CheckpointDirLock> checkpoint_lock;  // held to the end of the run
  if (!args.checkpoint_dir.empty() && lead) {
    ASSIGN_OR_RETURN(checkpoint_lock, CheckpointDirLock::acquire(args.checkpoint_dir));
  }
  // --export is written after the last step: a place it cannot be written
  // stops the run now, not after the training.
  if (!args.export_path.empty() && lead) RETURN_IF_ERROR(check_can_write(args.export_path));
  if (!args.export_adapters.empty() && lead) RETURN_IF_ERROR(check_can_write(args.export_adapters));
  ASSIGN_OR_RETURN(Prepared p, prepare(args, lead));
  if (!p.source) return Status::Ok();  // the graph built, nothing to run it on
  RETURN_IF_ERROR(check_memory(p.graph));
  RETURN_IF_ERROR(load_kernel_choices(args, *p.graph.device));
  TrainerOptions options = trainer_options(args, p, comm);
  const bool measuring = args.repeat > 1 || args.profile;
  if (p.training && !(measuring && !args.steps && !args.epochs)) {
    if (!p.setup.desc.steps && p.setup.desc.epochs) {
      ASSIGN_OR_RETURN(p.steps, steps_for_epochs(*p.setup.desc.epochs, p.source->per_epoch, options.grad_accum,
                                                 comm->size()));
      options.steps = p.steps;
    }
    log_start(args, p, options, *comm);
  }
  const LoraPlan lora_plan = p.graph.tg.lora;  // the tensors below stay the graph's: trained in place
  ASSIGN_OR_RETURN(LoraTensors lora, lora_tensors(args, p, lora_plan));
  auto fingerprint = training_fingerprint(p.graph.tg, options);
  RETURN_IF_ERROR(agree(args, p, options, fingerprint, *comm));
  ASSIGN_OR_RETURN(auto trainer, Trainer::create(std::move(p.graph.tg), std::move(p.graph.step), options, *p.source));
  RETURN_IF_ERROR(agree_kernel_choices(trainer->executor(), *p.source, p.seed, *comm));
  if (!p.training || !args.dump_gradients.empty() || measuring) {
    RETURN_IF_ERROR(first_pass(args, *trainer, *p.source, p.seed));
    if (!args.kernel_choices.empty() && !KernelChoices::instance().all().empty())
      RETURN_IF_ERROR(KernelChoices::instance().save(args.kernel_choices, trainer->device().description()));
  }
  if (!p.training) {
    spdlog::info("trained nothing: no optimizer, --steps or --epochs was given, so this was one forward and "
                 "backward on the first batch (give --optimizer NAME, --steps N or --epochs N to train)");
    return Status::Ok();
  }
  // --repeat and --profile measure forward+backward; they train only when the
  // command line asks for steps (as --profile in a PyTorch script times what
  // it wraps, not the default run around it).
  if (measuring && !args.steps && !args.epochs) {
    spdlog::info("--repeat/--profile: measured only; give --steps or --epochs to train as well");
    return Status::Ok();
  }
  RETURN_IF_ERROR(log_memory(args, *trainer, *comm));
  ASSIGN_OR_RETURN(RunOutcome out, run_training(*trainer, *comm, run_settings(args, p, fingerprint)));
  return finish(args, out, std::move(trainer), p.forward, lora, lead, exit_code);
}

}  // namespace ort_train::app
