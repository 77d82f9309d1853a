// `ort_train inspect`: what a model needs before anything runs: its ops, its
// parameters, every op without a CPU kernel or a gradient rule (all of them,
// with node names), the training graph's size, the time to build it, and the
// memory it will need. Exits 3 when something is missing.
#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdio>
#include <map>

#include "apps/commands.h"
#include "apps/option_checks.h"
#include "graph/gemm_flops.h"
#include "apps/training_setup.h"
#include "autodiff/gradient_builder.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"
#include "training/recompute.h"
#include "training/step_graph.h"

namespace ort_train::app {

void add_inspect_command(CLI::App& app, InspectArgs& args) {
  CLI::App* cmd = app.add_subcommand("inspect", "List a model's ops, parameters, missing kernels/gradients and memory");
  cmd->add_option("--model", args.setup.model, "forward ONNX model (REQUIRED, unless the description has model:)");
  cmd->add_option("--config", args.setup.config, "model description (YAML or JSON)");
  add_pass_options(cmd, args.setup);
  add_precision_option(cmd, args.setup);
  add_dim_option(cmd, args.setup);
  add_max_memory_option(cmd, args.setup.max_memory);
  add_recompute_option(cmd, args.setup);
  cmd->add_option("--batch-size", args.setup.batch_size, "binds the dim 'batch' for the memory estimate")
      ->check(whole_number_at_least(1));
}

namespace {

// "name (Op)" of every node without a CPU kernel for its dtype.
std::vector<std::string> nodes_without_kernel(const Model& m) {
  std::vector<std::string> out;
  for (const Node& n : m.graph.nodes) {
    DType key = kernel_key_dtype(m.graph, n);
    if (!KernelRegistry::instance().find(n.domain, n.op_type, m.opset(n.domain), DeviceKind::kCpu, key))
      out.push_back(n.describe() + (dtype_is_half(key) ? " for " + dtype_name(key) : ""));
  }
  return out;
}

double mib(size_t bytes) { return static_cast<double>(bytes) / 1048576.0; }

void print_parameters(const TrainingGraph& tg) {
  std::printf("nodes without a gradient rule on the loss path: 0\n");
  const GradientGraph& gg = tg.gradients;
  std::printf("parameters: %zu trainable tensors, %lld elements; %zu frozen tensors, %lld elements\n",
              gg.trainable.size(), static_cast<long long>(count_elements(tg.model, gg.trainable)),
              tg.selection.frozen.size(), static_cast<long long>(count_elements(tg.model, tg.selection.frozen)));
  for (const std::string& line : tg.unfolded) std::printf("  export fold undone: %s\n", line.c_str());
  for (const std::string& line : describe_choices(tg.selection, SIZE_MAX)) std::printf("  %s\n", line.c_str());
  for (const std::string& line : describe_adapters(tg)) std::printf("%s\n", line.c_str());
  if (!tg.inference_batch_norms.empty())
    std::printf("warning: %s\n", inference_batch_norm_warning(tg.inference_batch_norms).c_str());
  for (const auto& w : gg.unreached) std::printf("  no gradient (no differentiable path to the loss): %s\n", w.c_str());
}

void print_pass_reports(const TrainingGraph& tg) {
  for (const auto& [when, r] : {std::pair<const char*, const PassReport*>{"adding LoRA's adapters", &tg.passes_adapters},
                                 std::pair<const char*, const PassReport*>{"before the loss", &tg.passes_before_loss},
                                 std::pair<const char*, const PassReport*>{"after the backward", &tg.passes_after_backward}}) {
    if (r == &tg.passes_adapters && tg.lora.adapters.empty()) continue;
    std::printf("graph passes %s: %lld round(s)%s\n", when, static_cast<long long>(r->rounds),
                r->passes.empty() ? ", none run" : "");
    for (const auto& [name, st] : r->passes) {
      std::printf("  %-36s %lld nodes changed\n", name.c_str(), static_cast<long long>(st.changed));
      for (const std::string& m : st.matched) std::printf("    %s\n", m.c_str());
    }
    for (const std::string& gone : r->replaced) std::printf("  not run: %s\n", gone.c_str());
  }
}

// The planned memory of the step graph, judged against the CPU's budget.
Status print_memory(const PreparedGraph& p) {
  const StepGraph& step = p.step;
  const TrainingGraph* tg = &p.tg;
  MemoryEstimate est = estimate_memory(step.model, gradient_outputs(*tg));
  std::printf("memory: weights %.2f MiB, gradients %.2f MiB, peak activations %.2f MiB (after node %s)%s\n",
              mib(est.initializer_bytes),
              mib(est.initializer_bytes > 0 ? static_cast<size_t>(count_elements(tg->model, tg->gradients.trainable)) * 4 : 0),
              mib(est.peak_activation_bytes),
              step.model.graph.nodes.empty() ? "-" : step.model.graph.nodes[est.peak_at].name.c_str(),
              est.complete ? "" : " (lower bound: some shapes depend on unbound dims, which --batch-size or dims: binds, or on the data, such as NonZero's)");
  const Device* cpu = p.device.get();
  Status fits = check_plan_fits(step.model, est, *cpu);
  std::printf("memory budget on the CPU: %.1f MiB%s: %s\n", mib(cpu->memory_budget()),
              memory_limit() ? " (--max-memory)" : "", !est.complete ? "not judged (incomplete estimate)"
                                                       : fits.ok() ? "the plan fits" : fits.message().c_str());
  return Status::Ok();
}

void print_recompute(const SetupArgs& args, const RecomputeReport& r) {
  std::printf("recompute (%s): %zu cheap-op nodes; %zu of %zu layers, %zu forward nodes copied into the backward; "
              "peak activations %.2f MiB without, %.2f MiB with%s\n",
              args.recompute.c_str(), r.cheap_nodes, r.recomputed.size(), r.layers.size(), r.copied_nodes,
              mib(r.peak_before), mib(r.peak_after), r.complete ? "" : " (lower bounds: some shapes unknown)");
  for (const std::string& l : r.recomputed) std::printf("  %s\n", l.c_str());
}

}  // namespace

Status inspect_command(const InspectArgs& args) {
  RETURN_IF_ERROR(apply_max_memory(args.setup.max_memory));
  ASSIGN_OR_RETURN(Setup setup, load_setup(args.setup));
  const Model& fwd = setup.forward;
  std::map<std::string, int> ops;
  for (const Node& n : fwd.graph.nodes) ops[(n.domain.empty() ? "" : n.domain + "::") + n.op_type]++;
  std::printf("model: %s (%zu nodes, opset %lld)\n", setup.model_path.c_str(), fwd.graph.nodes.size(),
              static_cast<long long>(fwd.opset("")));
  std::printf("ops:");
  for (const auto& [op, count] : ops) std::printf(" %s x%d", op.c_str(), count);
  std::printf("\n");

  int missing = 0;
  Status known = check_ops_known(fwd);
  if (!known.ok()) {
    std::printf("forward ops without a shape rule:\n%s\n", known.message().c_str());
    return known;
  }
  auto no_kernel = nodes_without_kernel(fwd);
  std::printf("forward nodes without a CPU kernel: %zu\n", no_kernel.size());
  for (const auto& n : no_kernel) std::printf("  %s\n", n.c_str());
  missing += static_cast<int>(no_kernel.size());

  // The graph `train` would build and run, on the CPU (inspect judges the CPU plan).
  auto prepared = prepare_graph(fwd, setup, args.setup, "cpu", DeviceSettings{});
  if (!prepared.ok()) {
    // List every node without a gradient rule, not just the first problem.
    std::printf("training graph: not built: %s\n", prepared.status().message().c_str());
    return prepared.status();
  }
  const TrainingGraph* tg = &prepared->tg;
  print_parameters(*tg);
  print_pass_reports(*tg);
  if (prepared->recompute) print_recompute(args.setup, *prepared->recompute);
  size_t forward = forward_node_count(*tg);
  std::printf("training graph: %zu forward + loss nodes, %zu backward nodes, built in %.1f ms\n", forward,
              tg->model.graph.nodes.size() - forward, tg->build_ms);
  std::printf("gradient bytes final after 25%% / 50%% / 75%% of the backward nodes: %.1f%% / %.1f%% / %.1f%%\n",
              100 * gradient_bytes_final_by(*tg, 0.25), 100 * gradient_bytes_final_by(*tg, 0.5),
              100 * gradient_bytes_final_by(*tg, 0.75));
  auto no_kernel_training = nodes_without_kernel(tg->model);
  std::printf("training-graph nodes without a CPU kernel: %zu\n", no_kernel_training.size());
  for (const auto& n : no_kernel_training) std::printf("  %s\n", n.c_str());
  missing += static_cast<int>(no_kernel_training.size());
  // Informational: the GPU is optional, so nodes it cannot run do not fail `inspect`.
  if (cuda_available() || has_cuda_kernels()) {
    Status cuda = check_kernels(tg->model, DeviceKind::kCuda);
    std::printf("training graph on --device cuda: %s\n", cuda.ok() ? "every node has a kernel" : cuda.message().c_str());
  }
  GemmFlops flops = count_gemm_flops(tg->model.graph);
  if (tg->autocast.nodes > 0)
    std::printf("autocast: %lld forward GEMMs in %s, %lld casts added\n", static_cast<long long>(tg->autocast.nodes),
                dtype_name(tg->autocast.low).c_str(), static_cast<long long>(tg->autocast.casts));
  std::printf("GEMM work per step: %.3f GFLOP, %.1f%% in a 16-bit float (bfloat16 %.1f%%, float16 %.1f%%)%s\n",
              flops.total() / 1e9,
              100 * (flops.fraction(DType::kBFloat16) + flops.fraction(DType::kFloat16)),
              100 * flops.fraction(DType::kBFloat16), 100 * flops.fraction(DType::kFloat16),
              flops.unknown.empty() ? ""
                                    : fmt::format(" (not counted: {} products whose shapes depend on the data or on "
                                                  "dims --batch-size or dims: would bind, such as {})",
                                                  flops.unknown.size(), flops.unknown.front()).c_str());
  RETURN_IF_ERROR(print_memory(*prepared));
  if (missing > 0) return unsupported("{} node(s) lack a CPU kernel (listed above)", missing);
  return Status::Ok();
}

}  // namespace ort_train::app
