#include "training/training_run.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/kernel_choice.h"
#include "training/checkpoint.h"
#include "training/checkpoint_writer.h"
#include "training/finite_state.h"
#include "training/metrics_file.h"
#include "training/rank_agreement.h"
#include "training/stop_signals.h"
#include "training/tensorboard_writer.h"

namespace ort_train {
namespace fs = std::filesystem;

Result<int64_t> steps_for_epochs(int64_t epochs, int64_t per_epoch, int64_t grad_accum, int ranks) {
  // A step takes grad_accum micro-batches on every rank, ranks * grad_accum of
  // the one sequence the ranks share, so N ranks step as often as one process
  // with N * grad_accum.
  int64_t per_step = 0, micro_batches = 0;
  if (__builtin_mul_overflow(grad_accum, ranks, &per_step) ||
      __builtin_mul_overflow(epochs, per_epoch, &micro_batches) ||
      __builtin_add_overflow(micro_batches, per_step - 1, &micro_batches))
    return invalid_argument("--epochs {} of {} micro-batches each is more steps than a run can count", epochs,
                            per_epoch);
  return std::max<int64_t>(1, micro_batches / per_step);
}

namespace {

double peak_rss_mib() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

std::string eta(double seconds) {
  int64_t s = static_cast<int64_t>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60) : fmt::format("{}m{:02}s", s / 60, s % 60);
}

// The newest checkpoint that reads back whole; damaged ones are skipped with a
// warning, one of another run is refused. What was resumed from, for the
// ranks to compare: its file name, step and data position ("" for none).
Result<std::string> resume(Trainer& trainer, const std::string& dir,
                           const std::map<std::string, std::string>& fingerprint) {
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
    // Its content too, by the hash in its last 8 bytes (checked when it was
    // opened): ranks given files of one name, step and position but other
    // weights would train a mixed state.
    char hash[8] = {};
    std::ifstream in(path, std::ios::binary);
    in.seekg(-8, std::ios::end);
    in.read(hash, 8);
    uint64_t h = 0;
    std::memcpy(&h, hash, 8);
    return fmt::format("{} (step {}, micro-batch {}, hash {:016x})", fs::path(path).filename().string(), c->step,
                       c->micro_batch, in ? h : uint64_t{0});
  }
  // Checkpoints that are all damaged are no fresh start: training over them from step 0 would hide the loss.
  if (!all.empty())
    return io_error("--resume: none of the {} checkpoint(s) in {} can be read (newest: {}); move them away to start "
                    "over from step 0",
                    all.size(), dir, first_damage);
  spdlog::info("no checkpoint in {} yet: starting from step 0", dir);
  return std::string("none (step 0)");
}

using Figures = std::vector<std::pair<const char*, double>>;

// One run of the loop; its members are what the loop's parts share.
class TrainingRun {
 public:
  TrainingRun(Trainer& trainer, Communicator& comm, const RunSettings& s)
      : trainer_(trainer), comm_(comm), s_(s), lead_(comm.rank() == 0),
        tty_(lead_ && ::isatty(STDERR_FILENO) && spdlog::get_level() <= spdlog::level::info),
        writer_(s.checkpoint_dir, s.keep, s.background_checkpoints) {}
  Result<RunOutcome> run();

 private:
  Status open_outputs();
  Status open_held_out();
  Status record(int64_t step, const Figures& figures);
  Status evaluate_held_out();
  Status checkpoint(int64_t step);
  Status save_choices(const std::string& path, OutputName name = OutputName::kUserNamed) const;
  Result<RunOutcome> stop(int signal, int64_t done);
  Status after_step(const StepReport& r);
  void show_progress(const StepReport& r, bool logged) const;
  Status log_summary();
  Result<RunOutcome> finish();

  Trainer& trainer_;
  Communicator& comm_;
  const RunSettings& s_;
  const bool lead_;
  const bool tty_;  // rank 0 logs to a terminal: a progress bar between log lines
  int64_t start_ = 0;
  int64_t saved_at_ = 0;  // the step of the newest checkpoint (a resumed run's is its start)
  double elapsed_ms_ = 0;
  std::unique_ptr<MetricsFile> metrics_;
  std::unique_ptr<TensorBoardWriter> board_;
  std::optional<BatchSource> held_out_;
  CheckpointWriter writer_;
};

Status TrainingRun::open_outputs() {
  if (!s_.metrics.empty() && lead_) {
    ASSIGN_OR_RETURN(metrics_, MetricsFile::open(s_.metrics, start_));
  }
  if (!s_.tensorboard.empty() && lead_) {
    ASSIGN_OR_RETURN(board_, TensorBoardWriter::open(s_.tensorboard));
    RETURN_IF_ERROR(board_->text("command_line", s_.command_line, start_));
    spdlog::info("TensorBoard events: {}", board_->path());
  }
  return Status::Ok();
}

Status TrainingRun::open_held_out() {
  if (s_.eval_data.empty()) return Status::Ok();
  ModelDescription eval_desc = s_.description;
  eval_desc.data.shuffle = false;
  eval_desc.data.eval.clear();
  ASSIGN_OR_RETURN(held_out_, make_batch_source(s_.eval_data, trainer_.graph(), eval_desc, s_.seed));
  // Read and checked now: a wrong file fails before step 1, not after training.
  return trainer_.check_evaluation_data(*held_out_, held_out_->per_epoch)
      .with_context("held-out data " + s_.eval_data + " (--eval-data)");
}

// One row of figures at a step, to --metrics (a JSON line) and --tensorboard
// (a scalar each) alike, so the two always hold the same names and values.
Status TrainingRun::record(int64_t step, const Figures& figures) {
  if (metrics_) {
    std::string line = fmt::format(R"({{"step": {})", step);
    for (const auto& [name, v] : figures) line += fmt::format(R"(, "{}": {})", name, v);
    RETURN_IF_ERROR(metrics_->write_line(line + "}"));
  }
  if (board_) {
    for (const auto& [name, v] : figures) RETURN_IF_ERROR(board_->scalar(name, v, step));
    RETURN_IF_ERROR(board_->flush());
  }
  return Status::Ok();
}

// Logged, and written to --metrics and --tensorboard at the step it follows.
Status TrainingRun::evaluate_held_out() {
  Result<EvalReport> evaluated = trainer_.evaluate(*held_out_, held_out_->per_epoch);
  if (!evaluated.ok()) return evaluated.status().with_context("evaluating the held-out data " + s_.eval_data);
  const EvalReport& e = *evaluated;
  std::string acc = e.accuracy ? fmt::format(", accuracy {:.2f}%", 100 * *e.accuracy) : "";
  spdlog::info("held-out ({} batches of {}): loss {:.4f}, perplexity {:.3f}{}", e.batches, s_.eval_data, e.loss,
               std::exp(e.loss), acc);
  return record(trainer_.steps_done(), {{"eval_loss", e.loss}, {"eval_perplexity", std::exp(e.loss)}});
}

// --kernel-choices is written by every rank: the ranks hold rank 0's choices
// (training/kernel_choice_agreement.h), so their files are the same. The
// checkpoint folder's copy is rank 0's.
Status TrainingRun::save_choices(const std::string& path, OutputName name) const {
  if (path.empty() || KernelChoices::instance().all().empty()) return Status::Ok();
  return KernelChoices::instance().save(path, trainer_.device().description(), name);
}

// Rank 0 writes; with ZeRO the other ranks take part in gathering the optimizer state.
Status TrainingRun::checkpoint(int64_t step) {
  saved_at_ = step;
  if (!lead_ && !s_.zero) return Status::Ok();
  auto started = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(writer_.finish());  // one write at a time: the one before must have ended
  auto waited = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(check_finite_state(trainer_, fmt::format("at step {}, before its checkpoint", step)));
  ASSIGN_OR_RETURN(Checkpoint c, trainer_.snapshot(s_.fingerprint, writer_.background()));
  if (!lead_) return Status::Ok();
  if (writer_.background()) {
    auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    size_t bytes = 0;
    for (const auto& [name, t] : c.tensors) bytes += t.nbytes();
    spdlog::info("checkpoint at step {}: the step paused {:.2f} s ({:.2f} s for the previous write, {:.2f} s to copy "
                 "{:.1f} MiB); the file is written in the background",
                 step, secs(started, std::chrono::steady_clock::now()), secs(started, waited),
                 secs(waited, std::chrono::steady_clock::now()), bytes / 1048576.0);
  }
  RETURN_IF_ERROR(writer_.write(std::move(c)));
  // Rank 0 alone gets here; the name is ort_train's.
  return save_choices((fs::path(s_.checkpoint_dir) / "kernel_choices.json").string(), OutputName::kChosen);
}

// Stopped by a signal after `done` steps: those are saved, the metrics so far kept.
Result<RunOutcome> TrainingRun::stop(int signal, int64_t done) {
  if (!s_.checkpoint_dir.empty() && saved_at_ != done) RETURN_IF_ERROR(checkpoint(done));
  RETURN_IF_ERROR(writer_.finish());
  if (metrics_) RETURN_IF_ERROR(metrics_->finish());
  if (board_) RETURN_IF_ERROR(board_->flush());
  RunOutcome out;
  out.stopped_by = signal;
  out.resumable = !s_.checkpoint_dir.empty();
  if (!out.resumable) {
    spdlog::warn("stopped by {} after step {} of {}: nothing was saved (no --checkpoint-dir), so these steps "
                 "are lost", signal_name(signal), done, s_.steps);
  } else {
    spdlog::info("stopped by {} after step {} of {}: {}; the same command with --resume continues from it (exit "
                 "{})", signal_name(signal), done, s_.steps,
                 done > start_ ? "checkpoint written to " + s_.checkpoint_dir : "no step taken, nothing new to save",
                 kExitStoppedResumable);
  }
  return out;
}

// A progress bar on a terminal, cleared before each log line.
void TrainingRun::show_progress(const StepReport& r, bool logged) const {
  if (!tty_) return;
  int width = 30, done = static_cast<int>(width * r.step / std::max<int64_t>(s_.steps, 1));
  std::fprintf(stderr, "\r\033[K[%s%s] %lld/%lld loss %.4g", std::string(static_cast<size_t>(done), '#').c_str(),
               std::string(static_cast<size_t>(width - done), '.').c_str(), static_cast<long long>(r.step),
               static_cast<long long>(s_.steps), r.loss);
  if (logged || r.step >= s_.steps) std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

// What a step's report becomes: a row of figures, a log line now and then, an
// evaluation and a checkpoint when due.
Status TrainingRun::after_step(const StepReport& r) {
  if (!std::isfinite(r.loss)) return invalid_argument("the loss is {} at step {}: stopping", r.loss, r.step);
  elapsed_ms_ += r.step_ms;
  const double samples_per_s = r.samples / (r.step_ms / 1000.0);
  Figures figures = {{"loss", r.loss}, {"lr", r.lr}};
  if (r.grad_norm) figures.emplace_back("grad_norm", *r.grad_norm);
  figures.emplace_back("samples_per_s", samples_per_s);
  figures.emplace_back("step_ms", r.step_ms);
  figures.emplace_back("data_ms", r.data_ms);
  figures.emplace_back("update_ms", r.update_ms);
  if (r.tokens > 0) figures.emplace_back("tokens_per_s", r.tokens / (r.step_ms / 1000.0));
  if (comm_.size() > 1) figures.emplace_back("allreduce_ms", r.allreduce_ms);
  if (r.loss_scale) {  // fp16: the scale this step's backward used, and whether its update was skipped
    figures.emplace_back("loss_scale", *r.loss_scale);
    figures.emplace_back("skipped", r.skipped ? 1.0 : 0.0);
  }
  RETURN_IF_ERROR(record(r.step, figures));
  const int64_t log_every = s_.log_every > 0 ? s_.log_every : std::max<int64_t>(1, s_.steps / 10);
  const bool logged = r.step % log_every == 0 || r.step == s_.steps || r.step == 1;
  show_progress(r, logged);
  if (logged) {
    double per_step = elapsed_ms_ / static_cast<double>(r.step - start_) / 1000.0;
    // No ETA from the first steps, which include warm-up (kernel choices, the plan's recording).
    spdlog::info("step {}/{}  loss {:.6g}  lr {:.3g}  grad norm {:.4g}  {:.1f} samples/s{}{}", r.step, s_.steps,
                 r.loss, r.lr, r.grad_norm.value_or(std::nan("")), samples_per_s,
                 r.tokens > 0 ? fmt::format("  {:.0f} tokens/s", r.tokens / (r.step_ms / 1000.0)) : "",
                 r.step - start_ >= 3 ? "  ETA " + eta(per_step * static_cast<double>(s_.steps - r.step)) : "");
  }
  const bool last = r.step == s_.steps;
  if (held_out_ && s_.eval_every > 0 && r.step % s_.eval_every == 0 && !last) RETURN_IF_ERROR(evaluate_held_out());
  const bool due = !s_.checkpoint_dir.empty() && (last || (s_.save_every > 0 && r.step % s_.save_every == 0));
  return due ? checkpoint(r.step) : Status::Ok();
}

// On a GPU the allocator holds everything (parameters, optimizer state,
// activations, gradients); on the CPU, the intermediates of a step.
Status TrainingRun::log_summary() {
  ASSIGN_OR_RETURN(std::string rss_per_rank, every_rank(comm_, peak_rss_mib(), "MiB", 1));
  const Executor& ex = trainer_.executor();
  spdlog::info("peak memory: {:.1f} MiB ({}); peak RSS {:.1f} MiB{}",
               trainer_.executor().allocator().peak_bytes() / 1048576.0,
               trainer_.device().kind() == DeviceKind::kCpu ? "intermediate tensors of a step"
                                                            : "GPU allocator: parameters, optimizer state, activations",
               peak_rss_mib(), rss_per_rank);
  spdlog::info("replayed plan: {} of {} nodes took their recorded shapes in the last step{}", ex.replayed_steps(),
               ex.plan().steps.size(),
               ex.arena_outputs() > 0 ? fmt::format(", {} outputs in a {:.1f} MiB arena", ex.arena_outputs(),
                                                    ex.arena_bytes() / 1048576.0)
                                      : std::string());
  return Status::Ok();
}

Result<RunOutcome> TrainingRun::finish() {
  RETURN_IF_ERROR(log_summary());
  // Choices measured in situ are made over the run's steps, after the first.
  RETURN_IF_ERROR(save_choices(s_.kernel_choices));
  const InSituLedger measuring = in_situ_ledger();
  if (lead_ && measuring.shapes_measuring > 0)
    spdlog::info("kernel choices: {} shape(s) were still being measured when the run ended (they ran the first "
                 "candidate, OpenBLAS for the GEMM library); measuring added {:.0f} ms to their calls' {:.0f} ms",
                 measuring.shapes_measuring, measuring.added_ms, measuring.calls_ms);
  RETURN_IF_ERROR(writer_.finish());
  RunOutcome out;
  // A failed last evaluation still leaves the trained model (the caller exports it), then the error.
  out.last_evaluation = held_out_ ? evaluate_held_out() : Status::Ok();
  if (metrics_) {
    RETURN_IF_ERROR(metrics_->finish());
    // Nothing to draw from a device or pipe (/dev/stdout), nor from no lines (a resume of a finished run).
    if (!metrics_->direct() && metrics_->lines() > 0) out.metrics_file = s_.metrics;
  }
  return out;
}

Result<RunOutcome> TrainingRun::run() {
  // From here a scheduler's SIGTERM/SIGUSR1 or Ctrl-C stops the run at a step
  // boundary, after a checkpoint; before, there is nothing to lose and the
  // signal's default ends the process.
  catch_stop_signals(!s_.checkpoint_dir.empty());
  if (s_.resume) {
    ASSIGN_OR_RETURN(std::string resumed, resume(trainer_, s_.checkpoint_dir, s_.fingerprint));
    // Ranks that resumed from different checkpoints would train a mixed state.
    RETURN_IF_ERROR(check_ranks_agree(comm_, {{"resumed from", resumed}}));
    RETURN_IF_ERROR(check_finite_state(trainer_, "in the checkpoint resumed from"));
  }
  start_ = saved_at_ = trainer_.steps_done();
  if (start_ >= s_.steps)
    spdlog::info("the checkpoint is at step {}, and the run has {}: nothing left to train", start_, s_.steps);
  RETURN_IF_ERROR(open_outputs());
  RETURN_IF_ERROR(open_held_out());
  for (int64_t i = start_; i < s_.steps; ++i) {
    // Before each step, every rank alike: stop here if a signal came.
    ASSIGN_OR_RETURN(int signal, agreed_stop_signal(comm_));
    if (signal != 0) return stop(signal, i);
    RETURN_IF_ERROR(writer_.poll());  // a background checkpoint that failed stops the run here
    ASSIGN_OR_RETURN(StepReport r, trainer_.step());
    if (i == start_) RETURN_IF_ERROR(save_choices(s_.kernel_choices));  // the first step made them
    RETURN_IF_ERROR(after_step(r));
  }
  return finish();
}

}  // namespace

Result<RunOutcome> run_training(Trainer& trainer, Communicator& comm, const RunSettings& settings) {
  TrainingRun run(trainer, comm, settings);
  return run.run();
}

}  // namespace ort_train
