#include "apps/training_setup.h"

#include "apps/option_checks.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include <charconv>

#include "graph/mapped_external_data.h"
#include "graph/onnx_io.h"
#include "graph/passes/pass.h"
#include "runtime/device_choice.h"
#include "training/recompute.h"

namespace ort_train::app {

Result<Setup> load_setup(const SetupArgs& args) {
  Setup s;
  if (!args.config.empty()) {
    ASSIGN_OR_RETURN(s.desc, load_description(args.config));
  }
  s.model_path = !args.model.empty() ? args.model : s.desc.model;
  if (s.model_path.empty()) return invalid_argument("no model: give --model or `model:` in the description");
  if (args.batch_size > 0) s.desc.batch_size = args.batch_size;
  if (!args.precision.empty()) {
    auto precision = parse_precision(args.precision);
    if (!precision.ok()) return invalid_argument("--precision: {}", precision.status().message());
    s.desc.precision = *precision;
  }
  for (const std::string& d : args.dims) {
    size_t eq = d.find('=');
    int64_t size = 0;
    const char* end = d.data() + d.size();
    auto parsed = eq == std::string::npos ? std::from_chars_result{d.data(), std::errc::invalid_argument}
                                          : std::from_chars(d.data() + eq + 1, end, size);
    if (eq == 0 || eq == std::string::npos || parsed.ec != std::errc() || parsed.ptr != end || size <= 0)
      return invalid_argument("--dim '{}': expected NAME=SIZE with a positive size, e.g. --dim seq=128", d);
    s.desc.dims[d.substr(0, eq)] = size;
  }
  if (s.desc.batch_size && !s.desc.dims.count("batch")) s.desc.dims["batch"] = *s.desc.batch_size;
  // Large weights stay in their file until the graph's passes or the
  // trainer need them (graph/mapped_external_data.h): prepare_graph reads in
  // what is left. 1 MiB: below that a mapping saves little.
  LoadOptions load;
  load.map_external_from_bytes = uint64_t{1} << 20;
  ASSIGN_OR_RETURN(s.forward, load_model(s.model_path, load));
  return s;
}

void add_dim_option(CLI::App* cmd, SetupArgs& args) {
  cmd->add_option("--dim", args.dims,
                  "size of a symbolic dim, NAME=SIZE (repeatable; e.g. --dim seq=128), over the description's dims:")
      ->check(dim_assignment());
}

void add_precision_option(CLI::App* cmd, SetupArgs& args) {
  cmd->add_option("--precision", args.precision,
                  "fp32 (default), bf16: GEMMs in bfloat16 with float32 accumulation and master weights, the rest "
                  "in float32 (graph/passes/autocast.h), or fp16: the same in float16, with dynamic loss scaling "
                  "(PyTorch GradScaler's; the description's loss_scale:); over the description's precision:")
      ->check(one_of({"fp32", "bf16", "fp16"}));
}

void add_pass_options(CLI::App* cmd, SetupArgs& args) {
  std::string defaults;
  for (const std::string& n : default_pass_names()) defaults += (defaults.empty() ? "" : ", ") + n;
  cmd->add_option("--passes", args.passes,
                  "graph passes to run, comma-separated, or 'none' (default: " + defaults + ")")
      ->check(graph_pass_names());
  cmd->add_option("--disable-pass", args.disabled_passes, "skip this graph pass (repeatable)")->check(graph_pass_names());
  cmd->add_option("--enable-pass", args.enabled_passes,
                  "also run this graph pass, one off by default (repeatable; half_activations: with --precision "
                  "bf16|fp16, GEMM outputs stay 16-bit through GELU, Dropout, views and adds of two 16-bit values)")
      ->check(graph_pass_names());
}

void add_recompute_option(CLI::App* cmd, SetupArgs& args) {
  cmd->add_option("--recompute", args.recompute,
                  "recompute activations in the backward instead of keeping them: none (default), cheap (the outputs "
                  "of GELU, SiLU, LayerNorm... from inputs the backward keeps), layers (every layer), auto (cheap, "
                  "then the first layers, until the planned peak fits --max-memory)")
      ->check(one_of({"none", "cheap", "layers", "auto"}));
}

void log_recompute(const SetupArgs& args, const RecomputeReport& r) {
  if (r.layers.empty() && args.recompute == "layers") {
    spdlog::warn("--recompute layers: no layer found (no node name or dynamo module path has a scope like "
                 "layer.N or h.N): nothing recomputed");
    return;
  }
  spdlog::info("recompute ({}): {} cheap-op nodes; {} of {} layers{}, {} forward nodes copied into the backward; "
               "planned peak activations {:.2f} -> {:.2f} MiB{}",
               args.recompute, r.cheap_nodes, r.recomputed.size(), r.layers.size(),
               r.recomputed.empty() ? "" : fmt::format(" ({} .. {})", r.recomputed.front(), r.recomputed.back()),
               r.copied_nodes, r.peak_before / 1048576.0, r.peak_after / 1048576.0,
               !r.complete ? " (some shapes unknown: give --dim or dims:)" : !r.fits ? "; still over the budget" : "");
}

namespace {

// A pass named by --passes or --enable-pass whose every phase is one this
// build leaves out (graph/passes/pass.h: the 16-bit phase without
// --precision bf16|fp16, the adapters' without lora:, recompute's without
// --recompute) changes nothing: one warning each, naming what it needs,
// rather than a run that silently ignores the request.
void warn_of_named_passes_that_cannot_run(const SetupArgs& args, const ModelDescription& desc, RecomputeMode mode) {
  uint32_t phases = kForwardPhase | kBackwardPhase | kStepPhase;
  if (desc.precision != DType::kFloat) phases |= kPrecisionPhase;
  if (desc.lora) phases |= kAdapterPhase;
  if (mode != RecomputeMode::kNone) phases |= kRecomputePhase;
  std::vector<std::pair<std::string, const char*>> named;  // pass, the flag that named it
  for (const std::string& name : listed_passes(args.passes)) named.push_back({name, "--passes"});
  for (const std::string& name : args.enabled_passes) named.push_back({name, "--enable-pass"});
  for (const auto& [name, flag] : named) {
    std::unique_ptr<Pass> pass = PassRegistry::instance().create(name);
    if (!pass) continue;  // an unknown name is the pass manager's error
    const uint32_t own = pass->order().phases;
    if ((own & phases) != 0) continue;
    const char* needs = (own & kPrecisionPhase) ? "--precision bf16|fp16 (or the description's precision:)"
                        : (own & kAdapterPhase) ? "LoRA adapters (the description's lora:)"
                        : (own & kRecomputePhase) ? "--recompute cheap|layers|auto"
                                                  : "a phase this build runs";
    spdlog::warn("{} {} changes nothing without {}", flag, name, needs);
  }
}

}  // namespace

Result<PreparedGraph> prepare_graph(Model forward, const Setup& setup, const SetupArgs& args,
                                    const std::string& device, const DeviceSettings& settings) {
  PreparedGraph p;
  ASSIGN_OR_RETURN(RecomputeMode mode, parse_recompute_mode(args.recompute));
  warn_of_named_passes_that_cannot_run(args, setup.desc, mode);
  ASSIGN_OR_RETURN(p.tg, build_training_graph(std::move(forward), setup.desc, pass_options(args)));
  ASSIGN_OR_RETURN(p.device, choose_device(device, settings, p.tg.model));
  // The passes have folded what they fold; nothing the trainer or a kernel
  // reads may still be backed by the model's file. Read in only what the
  // budget holds: a sparse file can claim terabytes it costs nothing to store.
  const uint64_t mapped = mapped_external_bytes(), budget = p.device->memory_budget();
  if (budget && mapped > budget)
    return invalid_argument("the model's weights in external data need {:.1f} MiB on {}, more than the memory "
                            "budget of {:.1f} MiB set by --max-memory or the machine's memory",
                            mapped / 1048576.0, p.device->description(), budget / 1048576.0);
  RETURN_IF_ERROR(read_in_initializers(p.tg.model.graph));
  // Before the step graph is built, so that graph (saved, estimated, run) holds the copies.
  if (mode != RecomputeMode::kNone) {
    ASSIGN_OR_RETURN(p.recompute, apply_recompute(p.tg, mode, p.device->memory_budget(),
                                                  pass_options(args).disabled));
  }
  ASSIGN_OR_RETURN(p.step, build_step_graph(p.tg));
  return p;
}

std::vector<std::string> listed_passes(const std::string& passes) {
  std::vector<std::string> names;
  if (passes == "none") return names;
  size_t start = 0;
  while (start <= passes.size()) {
    size_t comma = passes.find(',', start);
    std::string name = passes.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!name.empty()) names.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

PassManagerOptions pass_options(const SetupArgs& args) {
  PassManagerOptions o;
  if (!args.passes.empty()) o.passes = listed_passes(args.passes);
  for (const std::string& name : args.enabled_passes)
    if (std::find(o.passes.begin(), o.passes.end(), name) == o.passes.end()) o.passes.push_back(name);
  o.disabled.insert(args.disabled_passes.begin(), args.disabled_passes.end());
  return o;
}

void log_pass_reports(const TrainingGraph& tg) {
  // One line, only the passes that changed something (inspect lists them all).
  const std::pair<const char*, const PassReport*> reports[] = {{"before the loss", &tg.passes_before_loss},
                                                               {"after the backward", &tg.passes_after_backward}};
  std::string line;
  bool ran = false;
  for (const auto& [when, r] : reports) {
    std::string changed;
    for (const auto& [name, st] : r->passes) {
      ran = true;
      if (st.changed > 0) changed += fmt::format("{}{} {}", changed.empty() ? "" : ", ", name, st.changed);
    }
    if (!changed.empty()) line += fmt::format("{}{}: {}", line.empty() ? "" : "; ", when, changed);
  }
  spdlog::info("graph passes (nodes changed): {}", !ran ? "none run" : line.empty() ? "nothing to change" : line);
  for (const std::string& gone : tg.passes_before_loss.replaced) spdlog::info("graph pass not run: {}", gone);
}

int64_t count_elements(const Model& m, const std::vector<std::string>& names) {
  int64_t n = 0;
  for (const auto& name : names) n += m.graph.initializers.at(name).numel();
  return n;
}

void log_training_graph(const TrainingGraph& tg) {
  const GradientGraph& gg = tg.gradients;
  size_t forward = forward_node_count(tg);
  spdlog::info("training graph: {} forward + loss nodes, {} backward nodes; loss '{}'; built in {:.1f} ms", forward,
               tg.model.graph.nodes.size() - forward, gg.loss, tg.build_ms);
  spdlog::info("parameters: {} trainable tensors ({} elements), {} frozen tensors ({} elements)", gg.trainable.size(),
               count_elements(tg.model, gg.trainable), tg.selection.frozen.size(),
               count_elements(tg.model, tg.selection.frozen));
  for (const std::string& line : tg.unfolded) spdlog::info("  export fold undone: {}", line);
  for (const std::string& line : describe_choices(tg.selection)) spdlog::info("  {}", line);
  const std::vector<std::string> adapters = describe_adapters(tg);
  for (size_t i = 0; i < adapters.size(); ++i) {
    if (i == 0) spdlog::info("{}", adapters[i]);
    else spdlog::debug("{}", adapters[i]);
  }
  if (tg.autocast.nodes > 0)
    spdlog::info("autocast: {} forward GEMMs in {} ({} casts added; their gradients follow){}", tg.autocast.nodes,
                 dtype_name(tg.autocast.low), tg.autocast.casts,
                 tg.autocast.half_activations > 0
                     ? fmt::format("; half_activations: {} ops after them in {} too", tg.autocast.half_activations,
                                   dtype_name(tg.autocast.low))
                     : "");
  if (!tg.inference_batch_norms.empty()) spdlog::warn("{}", inference_batch_norm_warning(tg.inference_batch_norms));
  for (const auto& w : gg.unreached)
    spdlog::warn("initializer '{}' has no differentiable path to the loss: it gets no gradient", w);
  for (const auto& glob : tg.selection.unused_globs)
    spdlog::warn("trainable glob '{}' matches no floating-point initializer", glob);
}

}  // namespace ort_train::app
