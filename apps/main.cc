// ort_train: the command-line entry point. Parses the command line, dispatches
// to a subcommand, and is the only place an error becomes an exit code.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "apps/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"ort_train: train and run ONNX models on CPUs and NVIDIA GPUs"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

  ort_train::app::RunArgs run_args;
  ort_train::app::add_run_command(app, run_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");

  ort_train::Status st;
  if (app.got_subcommand("run")) st = ort_train::app::run_command(run_args);
  if (!st.ok()) {
    std::fprintf(stderr, "ort_train: error: %s\n", st.message().c_str());
    return st.code() == ort_train::ErrorCode::kUnsupported ? 3 : (st.code() == ort_train::ErrorCode::kShape ? 2 : 1);
  }
  return 0;
}
