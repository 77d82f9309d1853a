#include "autodiff/training_graph.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "autodiff/loss.h"
#include "graph/dynamo_export.h"
#include "graph/reachability.h"

namespace ort_train {
namespace {

bool is_float(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kFloat16 || t == DType::kBFloat16;
}

}  // namespace

std::vector<std::string> describe_adapters(const TrainingGraph& tg) {
  std::vector<std::string> lines;
  const LoraPlan& plan = tg.lora;
  if (plan.adapters.empty()) return lines;
  const auto& inits = tg.model.graph.initializers;
  int64_t adapter_elements = 0, trains = 0;
  for (const LoraAdapter& ad : plan.adapters) adapter_elements += inits.at(ad.a).numel() + inits.at(ad.b).numel();
  for (const std::string& name : tg.selection.trainable) trains += inits.at(name).numel();
  const int64_t all = tg.lora_base_parameters + adapter_elements;
  lines.push_back(fmt::format("LoRA: {} adapters, rank {}, alpha {:g} (scale {:g}), dropout {:g}; trainable params: {} "
                              "|| all params: {} || trainable%: {:.4f}",
                              plan.adapters.size(), plan.settings.rank, plan.settings.alpha, plan.settings.scale(),
                              plan.settings.dropout, trains, all, all > 0 ? 100.0 * trains / all : 0.0));
  for (const LoraAdapter& ad : plan.adapters)
    lines.push_back(fmt::format("  {} {}, {} {}{}", ad.a, dims_to_string(inits.at(ad.a).dims()), ad.b,
                                dims_to_string(inits.at(ad.b).dims()),
                                ad.weight == ad.module + ".weight" ? "" : " (on " + ad.weight + ")"));
  return lines;
}

std::vector<std::string> inference_batch_norms(const Model& model) {
  std::vector<std::string> names;
  const bool attribute = model.opset("") >= 14;  // training_mode exists from opset 14
  for (const Node& n : model.graph.nodes)
    if (n.domain.empty() && n.op_type == "BatchNormalization" && (!attribute || n.attr_int("training_mode", 0) == 0))
      names.push_back(n.name);
  return names;
}

std::string inference_batch_norm_warning(const std::vector<std::string>& nodes) {
  std::string list;
  for (size_t i = 0; i < nodes.size() && i < 8; ++i) list += (i ? ", " : "") + nodes[i];
  if (nodes.size() > 8) list += fmt::format(", and {} more", nodes.size() - 8);
  return fmt::format(
      "{} BatchNormalization node(s) are in inference mode ({}): they normalize with the running statistics and "
      "never update them, which trains a frozen-BatchNorm model, not one in PyTorch's train() mode. The dynamo "
      "exporter writes inference-mode BatchNorm even from train(): to train it as PyTorch does, export with "
      "tools/export_for_training.py, or with torch.onnx.export(..., dynamo=False, training=torch.onnx.TrainingMode.TRAINING)",
      nodes.size(), list);
}

namespace {

// The description's padding rows, checked against the model: each names a
// table of at least two dims that a Gather on axis 0 reads, and a row in it.
Result<std::map<std::string, int64_t>> padding_rows(const Model& model, const ModelDescription& desc) {
  std::map<std::string, int64_t> rows;
  for (const auto& entry : desc.padding_rows) {
    const std::string& name = entry.first;  // not a structured binding: lambdas below capture it
    const int64_t idx = entry.second;
    auto it = model.graph.initializers.find(name);
    if (it == model.graph.initializers.end() || it->second.rank() < 2)
      return invalid_argument("embeddings: '{}' is not an initializer of two or more dims (an embedding table)", name);
    bool looked_up = std::any_of(model.graph.nodes.begin(), model.graph.nodes.end(), [&](const Node& n) {
      int64_t axis = n.attr_int("axis", 0);
      return n.domain.empty() && n.op_type == "Gather" && !n.inputs.empty() && n.inputs[0] == name &&
             (axis == 0 || axis == -it->second.rank());
    });
    if (!looked_up) return invalid_argument("embeddings: no Gather on axis 0 looks rows up in '{}'", name);
    int64_t n_rows = it->second.dims()[0];
    if (idx < -n_rows || idx >= n_rows)
      return invalid_argument("embeddings.{}.padding_idx: {} is outside the table's {} rows", name, idx, n_rows);
    rows[name] = idx < 0 ? idx + n_rows : idx;
  }
  return rows;
}

// The description's lora: the adapter phase of the pass manager adds A and B
// beside each targeted weight (graph/passes/lora_adapters.h); they train,
// and the frozen set was already settled by lora.train_also.
Status add_adapters(TrainingGraph& tg, const LoraConfig& lora, int64_t seed, const PassManagerOptions& passes) {
  tg.lora.settings = {lora.targets, lora.rank, lora.alpha, lora.dropout, static_cast<uint64_t>(seed), {}};
  for (const InitializerChoice& c : tg.selection.notable) {
    if (!c.source.empty() && c.source.find(',') == std::string::npos) tg.lora.settings.parameter_names[c.name] = c.source;
    if (c.reason == kFrozenByLora) tg.lora_base_parameters += tg.model.graph.initializers.at(c.name).numel();
  }
  for (const std::string& name : tg.selection.trainable)
    tg.lora_base_parameters += tg.model.graph.initializers.at(name).numel();
  PassManagerOptions adapter = passes;
  adapter.phase = kAdapterPhase;
  adapter.max_rounds = 1;
  adapter.lora = &tg.lora;
  const std::set<std::string> pinned(tg.selection.trainable.begin(), tg.selection.trainable.end());
  ASSIGN_OR_RETURN(tg.passes_adapters, run_passes(tg.model, pinned, adapter));
  if (tg.lora.adapters.empty())
    return invalid_argument("lora: the lora_adapters pass is disabled (--disable-pass), so no adapter was added");
  for (const LoraAdapter& ad : tg.lora.adapters)
    for (const std::string& name : {ad.a, ad.b}) {
      tg.selection.trainable.push_back(name);
      tg.selection.notable.push_back({name, true, "a LoRA adapter", ""});
    }
  return Status::Ok();
}

}  // namespace

Result<LossSpec> resolve_loss(const Model& model, const ModelDescription& desc) {
  if (desc.loss) return *desc.loss;
  const auto& outs = model.graph.outputs;
  for (const ValueInfo& o : outs)
    if (o.name == "loss") return LossSpec{.output = "loss"};
  if (outs.size() == 1 && is_float(outs[0].dtype) && outs[0].shape && outs[0].shape->empty())
    return LossSpec{.output = outs[0].name};
  std::string names;
  for (const ValueInfo& o : outs) names += (names.empty() ? "" : ", ") + o.name;
  return invalid_argument(
      "the model's outputs ({}) include no scalar loss: describe one with --config "
      "(loss: {{type: softmax_cross_entropy, input: <output>, target: <label>}}, or loss: {{output: <name>}})",
      names);
}

std::set<std::string> gradient_outputs(const TrainingGraph& tg) {
  std::set<std::string> out;
  for (const auto& [w, grad] : tg.gradients.gradient) out.insert(grad);
  return out;
}

size_t forward_node_count(const TrainingGraph& tg) {
  return nodes_reaching(tg.model.graph, tg.eval_outputs).size();
}

double gradient_bytes_final_by(const TrainingGraph& tg, double backward_fraction) {
  const Graph& g = tg.model.graph;
  std::vector<size_t> forward = nodes_reaching(g, tg.eval_outputs);
  std::vector<bool> is_forward(g.nodes.size(), false);
  for (size_t i : forward) is_forward[i] = true;
  std::map<std::string, size_t> final_at;  // gradient name -> its producer's position among backward nodes
  size_t backward = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (is_forward[i]) continue;
    ++backward;
    for (const std::string& o : g.nodes[i].outputs) final_at[o] = backward;
  }
  double total = 0, ready = 0;
  for (const auto& [w, grad] : tg.gradients.gradient) {
    double bytes = static_cast<double>(g.initializers.count(w) ? g.initializers.at(w).nbytes() : 0);
    total += bytes;
    auto it = final_at.find(grad);
    size_t at = it == final_at.end() ? 0 : it->second;  // 0: computed in the forward part
    if (static_cast<double>(at) <= backward_fraction * static_cast<double>(backward)) ready += bytes;
  }
  return total > 0 ? ready / total : 1.0;
}

Result<TrainingGraph> build_training_graph(Model forward, const ModelDescription& desc,
                                           const PassManagerOptions& passes) {
  auto started = std::chrono::steady_clock::now();
  TrainingGraph tg;
  tg.model = std::move(forward);
  Graph& g = tg.model.graph;
  // Labels are graph inputs that only the loss reads.
  for (const TensorDecl& label : desc.labels) {
    bool exists = g.is_initializer(label.name) ||
                  std::any_of(g.inputs.begin(), g.inputs.end(), [&](const ValueInfo& v) { return v.name == label.name; });
    if (exists) continue;
    g.inputs.push_back(ValueInfo{label.name, label.dtype, label.shape, "label"});
  }
  // Declared input shapes fill in what the file leaves unnamed.
  for (const TensorDecl& in : desc.inputs) {
    auto it = std::find_if(g.inputs.begin(), g.inputs.end(), [&](const ValueInfo& v) { return v.name == in.name; });
    if (it == g.inputs.end())
      return invalid_argument("{}: input '{}' is not an input of the model", desc.path.empty() ? "description" : desc.path,
                              in.name);
    if (!in.shape.empty() && (!it->shape || it->shape->size() == in.shape.size())) it->shape = in.shape;
  }
  ASSIGN_OR_RETURN(LossSpec loss_spec, resolve_loss(tg.model, desc));
  tg.loss = loss_spec;
  // Chosen before the loss adds its own constants, which never train, and
  // before the passes fold float constants into new initializers.
  tg.unfolded = undo_exporter_folds(tg.model);
  TrainableConfig trainable_config = desc.trainable;
  if (desc.lora) trainable_config.only = desc.lora->train_also;
  ASSIGN_OR_RETURN(tg.selection, choose_trainable(tg.model, trainable_config));
  if (desc.lora) RETURN_IF_ERROR(add_adapters(tg, *desc.lora, desc.seed.value_or(0), passes));
  tg.inference_batch_norms = inference_batch_norms(tg.model);
  ASSIGN_OR_RETURN(const auto pads, padding_rows(tg.model, desc));
  const std::vector<std::string>& trainable = tg.selection.trainable;
  const std::set<std::string> pinned(trainable.begin(), trainable.end());  // kept as they are by every pass
  // Each pass declares its phase and order (graph/passes/pass.h): loops with
  // a trip count fixed at plan time are written out first (loop_unrolling),
  // the 16-bit phase runs autocast and, when listed, half_activations (which
  // replaces bias_gelu_fusion).
  PassManagerOptions before = passes;
  before.phase = kForwardPhase;
  before.precision = desc.precision;
  ASSIGN_OR_RETURN(tg.passes_before_loss, run_passes(tg.model, pinned, before));
  // After the fusions (autocast casts around the FusedMatMuls they made) and
  // before the backward, whose GEMMs then run in the low precision as well.
  tg.autocast.low = desc.precision;
  if (desc.precision != DType::kFloat) {
    PassManagerOptions casting = before;
    casting.phase = kPrecisionPhase;
    casting.max_rounds = 1;
    ASSIGN_OR_RETURN(PassReport cast, run_passes(tg.model, pinned, casting));
    const PassStats& stats = cast.passes.at("autocast");
    tg.autocast.nodes = static_cast<int64_t>(stats.matched.size());
    tg.autocast.casts = stats.changed - tg.autocast.nodes;
    if (cast.passes.count("half_activations"))
      tg.autocast.half_activations = static_cast<int64_t>(cast.passes.at("half_activations").matched.size());
  }
  ASSIGN_OR_RETURN(auto builder, GraphBuilder::create(tg.model, desc.dims));
  ASSIGN_OR_RETURN(std::string loss, append_loss(*builder, loss_spec));
  if (std::none_of(g.outputs.begin(), g.outputs.end(), [&](const ValueInfo& v) { return v.name == loss; }))
    g.outputs.insert(g.outputs.begin(), *g.value(loss));
  for (const ValueInfo& o : g.outputs) tg.eval_outputs.push_back(o.name);
  if (desc.precision == DType::kFloat16) {
    // Loss scaling: the backward starts from a scalar the trainer feeds each
    // step. A graph input with an initializer default (1) is no constant to
    // the passes, and a run that feeds nothing computes plain gradients.
    if (builder->dtype(loss) != DType::kFloat)
      return unsupported("--precision fp16 scales a float32 loss; the loss '{}' is {}", loss,
                         dtype_name(builder->dtype(loss)));
    tg.loss_scale_input = builder->fresh_name("loss_scale");
    g.initializers[tg.loss_scale_input] = Tensor::scalar_f32(1.f);
    g.initializer_order.push_back(tg.loss_scale_input);
    ValueInfo scale{tg.loss_scale_input, DType::kFloat, Shape{}};
    g.values[tg.loss_scale_input] = scale;
    g.inputs.push_back(scale);
  }
  ASSIGN_OR_RETURN(tg.gradients, build_gradients(*builder, loss, trainable, tg.loss_scale_input, pads));
  builder.reset();  // it points into tg.model, which the passes now rewrite
  PassManagerOptions after = before;
  after.phase = kBackwardPhase;
  after.shapes_bound = true;  // the builder bound the description's dims
  ASSIGN_OR_RETURN(tg.passes_after_backward, run_passes(tg.model, pinned, after));
  // A frozen initializer the passes folded into a constant (a slice of a
  // positional table, once its size is known) is no longer in the graph.
  std::erase_if(tg.selection.frozen, [&](const std::string& name) { return !g.initializers.count(name); });
  tg.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return tg;
}

}  // namespace ort_train
