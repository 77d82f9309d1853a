// `ort_train train` (the default subcommand). Builds the training graph from
// the model and its description, optionally saves it and dumps the first
// batch's gradients, then trains: `steps` optimizer steps of `grad_accum`
// micro-batches each, logging and writing metrics, and exports the forward
// model with the trained weights. With no steps anywhere (command line or
// description) and no optimizer given, it stops after the first backward pass.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sys/resource.h>
#include <unistd.h>
#include <fstream>

#include "apps/commands.h"
#include "apps/option_checks.h"
#include "apps/metrics_file.h"
#include "apps/stop_signals.h"
#include "apps/training_setup.h"
#include "graph/onnx_io.h"
#include "training/batch_data.h"
#include "runtime/cpu/parallel.h"
#include "runtime/executor.h"
#include "runtime/kernel_choice.h"
#include "training/checkpoint.h"
#include "training/checkpoint_writer.h"
#include "training/data_files.h"
#include "training/recompute.h"
#include "training/step_graph.h"
#include "training/step_metrics.h"
#include "runtime/communicator.h"
#include "training/tensorboard_writer.h"
#include "training/rank_agreement.h"
#include "training/trainer.h"

namespace ort_train::app {
namespace fs = std::filesystem;

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
  train->add_flag("--deterministic", args.deterministic,
                  "bit-identical runs: deterministic GPU algorithms, no atomics in reductions; across MPI ranks, "
                  "gradients summed in rank order");
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
  train->add_flag("--no-tf32", args.no_tf32, "float32 matrix products and convolutions in full float32 on a GPU");
  train->add_option("--prefetch", args.prefetch,
                    "micro-batches read ahead by background threads, one each, while the step runs (default 1; 0: "
                    "read on the step's thread); the time a step still waits shows as data_ms in --metrics")
      ->check(whole_number_in(0, 64));
  train->add_option("--grad-accum", args.grad_accum, "micro-batches per optimizer step")->check(whole_number_at_least(1));
  train->add_option("--metrics", args.metrics, "write one JSON object per optimizer step to this file");
  train->add_option("--tensorboard", args.tensorboard,
                    "write TensorBoard event files into this folder: loss, lr, grad norm, throughput, held-out loss "
                    "and perplexity per step, and the command line as text");
  train->add_option("--export", args.export_path, "after training, write the forward model with trained weights");
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
  train->add_option("--eval-data", args.eval_data, "held-out data (batch directory or .npz) evaluated after training");
  train->add_option("--eval-every", args.eval_every, "also evaluate the held-out data every N steps (0: only at the end)")
      ->check(whole_number_at_least(0));
  train->add_option("--seed", args.seed, "seeds synthetic data and dropout");
  train->add_option("--threads", args.threads, "CPU threads (0 = all cores, split between the ranks on this machine)")
      ->check(whole_number_in(0, kMaxCpuThreads));
  train->add_option("--repeat", args.repeat, "run forward+backward N times on the batch and report the median time")
      ->check(whole_number_at_least(1));
  train->add_flag("--profile", args.profile,
                  "print the time spent per op type (with --repeat N: over runs 2..N; no training unless --steps or "
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

// One forward+backward of the step's graph `step` on the first micro-batch:
// timing (--repeat, --profile), loss and gradient norm, and --dump-gradients.
// Nothing is updated.
Status first_pass(const TrainArgs& args, const TrainingGraph& tg, const Model& step, const BatchSource& source,
                  uint64_t seed, const std::shared_ptr<Device>& device) {
  ASSIGN_OR_RETURN(auto feeds, source(0));
  ASSIGN_OR_RETURN(auto executor, Executor::create(step, device));
  RunOptions options;
  options.training = true;
  options.seed = seed;
  std::map<std::string, double> op_ms;
  std::vector<double> times;
  std::map<std::string, Tensor> out;
  for (int i = 0; i < args.repeat; ++i) {
    // With --repeat the first run is a warm-up for the profile: it carries
    // one-time costs (cuBLAS's start, kernel choice) that are no op's.
    if (args.profile && (i > 0 || args.repeat == 1)) options.op_time_ms = &op_ms;
    auto started = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(out, executor->run(feeds, options));
    RETURN_IF_ERROR(device->synchronize());  // a GPU step is timed to its end, not to its last launch
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
  }
  std::sort(times.begin(), times.end());
  spdlog::info("forward+backward: median {:.2f} ms over {} runs", times[times.size() / 2], times.size());
  if (args.profile) print_op_profile(op_ms, args.repeat > 1 ? args.repeat - 1 : 1);
  // Read as the trainer reads them (training/step_metrics.h), where they were computed.
  ASSIGN_OR_RETURN(double loss, loss_value(*device, out.at(tg.gradients.loss)));
  std::vector<Tensor> grads;
  for (const std::string& w : tg.gradients.trainable) grads.push_back(out.at(tg.gradients.gradient.at(w)));
  ASSIGN_OR_RETURN(double norm, gradient_norm(*device, grads));
  spdlog::info("loss {:.6g}, gradient norm {:.6g} (first batch; peak intermediate memory {:.1f} MiB)", loss, norm,
               executor->allocator().peak_bytes() / 1048576.0);
  if (!std::isfinite(loss)) spdlog::warn("the loss is not finite");
  for (auto& [name, t] : out) {
    ASSIGN_OR_RETURN(t, to_host(*device, t));
  }
  if (!args.dump_gradients.empty()) RETURN_IF_ERROR(dump_gradients(tg, out, args.dump_gradients));
  return Status::Ok();
}

// The newest checkpoint that reads back whole; damaged ones are skipped with a
// warning, one of another run is refused.
Status resume(Trainer& trainer, const std::string& dir, const std::map<std::string, std::string>& fingerprint) {
  if (dir.empty()) return invalid_argument("--resume needs --checkpoint-dir");
  std::vector<std::string> all = list_checkpoints(dir);
  std::string first_damage;
  for (const std::string& path : all) {
    auto c = open_checkpoint(path);  // its hash checked; the tensors are read into the run's buffers
    if (!c.ok()) {
      spdlog::warn("skipping {}", c.status().message());
      if (first_damage.empty()) first_damage = c.status().message();
      continue;
    }
    Status st = trainer.restore(*c, fingerprint);
    if (!st.ok()) return st.with_context(path);
    spdlog::info("resumed from {} (step {})", path, c->step);
    return Status::Ok();
  }
  // Checkpoints that are all damaged are no fresh start: training over them from step 0 would hide the loss.
  if (!all.empty())
    return io_error("--resume: none of the {} checkpoint(s) in {} can be read (newest: {}); move them away to start "
                    "over from step 0",
                    all.size(), dir, first_damage);
  spdlog::info("no checkpoint in {} yet: starting from step 0", dir);
  return Status::Ok();
}

// --device: cpu, cuda or cuda:i; when not given, cuda if a GPU is usable and
// has a kernel for every node, else cpu (saying why).
Result<std::shared_ptr<Device>> choose_device(const TrainArgs& args, const Model& training_model) {
  DeviceSettings settings;
  settings.deterministic = args.deterministic;
  // --deterministic also pins every measured kernel choice to its deterministic default.
  KernelChoices::instance().set_deterministic(args.deterministic);
  settings.allow_tf32 = !args.no_tf32;
  // Under a launcher each rank takes the GPU of its local rank unless --device names one
  // (not yet run on a machine with several GPUs).
  settings.index = launch_info_from_environment().local_rank;
  const std::string& d = args.device;
  if (d.empty()) {
    if (cuda_available()) {
      Status kernels = check_kernels(training_model, DeviceKind::kCuda);
      if (kernels.ok()) return get_device(DeviceKind::kCuda, settings);
      spdlog::warn("training on the CPU: {}", kernels.message());
    } else if (nvidia_driver_present() && *cuda_plugin_missing_reason()) {
      spdlog::warn("training on the CPU although an NVIDIA driver is loaded: this build has no CUDA plugin: {}",
                   cuda_plugin_missing_reason());
    }
    return get_device(DeviceKind::kCpu, settings);
  }
  if (d == "cpu") return get_device(DeviceKind::kCpu, settings);
  settings.index = device_index(d, settings.index);
  return get_device(DeviceKind::kCuda, settings);
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

bool last_step(int64_t step, int64_t steps) { return step >= steps; }

// Rank 0 logs for the job: every rank's value of a figure, in rank order
// (a collective: every rank calls it at the same point).
Result<std::string> every_rank(Communicator& comm, double mine, const char* unit, int decimals) {
  if (comm.size() == 1) return std::string();
  Tensor all = Tensor::host(DType::kDouble, {comm.size()});
  std::fill(all.data<double>(), all.data<double>() + comm.size(), 0.0);
  all.data<double>()[comm.rank()] = mine;
  RETURN_IF_ERROR(comm.allgather(all, std::vector<int64_t>(static_cast<size_t>(comm.size()), 1)));
  std::string list;
  for (int r = 0; r < comm.size(); ++r) list += fmt::format("{}{:.{}f}", r ? ", " : "", all.data<double>()[r], decimals);
  return fmt::format("; ranks 0-{}: {} {}", comm.size() - 1, list, unit);
}

double peak_rss_mib() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

std::string eta(double seconds) {
  int64_t s = static_cast<int64_t>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60) : fmt::format("{}m{:02}s", s / 60, s % 60);
}

}  // namespace

Status train_command(const TrainArgs& args) {
  // --threads 0 means the cores; ranks that share a node share its cores, so
  // `mpirun -np 4` on one machine does not run four threads per core.
  int local_ranks = launch_info_from_environment().local_size;
  set_cpu_threads(args.threads > 0 ? args.threads : std::max(1, cpu_cores() / local_ranks));
  // Under mpirun or srun with more than one process: data parallelism. Only
  // rank 0 reports, writes metrics, checkpoints and exports; the others log
  // warnings and errors, prefixed with their rank.
  ASSIGN_OR_RETURN(std::shared_ptr<Communicator> comm, job_communicator());
  const bool lead = comm->rank() == 0;
  if (!lead) {
    spdlog::set_level(std::max(spdlog::get_level(), spdlog::level::warn));
    spdlog::set_pattern(fmt::format("[%H:%M:%S.%e] [rank {}] [%^%l%$] %v", comm->rank()));
  }
  RETURN_IF_ERROR(apply_max_memory(args.setup.max_memory));
  RETURN_IF_ERROR(parse_recompute_mode(args.setup.recompute).status());
  // Before anything else: a second run on the same folder stops here.
  std::unique_ptr<CheckpointDirLock> checkpoint_lock;  // held to the end of the run
  if (!args.checkpoint_dir.empty() && lead) {
    ASSIGN_OR_RETURN(checkpoint_lock, CheckpointDirLock::acquire(args.checkpoint_dir));
  }
  // --export is written after the last step: a place it cannot be written
  // stops the run now, not after the training.
  if (!args.export_path.empty() && lead) RETURN_IF_ERROR(check_can_write(args.export_path));
  ASSIGN_OR_RETURN(Setup setup, load_setup(args.setup));
  ModelDescription& desc = setup.desc;
  if (!args.optimizer.empty()) desc.optimizer.name = args.optimizer;  // checked and spelled by its validator
  if (args.lr) desc.optimizer.lr = *args.lr;
  if (args.steps) desc.steps = *args.steps;
  if (args.grad_accum) desc.grad_accum = *args.grad_accum;
  if (args.epochs) desc.epochs = *args.epochs;
  spdlog::info("model {}{}", setup.model_path, desc.path.empty() ? "" : ", description " + desc.path);
  Model forward = setup.forward;  // shares the initializers' storage: trained in place, exported at the end
  ASSIGN_OR_RETURN(TrainingGraph tg, build_training_graph(std::move(setup.forward), desc, pass_options(args.setup)));
  log_training_graph(tg);
  log_pass_reports(tg);
  ASSIGN_OR_RETURN(std::shared_ptr<Device> device, choose_device(args, tg.model));
  // Before the graph is saved, so the saved graph shows the copies. auto's
  // budget is --max-memory, else the memory of the device the run uses.
  uint64_t budget = memory_limit();
  if (budget == 0 && args.setup.recompute == "auto") budget = device->memory_budget();
  RETURN_IF_ERROR(apply_recompute_option(args.setup, tg, budget));
  // The graph every step runs (training/step_graph.h): what is saved, estimated and executed.
  ASSIGN_OR_RETURN(StepGraph step, build_step_graph(tg));
  if (!args.save_training_graph.empty() && lead) {
    RETURN_IF_ERROR(save_model(step.model, args.save_training_graph));
    spdlog::info("wrote the training graph to {}", args.save_training_graph);
  }
  bool training = desc.steps.value_or(0) > 0 || (!args.steps && (!desc.optimizer.name.empty() || desc.epochs));
  int64_t steps = desc.steps.value_or(training ? 100 : 0);
  std::string data = !args.data.empty() ? args.data : desc.data.train;
  if (data.empty()) {
    if (!training) {
      if (!args.dump_gradients.empty())
        return invalid_argument("--dump-gradients needs data: give --data DIR or --data synthetic");
      spdlog::info("no --data and no steps: built the training graph only");
      return Status::Ok();
    }
    spdlog::info("no --data: training on synthetic data of the described shapes");
    data = "synthetic";
  }
  // Said before the first step, not found out after the last.
  if (training && lead && args.export_path.empty() && args.checkpoint_dir.empty())
    spdlog::warn("this run keeps nothing: without --export OUT.onnx (the trained model) or --checkpoint-dir DIR "
                 "(checkpoints to resume from) the trained weights are lost when it ends");
  uint64_t seed = args.seed ? static_cast<uint64_t>(*args.seed) : static_cast<uint64_t>(desc.seed.value_or(0));
  // The held-out data: its shards are left out of the training data's.
  const std::string eval_data = !args.eval_data.empty() ? args.eval_data : desc.data.eval;
  desc.data.eval = eval_data;
  ASSIGN_OR_RETURN(BatchSource source, make_batch_source(data, tg, desc, seed));
  MemoryEstimate plan = estimate_memory(step.model, gradient_outputs(tg));
  // An incomplete estimate is a lower bound, printed when most intermediates'
  // sizes are known; when most wait for the data (an unbound batch dim) it is
  // no bound worth printing.
  const double activations = plan.peak_activation_bytes / 1048576.0;
  const bool bound_says_something = plan.sized >= plan.unsized;
  spdlog::info("planned peak: weights {:.2f} MiB + {}; memory budget {:.1f} MiB", plan.initializer_bytes / 1048576.0,
               plan.complete       ? fmt::format("activations {:.2f} MiB", activations)
               : bound_says_something ? fmt::format("activations {:.2f} MiB (a lower bound: some sizes depend on the "
                                                "data or on unbound dims)", activations)
                                   : std::string("activations not known before the first batch (their sizes depend on "
                                                 "the data or on unbound dims)"),
               device->memory_budget() / 1048576.0);
  RETURN_IF_ERROR(check_plan_fits(step.model, plan, *device));
  // Kernel choices made by timing (runtime/kernel_choice.h): a resumed run
  // makes the ones the run it continues made, so it continues bit-exactly.
  std::string choices_in = args.kernel_choices;
  if (choices_in.empty() && args.resume && !args.checkpoint_dir.empty())
    choices_in = (fs::path(args.checkpoint_dir) / "kernel_choices.json").string();
  if (!choices_in.empty()) RETURN_IF_ERROR(KernelChoices::instance().load(choices_in, device->description()));
  auto save_choices = [&](const std::string& path) -> Status {
    if (!lead || path.empty() || KernelChoices::instance().all().empty()) return Status::Ok();
    return KernelChoices::instance().save(path, device->description());
  };
  bool measuring = args.repeat > 1 || args.profile;
  if (!training || !args.dump_gradients.empty() || measuring) {
    RETURN_IF_ERROR(first_pass(args, tg, step.model, source, seed, device));
    RETURN_IF_ERROR(save_choices(args.kernel_choices));
  }
  if (!training) {
    spdlog::info("trained nothing: no optimizer, --steps or --epochs was given, so this was one forward and "
                 "backward on the first batch (give --optimizer NAME, --steps N or --epochs N to train)");
    return Status::Ok();
  }
  // --repeat and --profile measure forward+backward; they train only when
  // the command line asks for steps (as --profile in a PyTorch script times
  // what it wraps, not the default run around it).
  if (measuring && !args.steps && !args.epochs) {
    spdlog::info("--repeat/--profile: measured only; give --steps or --epochs to train as well");
    return Status::Ok();
  }

  if (!desc.steps && desc.epochs) {
    // Epochs count passes over the training data. A step takes grad_accum
    // micro-batches on every rank, world * grad_accum of the one sequence the
    // ranks share, so N ranks step as often as one process with N * grad_accum.
    int64_t per_step = desc.grad_accum.value_or(1) * comm->size();
    int64_t micro_batches = 0;
    if (__builtin_mul_overflow(*desc.epochs, source.per_epoch, &micro_batches) ||
        __builtin_add_overflow(micro_batches, per_step - 1, &micro_batches))
      return invalid_argument("--epochs {} of {} micro-batches each is more steps than a run can count",
                              *desc.epochs, source.per_epoch);
    steps = std::max<int64_t>(1, micro_batches / per_step);
  }
  TrainerOptions options;
  options.optimizer = resolve_optimizer_settings(desc.optimizer);
  options.schedule = desc.schedule;
  options.steps = steps;
  options.grad_accum = desc.grad_accum.value_or(1);
  options.seed = seed;
  options.device = device;
  options.communicator = comm;
  options.bucket_bytes = static_cast<size_t>(args.bucket_mb * 1048576.0);
  options.zero_stage = args.zero;
  options.prefetch = args.prefetch;
  options.loss_scale = desc.loss_scale;
  options.skip_nonfinite = args.on_nonfinite == "skip";
  options.allreduce_dtype = args.allreduce_dtype == "bf16" ? DType::kBFloat16 : DType::kFloat;
  if (desc.has_loss_scale && tg.loss_scale_input.empty())
    spdlog::warn("loss_scale: is read by --precision fp16 only; this run is {} and scales nothing",
                 tg.autocast.low == DType::kBFloat16 ? "bf16" : "fp32");
  if (!tg.loss_scale_input.empty())
    spdlog::info("fp16 loss scaling: initial scale {:g}, x{:g} after {} clean steps, x{:g} after an overflow",
                 desc.loss_scale.init_scale, desc.loss_scale.growth_factor, desc.loss_scale.growth_interval,
                 desc.loss_scale.backoff_factor);
  comm->set_ordered_sums(args.deterministic);
  comm->set_timeout(args.comm_timeout);
  int64_t params = count_elements(tg.model, tg.gradients.trainable);
  spdlog::info("training: device {}, {} rank{} ({}), {} parameters, optimizer {} (lr {:g}{}), {} steps x {} micro-batches{}, data {}",
               device->description(), comm->size(), comm->size() > 1 ? "s" : "", comm->backend(), params,
               options.optimizer.name, options.optimizer.lr, options.optimizer.huggingface ? ", huggingface mode" : "",
               steps, options.grad_accum, comm->size() > 1 ? " per rank" : "",
               data == source.description ? data : fmt::format("{} ({})", data, source.description));
  auto fingerprint = training_fingerprint(tg, options);
  {
    // Before the first collective (Trainer::create broadcasts the weights):
    // ranks given other flags stop here together, not in a collective.
    std::map<std::string, std::string> settings = fingerprint;
    settings["steps"] = std::to_string(steps);
    settings["zero"] = std::to_string(args.zero);
    settings["bucket_bytes"] = std::to_string(options.bucket_bytes);
    settings["allreduce_dtype"] = args.allreduce_dtype;
    settings["deterministic"] = args.deterministic ? "yes" : "no";
    settings["lr"] = fmt::format("{:g}", options.optimizer.lr);
    // The data by what it holds, not its path (node-local copies may sit elsewhere);
    // walked only when there are ranks to compare with.
    if (comm->size() > 1) settings["data"] = data_identity(data, source);
    RETURN_IF_ERROR(check_ranks_agree(*comm, settings));
  }
  // From here a scheduler's SIGTERM/SIGUSR1 or Ctrl-C stops the run at a step
  // boundary, after a checkpoint (apps/stop_signals.h); before, there is
  // nothing to lose and the signal's default ends the process.
  catch_stop_signals(!args.checkpoint_dir.empty());
  ASSIGN_OR_RETURN(auto trainer, Trainer::create(std::move(tg), std::move(step), options, source));
  size_t state_bytes = 0;
  for (const auto& [name, t] : trainer->optimizer().state()) state_bytes += t->nbytes();
  const bool zero = args.zero > 0 && comm->size() > 1;
  spdlog::info("optimizer state: {:.2f} MiB ({} bytes) on this rank{}", state_bytes / 1048576.0, state_bytes,
               zero ? fmt::format(" (ZeRO-{}: 1/{} of it)", args.zero, comm->size()) : "");
  ASSIGN_OR_RETURN(std::string gradients_per_rank,
                   every_rank(*comm, static_cast<double>(trainer->gradient_bytes()), "bytes", 0));
  spdlog::info("gradients: {:.2f} MiB ({} bytes) on this rank{}{}", trainer->gradient_bytes() / 1048576.0,
               trainer->gradient_bytes(),
               zero && args.zero == 2 ? fmt::format(" (ZeRO-2: a 1/{} share of {} bytes and one bucket)", comm->size(),
                                                    trainer->gradient_share_bytes())
                                      : "",
               gradients_per_rank);
  if (args.resume) RETURN_IF_ERROR(resume(*trainer, args.checkpoint_dir, fingerprint));
  int64_t start = trainer->steps_done();
  if (start >= steps)
    spdlog::info("the checkpoint is at step {}, and the run has {}: nothing left to train", start, steps);
  std::unique_ptr<MetricsFile> metrics;
  if (!args.metrics.empty() && lead) {
    ASSIGN_OR_RETURN(metrics, MetricsFile::open(args.metrics, start));
  }
  std::unique_ptr<TensorBoardWriter> board;
  if (!args.tensorboard.empty() && lead) {
    ASSIGN_OR_RETURN(board, TensorBoardWriter::open(args.tensorboard));
    RETURN_IF_ERROR(board->text("command_line", args.command_line, start));
    spdlog::info("TensorBoard events: {}", board->path());
  }
  // One row of figures at a step, to --metrics (a JSON line) and --tensorboard
  // (a scalar each) alike, so the two always hold the same names and values.
  using Figures = std::vector<std::pair<const char*, double>>;
  auto record = [&](int64_t step, const Figures& figures) -> Status {
    if (metrics) {
      std::string line = fmt::format(R"({{"step": {})", step);
      for (const auto& [name, v] : figures) line += fmt::format(R"(, "{}": {})", name, v);
      RETURN_IF_ERROR(metrics->write_line(line + "}"));
    }
    if (board) {
      for (const auto& [name, v] : figures) RETURN_IF_ERROR(board->scalar(name, v, step));
      RETURN_IF_ERROR(board->flush());
    }
    return Status::Ok();
  };
  // Held-out evaluation: every --eval-every steps and after the last one,
  // logged, and written to --metrics and --tensorboard at the step it follows.
  std::optional<BatchSource> held_out;
  if (!eval_data.empty()) {
    ModelDescription eval_desc = desc;
    eval_desc.data.shuffle = false;
    eval_desc.data.eval.clear();
    ASSIGN_OR_RETURN(held_out, make_batch_source(eval_data, trainer->graph(), eval_desc, seed));
    // Read and checked now: a wrong file fails before step 1, not after training.
    RETURN_IF_ERROR(trainer->check_evaluation_data(*held_out, held_out->per_epoch)
                        .with_context("held-out data " + eval_data + " (--eval-data)"));
  }
  auto evaluate_held_out = [&]() -> Status {
    Result<EvalReport> evaluated = trainer->evaluate(*held_out, held_out->per_epoch);
    if (!evaluated.ok()) return evaluated.status().with_context("evaluating the held-out data " + eval_data);
    const EvalReport& e = *evaluated;
    std::string acc = e.accuracy ? fmt::format(", accuracy {:.2f}%", 100 * *e.accuracy) : "";
    spdlog::info("held-out ({} batches of {}): loss {:.4f}, perplexity {:.3f}{}", e.batches, eval_data, e.loss,
                 std::exp(e.loss), acc);
    return record(trainer->steps_done(), {{"eval_loss", e.loss}, {"eval_perplexity", std::exp(e.loss)}});
  };
  int64_t log_every = args.log_every > 0 ? args.log_every : std::max<int64_t>(1, steps / 10);
  auto logs = [&](int64_t step) { return step % log_every == 0 || step == steps || step == 1; };
  bool tty = lead && ::isatty(STDERR_FILENO) && spdlog::get_level() <= spdlog::level::info;
  double elapsed_ms = 0;
  int64_t saved_at = start;  // the step of the newest checkpoint (a resumed run's is its start)
  CheckpointWriter writer(args.checkpoint_dir, args.keep, args.async_checkpoint);
  auto checkpoint = [&](int64_t step) -> Status {
    saved_at = step;
    if (!lead && args.zero == 0) return Status::Ok();  // with ZeRO every rank takes part in the gather
    auto started = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(writer.finish());  // one write at a time: the one before must have ended
    auto waited = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(Checkpoint c, trainer->snapshot(fingerprint, writer.background()));
    if (!lead) return Status::Ok();
    if (writer.background()) {
      auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
      size_t bytes = 0;
      for (const auto& [name, t] : c.tensors) bytes += t.nbytes();
      spdlog::info("checkpoint at step {}: the step paused {:.2f} s ({:.2f} s for the previous write, {:.2f} s to copy "
                   "{:.1f} MiB); the file is written in the background", step, secs(started, std::chrono::steady_clock::now()),
                   secs(started, waited), secs(waited, std::chrono::steady_clock::now()), bytes / 1048576.0);
    }
    RETURN_IF_ERROR(writer.write(std::move(c)));
    return save_choices((fs::path(args.checkpoint_dir) / "kernel_choices.json").string());
  };
  // Stopped by a signal after `done` steps: those are saved, the metrics so far kept.
  auto stop_run = [&](int stop, int64_t done) -> Status {
    if (!args.checkpoint_dir.empty() && saved_at != done) RETURN_IF_ERROR(checkpoint(done));
    RETURN_IF_ERROR(writer.finish());
    if (metrics) RETURN_IF_ERROR(metrics->finish());
    if (board) RETURN_IF_ERROR(board->flush());
    if (args.checkpoint_dir.empty()) {
      spdlog::warn("stopped by {} after step {} of {}: nothing was saved (no --checkpoint-dir), so these steps "
                   "are lost", signal_name(stop), done, steps);
      set_stop_exit_code(128 + stop);
    } else {
      spdlog::info("stopped by {} after step {} of {}: {}; the same command with --resume continues from it (exit "
                   "{})", signal_name(stop), done, steps,
                   done > start ? "checkpoint written to " + args.checkpoint_dir : "no step taken, nothing new to save",
                   kExitStoppedResumable);
      set_stop_exit_code(kExitStoppedResumable);
    }
    return Status::Ok();
  };
  for (int64_t i = start; i < steps; ++i) {
    // Before each step, every rank alike: stop here if a signal came.
    ASSIGN_OR_RETURN(int stop, agreed_stop_signal(*comm));
    if (stop != 0) return stop_run(stop, i);
    RETURN_IF_ERROR(writer.poll());  // a background checkpoint that failed stops the run here
    // The gradient norm is read by the log line, --metrics and --tensorboard:
    // without them, and between log lines, the step skips it (unless it clips).
    ASSIGN_OR_RETURN(StepReport r, trainer->step());
    elapsed_ms += r.step_ms;
    if (i == start) RETURN_IF_ERROR(save_choices(args.kernel_choices));  // the first step made them
    if (!std::isfinite(r.loss)) return invalid_argument("the loss is {} at step {}: stopping", r.loss, r.step);
    double samples_per_s = r.samples / (r.step_ms / 1000.0);
    Figures figures = {{"loss", r.loss}, {"lr", r.lr}};
    if (r.grad_norm) figures.emplace_back("grad_norm", *r.grad_norm);
    figures.emplace_back("samples_per_s", samples_per_s);
    figures.emplace_back("step_ms", r.step_ms);
    figures.emplace_back("data_ms", r.data_ms);
    figures.emplace_back("update_ms", r.update_ms);
    if (r.tokens > 0) figures.emplace_back("tokens_per_s", r.tokens / (r.step_ms / 1000.0));
    if (comm->size() > 1) figures.emplace_back("allreduce_ms", r.allreduce_ms);
    if (r.loss_scale) {  // fp16: the scale this step's backward used, and whether its update was skipped
      figures.emplace_back("loss_scale", *r.loss_scale);
      figures.emplace_back("skipped", r.skipped ? 1.0 : 0.0);
    }
    RETURN_IF_ERROR(record(r.step, figures));
    bool logged = logs(r.step);
    if (tty) {
      // A progress bar on a terminal, cleared before each log line.
      int width = 30, done = static_cast<int>(width * r.step / std::max<int64_t>(steps, 1));
      std::fprintf(stderr, "\r\033[K[%s%s] %lld/%lld loss %.4g", std::string(static_cast<size_t>(done), '#').c_str(),
                   std::string(static_cast<size_t>(width - done), '.').c_str(), static_cast<long long>(r.step),
                   static_cast<long long>(steps), r.loss);
      if (logged || last_step(r.step, steps)) std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
    }
    if (logged) {
      double per_step = elapsed_ms / static_cast<double>(r.step - start) / 1000.0;
      // No ETA from the first steps, which include warm-up (kernel choices, the plan's recording).
      spdlog::info("step {}/{}  loss {:.6g}  lr {:.3g}  grad norm {:.4g}  {:.1f} samples/s{}{}", r.step, steps, r.loss,
                   r.lr, r.grad_norm.value_or(std::nan("")), samples_per_s,
                   r.tokens > 0 ? fmt::format("  {:.0f} tokens/s", r.tokens / (r.step_ms / 1000.0)) : "",
                   r.step - start >= 3 ? "  ETA " + eta(per_step * static_cast<double>(steps - r.step)) : "");
    }
    bool last = r.step == steps;
    if (held_out && args.eval_every > 0 && r.step % args.eval_every == 0 && !last) RETURN_IF_ERROR(evaluate_held_out());
    // Rank 0 writes; with ZeRO the other ranks take part in gathering the optimizer state.
    bool due = !args.checkpoint_dir.empty() && (last || (args.save_every > 0 && r.step % args.save_every == 0));
    if (due) RETURN_IF_ERROR(checkpoint(r.step));
  }
  // On a GPU the allocator holds everything (parameters, optimizer state,
  // activations, gradients); on the CPU, the intermediates of a step.
  ASSIGN_OR_RETURN(std::string rss_per_rank, every_rank(*comm, peak_rss_mib(), "MiB", 1));
  spdlog::info("peak memory: {:.1f} MiB ({}); peak RSS {:.1f} MiB{}",
               trainer->executor().allocator().peak_bytes() / 1048576.0,
               device->kind() == DeviceKind::kCpu ? "intermediate tensors of a step"
                                                  : "GPU allocator: parameters, optimizer state, activations",
               peak_rss_mib(), rss_per_rank);
  const Executor& ex = trainer->executor();
  spdlog::info("replayed plan: {} of {} nodes took their recorded shapes in the last step{}", ex.replayed_steps(),
               ex.plan().steps.size(),
               ex.arena_outputs() > 0 ? fmt::format(", {} outputs in a {:.1f} MiB arena", ex.arena_outputs(),
                                                    ex.arena_bytes() / 1048576.0)
                                      : std::string());
  RETURN_IF_ERROR(writer.finish());
  // A failed last evaluation still leaves the trained model: exported below,
  // then the error.
  Status evaluated = held_out ? evaluate_held_out() : Status::Ok();
  if (metrics) RETURN_IF_ERROR(metrics->finish());
  // The run as a picture, beside its metrics (ort_train plot draws several); not
  // for metrics written to a device or pipe (/dev/stdout): nothing to read back;
  // nor for none written (a resume of a finished run).
  if (metrics && !metrics->direct() && metrics->lines() > 0) {
    std::string svg = std::filesystem::path(args.metrics).replace_extension(".svg").string();
    RETURN_IF_ERROR(write_metrics_plot({args.metrics}, svg));
    spdlog::info("plotted the metrics: {}", svg);
  }
  if (!args.export_path.empty() && lead) {
    RETURN_IF_ERROR(trainer->sync_to_host());
    RETURN_IF_ERROR(save_model(forward, args.export_path));  // its folder was made by check_can_write
    spdlog::info("wrote the trained model to {}", args.export_path);
  }
  return evaluated;
}

}  // namespace ort_train::app
