// Subcommands of the ort_train binary. Each returns a Status; main() alone
// turns an error into a message on stderr and a non-zero exit.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include <map>
#include <optional>

#include "apps/training_setup.h"
#include "graph/status.h"
#include "runtime/timed_runs.h"

namespace ort_train::app {

struct RunArgs {
  std::string model;
  std::string inputs;
  std::string outputs;
  std::string expected;  // defaults to the inputs folder (ONNX test-data style output_N.pb)
  double rtol = 1e-3;
  double atol = 1e-5;
  int threads = 0;
  bool profile = false;  // print time per op type
  int repeat = 1;  // forward runs to time; the median is reported
  std::string max_memory;  // --max-memory
  std::string device = "cpu";  // --device: cpu, cuda or cuda:i
  bool no_tf32 = false;  // --no-tf32: float32 GEMMs in full float32 on a GPU
  bool deterministic = false;  // --deterministic: measured kernel choices pinned to their defaults
  std::string gemm_library = "openblas";  // --gemm-library (runtime/cpu/gemm_backend.h)
};
// `ort_train --version`: version, commit and build options (apps/version.cc).
std::string version_text();

// `ort_train --bash-completion`: a completion script from the command line's definition (apps/completion.cc).
std::string bash_completion(const CLI::App& app);

// Levenshtein distance, for "did you mean" (apps/unknown_arguments.cc).
size_t edit_distance(const std::string& a, const std::string& b);

// What the command line had that no option of `subcommand` (or the app) is:
// each unknown option in the order given, with the nearest known name when
// one is close ("unknown option --optimzer (did you mean --optimizer?)");
// `fallback` when none starts with '-' (apps/unknown_arguments.cc).
std::string unknown_arguments(const CLI::App& app, const std::string& subcommand, const std::vector<std::string>& args,
                              const std::string& fallback);

// The process's exit status for an error, one code per kind (README, "Exit codes").
int exit_code_for(const Status& st);
// The default logger: stdout, with coloured levels per --color (apps/logging.cc).
void set_up_logging(const std::string& level, const std::string& color);
inline constexpr int kExitUsage = 64;

// --max-memory (apps/memory_option.cc): the option, its parser, and setting the budget.
void add_max_memory_option(CLI::App* cmd, std::string& value);
Result<uint64_t> parse_byte_size(const std::string& text);
Status apply_max_memory(const std::string& value);  // a bad command line (unknown flag, bad value)

// --device (apps/device_option.cc): cpu, cuda or cuda:i, checked as CLI11 parses.
void add_device_option(CLI::App* cmd, std::string& value, const std::string& description);
// --gemm-library (apps/gemm_library_option.cc): openblas, onednn or measured.
void add_gemm_library_option(CLI::App* cmd, std::string& value);

void add_run_command(CLI::App& app, RunArgs& args);
Status run_command(const RunArgs& args);

// Prints the time per op type, then per op type and input shapes (the 15
// costliest), of the profiled runs, largest first (apps/op_profile.cc).
void print_op_profile(const TimedRuns& runs);

struct TrainArgs {
  SetupArgs setup;
  std::string optimizer;  // overrides the description's optimizer.name
  std::optional<double> lr;
  std::optional<int64_t> steps;
  std::optional<int64_t> epochs;
  std::optional<int64_t> grad_accum;
  std::string device;       // cpu | cuda | cuda:i; empty: cuda when a GPU is usable, else cpu
  bool deterministic = false;
  std::string kernel_choices;  // --kernel-choices FILE: measured kernel choices kept between runs
  std::string gemm_library = "openblas";  // --gemm-library: the CPU's float32 GEMMs (runtime/cpu/gemm_backend.h)
  int zero = 0;               // ZeRO stage (0 or 1)
  int prefetch = 1;           // micro-batches read ahead on background threads
  std::string allreduce_dtype = "fp32";  // the gradients' dtype between ranks (fp32 or bf16)
  std::string on_nonfinite = "stop";  // --on-nonfinite: stop or skip a step whose gradients hold inf/NaN
  double comm_timeout = 600;  // seconds a collective may take before the job ends
  double bucket_mb = 25;  // data parallelism: gradient bucket size (0: no overlap with the backward)
  bool no_tf32 = false;
  std::string metrics;
  std::string tensorboard;   // --tensorboard DIR: event files with the metrics and the flags
  std::string command_line;  // the whole command line, as typed (the flags TensorBoard shows)
  std::string export_path;
  std::string export_adapters;  // --export-adapters FILE.safetensors: with lora:, the adapters in PEFT's layout
  std::string adapters;         // --adapters FILE.safetensors: with lora:, start from these adapters
  int log_every = 0;      // 0: about ten lines per run
  int64_t eval_every = 0;  // held-out evaluation every N steps; 0: only at the end
  std::string checkpoint_dir;
  int64_t save_every = 0;  // 0: only at the end (when a checkpoint dir is given)
  int keep = 3;
  bool async_checkpoint = false;  // checkpoints written by a background thread
  bool resume = false;
  std::string data;
  std::string eval_data;
  std::optional<int64_t> seed;
  int threads = 0;
  int repeat = 1;
  bool profile = false;
  std::string save_training_graph;
  std::string dump_gradients;
};
void add_train_command(CLI::App& app, TrainArgs& args);
// `exit_code`: what a stop signal chose (75 after a checkpoint, else 128 + the
// signal); left as it is when the run ended on its own.
Status train_command(const TrainArgs& args, int& exit_code);

struct InspectArgs {
  SetupArgs setup;
};
void add_inspect_command(CLI::App& app, InspectArgs& args);
Status inspect_command(const InspectArgs& args);

struct PlotArgs {
  std::vector<std::string> metrics;
  std::string output;
};
void add_plot_command(CLI::App& app, PlotArgs& args);
Status plot_command(const PlotArgs& args);
// The runs' --metrics files drawn as one SVG (apps/plot_svg.cc); train writes
// one beside its --metrics file at the end of a run.
Status write_metrics_plot(const std::vector<std::string>& metrics_files, const std::string& svg_path);

}  // namespace ort_train::app
