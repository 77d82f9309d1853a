// ort_train: the command-line entry point. Parses the command line, dispatches
// to a subcommand, and is the only place an error becomes an exit code.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "runtime/communicator.h"

int main(int argc, char** argv) {
  // OpenMP threads that spin while idle starve OpenBLAS's own threads on small
  // machines (2 cores: a small model's step measured 2.2 ms with spinning,
  // 1.7 ms passive, with occasional 4x stalls). libgomp reads its wait policy
  // when it loads, before main, so the process re-executes itself once with
  // the policy set, unless the user chose one.
  if (!std::getenv("OMP_WAIT_POLICY")) {
    ::setenv("OMP_WAIT_POLICY", "passive", 1);
    ::execv("/proc/self/exe", argv);  // returns only on failure: carry on as we are
  }

  CLI::App app{"ort_train: train and run ONNX models on CPUs and NVIDIA GPUs"};
  app.require_subcommand(0, 1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

  ort_train::app::RunArgs run_args;
  ort_train::app::add_run_command(app, run_args);
  ort_train::app::TrainArgs train_args;
  ort_train::app::add_train_command(app, train_args);
  ort_train::app::InspectArgs inspect_args;
  ort_train::app::add_inspect_command(app, inspect_args);

  // `train` is the default subcommand: `ort_train --model m.onnx ...` means `ort_train train --model ...`.
  std::vector<std::string> args(argv + 1, argv + argc);
  size_t first = 0;  // after global options
  while (first + 1 < args.size() && args[first] == "--log-level") first += 2;
  bool has_subcommand = first < args.size() && (args[first] == "run" || args[first] == "train" || args[first] == "inspect");
  bool wants_help = first < args.size() && (args[first] == "-h" || args[first] == "--help");
  if (first < args.size() && !has_subcommand && !wants_help) args.insert(args.begin() + static_cast<std::ptrdiff_t>(first), "train");
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector reversed
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");

  ort_train::Status st;
  if (app.got_subcommand("run")) st = ort_train::app::run_command(run_args);
  else if (app.got_subcommand("train")) st = ort_train::app::train_command(train_args);
  else if (app.got_subcommand("inspect")) st = ort_train::app::inspect_command(inspect_args);
  else {
    std::fprintf(stderr, "%s", app.help().c_str());
    return 1;
  }
  if (!st.ok()) {
    int code = st.code() == ort_train::ErrorCode::kUnsupported ? 3 : (st.code() == ort_train::ErrorCode::kShape ? 2 : 1);
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
  return 0;
}
