// ort_train: the command-line entry point. Parses the command line, dispatches
// to a subcommand, and is the only place an error becomes an exit code.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <unistd.h>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "apps/option_checks.h"
#include "runtime/cpu/host_memory.h"
#include "runtime/cpu/openmp_wait.h"
#include "runtime/communicator.h"

// Bounds OpenMP's spin-wait: the getenv libgomp reads it with (runtime/cpu/openmp_wait.h).
ORT_TRAIN_DEFAULT_OPENMP_WAIT

// A command-line error as every one is printed (exit 64 follows).
static std::string usage_error(const std::string& what) {
  return "ort_train: error: " + what + "\nRun with --help or --help-all for more information.\n";
}

// `train` is the default subcommand: `ort_train --model m.onnx ...` means
// `ort_train train --model ...`. Puts it into `args` where it is implied and
// sets `subcommand` to the one named. Returns an exit code when the line is
// answered here (a typo of a subcommand, `--help`), else -1.
static int place_default_subcommand(CLI::App& app, std::vector<std::string>& args, std::string& subcommand) {
  size_t first = 0;  // after global options
  while (first + 1 < args.size() && (args[first] == "--log-level" || args[first] == "--color")) first += 2;
  bool has_subcommand = first < args.size() && (args[first] == "run" || args[first] == "train" ||
                                                args[first] == "inspect" || args[first] == "plot");
  bool wants_help = first < args.size() && (args[first] == "-h" || args[first] == "--help" ||
                                            args[first] == "--version" || args[first] == "--help-all" ||
                                            args[first] == "--bash-completion");
  if (first < args.size() && !has_subcommand && !wants_help) {
    // A word where a subcommand goes that is none: a typo of one, not train's first argument.
    std::string unknown = ort_train::app::unknown_subcommand(app, args[first]);
    if (!unknown.empty()) {
      std::fprintf(stderr, "%s", usage_error(unknown).c_str());
      return ort_train::app::kExitUsage;
    }
    args.insert(args.begin() + static_cast<std::ptrdiff_t>(first), "train");
  }
  // `ort_train --help`: the default subcommand's options too (they are what most runs use).
  if (!has_subcommand && first < args.size() && (args[first] == "-h" || args[first] == "--help")) {
    std::printf("%s\n%s", app.help().c_str(),
                app.get_subcommand("train")->help("", CLI::AppFormatMode::Sub).c_str());
    return 0;
  }
  subcommand = has_subcommand ? args[first] : "";
  return -1;
}

int main(int argc, char** argv) {
  CLI::App app{"ort_train: train and run ONNX models on CPUs and NVIDIA GPUs", "ort_train"};
  app.require_subcommand(0, 1);
  // --log-level and --color are the app's, but read anywhere on the line: the
  // subcommands (made below, inheriting this) pass options they lack up to it.
  app.fallthrough();
  app.set_version_flag("--version", ort_train::app::version_text(), "print the version, commit and build options");
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(ort_train::app::one_of({"trace", "debug", "info", "warn", "error"}));
  std::string color = "auto";
  app.add_option("--color", color,
                 "coloured log levels: auto (on a terminal, not under mpirun/srun, unless NO_COLOR is set), "
                 "always, never")
      ->check(ort_train::app::one_of({"auto", "always", "never"}));
  app.set_help_all_flag("--help-all", "print the help of every subcommand too (what the man page is made from)");
  bool completion = false;
  app.add_flag("--bash-completion", completion, "print a bash completion script and exit");
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return usage_error(e.what()); });
  app.footer("Exit codes: 0 success; 1 bad input or I/O error; 2 shape or dtype error; 3 unsupported op or "
             "feature; 4 device unavailable; 64 bad command line; 75 train stopped by a signal after checkpointing "
             "(resume with --resume); 128+N stopped by signal N with nothing saved.");

  ort_train::app::RunArgs run_args;
  ort_train::app::add_run_command(app, run_args);
  ort_train::app::TrainArgs train_args;
  for (int i = 0; i < argc; ++i) train_args.command_line += (i ? " " : "") + std::string(argv[i]);
  ort_train::app::add_train_command(app, train_args);
  ort_train::app::InspectArgs inspect_args;
  ort_train::app::add_inspect_command(app, inspect_args);
  ort_train::app::PlotArgs plot_args;
  ort_train::app::add_plot_command(app, plot_args);

  std::vector<std::string> args(argv + 1, argv + argc);
  std::string subcommand;
  if (int answered = place_default_subcommand(app, args, subcommand); answered >= 0) return answered;
  const std::vector<std::string> given = args;  // parse() consumes its vector
  std::reverse(args.begin(), args.end());       // CLI11 takes the vector reversed
  try {
    app.parse(args);
  } catch (const CLI::ExtrasError& e) {
    // Unknown options, named in the order given, with the nearest known one.
    std::fprintf(stderr, "%s",
                 usage_error(ort_train::app::unknown_arguments(app, subcommand.empty() ? "train" : subcommand, given,
                                                               e.what()))
                     .c_str());
    return ort_train::app::kExitUsage;
  } catch (const CLI::ConversionError& e) {
    std::fprintf(stderr, "%s", usage_error(ort_train::app::conversion_error_message(app, e)).c_str());
    return ort_train::app::kExitUsage;
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help, the version, or the usage error (ort_train: error: ...)
    return code == 0 ? 0 : ort_train::app::kExitUsage;
  }
  if (completion) {
    std::printf("%s", ort_train::app::bash_completion(app).c_str());
    return 0;
  }
  ort_train::app::set_up_logging(log_level, color);

  ort_train::Status st;
  int exit_code = 0;  // when the command returns well: 0, or how a stop signal ended the run
  try {
    if (app.got_subcommand("run")) st = ort_train::app::run_command(run_args);
    else if (app.got_subcommand("train")) st = ort_train::app::train_command(train_args, exit_code);
    else if (app.got_subcommand("inspect")) st = ort_train::app::inspect_command(inspect_args);
    else if (app.got_subcommand("plot")) st = ort_train::app::plot_command(plot_args);
    else {
      std::fprintf(stderr, "%s", app.help().c_str());
      return ort_train::app::kExitUsage;
    }
  } catch (const std::bad_alloc&) {
    // Host memory ran out outside a kernel (loading weights, a checkpoint):
    // one message, not an abort. Inside a kernel the executor names the node.
    st = ort_train::out_of_host_memory();
  }
  if (!st.ok()) {
    int code = ort_train::app::exit_code_for(st);
    ort_train::LaunchInfo launch = ort_train::launch_info_from_environment();
    if (launch.size > 1) {
      // One rank's error ends the whole job: the others may be waiting in a collective.
      std::fprintf(stderr, "ort_train: error on rank %d of %d: %s\n", launch.rank, launch.size, st.message().c_str());
      std::fflush(stderr);
      auto comm = ort_train::job_communicator();
      if (comm.ok() && (*comm)->size() > 1) (*comm)->abort(code);
      return code;
    }
    std::fprintf(stderr, "ort_train: error: %s\n", st.message().c_str());
    return code;
  }
  return exit_code;
}
