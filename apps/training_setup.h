// What `train`, `inspect` and the other training subcommands share: reading
// the model and its description, with command-line values overriding the file.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>

#include "autodiff/training_graph.h"
#include "configs/model_description.h"
#include "graph/graph.h"
#include "runtime/device.h"
#include "training/recompute.h"
#include "training/step_graph.h"

namespace ort_train::app {

struct SetupArgs {
  std::string model;
  std::string config;
  int64_t batch_size = 0;  // 0 = from the description
  std::vector<std::string> dims;             // --dim NAME=SIZE (repeatable), over the description's dims:
  std::string passes;                        // --passes: comma-separated names, or "none"
  std::vector<std::string> disabled_passes;  // --disable-pass (repeatable)
  std::vector<std::string> enabled_passes;   // --enable-pass (repeatable): added to the passes run
  std::string max_memory;                    // --max-memory: the memory budget (apps/memory_option.cc)
  std::string recompute = "none";            // --recompute: none, cheap, layers or auto (training/recompute.h)
  std::string precision;                     // --precision fp32|bf16|fp16, over the description's precision:
};

// Adds --dim NAME=SIZE (repeatable) to a subcommand.
void add_dim_option(CLI::App* cmd, SetupArgs& args);
// Adds --precision fp32|bf16|fp16 to a subcommand.
void add_precision_option(CLI::App* cmd, SetupArgs& args);
// Adds --passes and --disable-pass to a subcommand.
void add_pass_options(CLI::App* cmd, SetupArgs& args);
// The names --passes lists ("a,b,c"; none for "none" or "").
std::vector<std::string> listed_passes(const std::string& passes);
// The pass manager's settings from --passes and --disable-pass.
PassManagerOptions pass_options(const SetupArgs& args);
// Logs what each pass changed before the loss and after the backward.
void log_pass_reports(const TrainingGraph& tg);
// Adds --recompute none|layers|auto to a subcommand.
void add_recompute_option(CLI::App* cmd, SetupArgs& args);
// Logs what --recompute chose and the planned peak activations before and after.
void log_recompute(const SetupArgs& args, const RecomputeReport& r);

struct Setup {
  ModelDescription desc;
  std::string model_path;
  Model forward;
};

// Loads the description (when given) and the model; --model overrides the
// description's model, --batch-size its batch_size, which binds the dim "batch".
Result<Setup> load_setup(const SetupArgs& args);

// What `train` and `inspect` build from a setup, in the one order both use.
struct PreparedGraph {
  TrainingGraph tg;
  StepGraph step;  // the graph every step runs: what is saved, estimated and executed
  std::shared_ptr<Device> device;
  std::optional<RecomputeReport> recompute;  // when --recompute asked for one
};
// The training graph of `forward` with the description and --passes; the
// device (runtime/device_choice.h: `device` as asked, or the GPU when it has
// every kernel); --recompute against that device's memory budget
// (--max-memory, else its memory); then the step graph.
Result<PreparedGraph> prepare_graph(Model forward, const Setup& setup, const SetupArgs& args,
                                    const std::string& device, const DeviceSettings& settings);

// Logs the training graph's summary (nodes, parameters, warnings about
// unreached initializers and exclude globs that matched nothing).
void log_training_graph(const TrainingGraph& tg);

// Number of elements over the named initializers.
int64_t count_elements(const Model& m, const std::vector<std::string>& names);

}  // namespace ort_train::app
