#include "autodiff/gradient_op.h"

#include <algorithm>

#include "autodiff/gradient_builder.h"
#include "graph/topo_sort.h"

namespace ort_train {

Status expand_gradient_ops(Model& model) {
  constexpr const char* kDomain = "ai.onnx.preview.training";
  auto is_gradient = [&](const Node& n) { return n.domain == kDomain && n.op_type == "Gradient"; };
  while (true) {
    Graph& g = model.graph;
    auto it = std::find_if(g.nodes.begin(), g.nodes.end(), is_gradient);
    if (it == g.nodes.end()) return Status::Ok();
    Node grad_node = *it;
    g.nodes.erase(it);
    const Attribute* xs = grad_node.attr("xs");
    std::string y = grad_node.attr_string("y", "");
    if (!xs || y.empty()) return invalid_argument("{}: needs the attributes xs and y", grad_node.describe());
    if (xs->strings.size() != grad_node.outputs.size())
      return invalid_argument("{}: {} xs for {} outputs", grad_node.describe(), xs->strings.size(), grad_node.outputs.size());
    if (model.opset("") == 0) model.opset_imports.push_back({"", 17});
    std::vector<ValueInfo> outputs = g.outputs;
    ASSIGN_OR_RETURN(auto b, GraphBuilder::create(model, {}));
    ASSIGN_OR_RETURN(std::string loss, b->add1("ReduceSum", {y}, {Attribute::make_int("keepdims", 0)}, "", y + "_sum"));
    ASSIGN_OR_RETURN(GradientGraph gg, build_gradients(*b, loss, xs->strings));
    for (size_t k = 0; k < xs->strings.size(); ++k) {
      const std::string& x = xs->strings[k];
      if (grad_node.outputs[k].empty()) continue;
      auto found = gg.gradient.find(x);
      if (found == gg.gradient.end())
        return invalid_argument("{}: {} does not depend differentiably on {}", grad_node.describe(), y, x);
      RETURN_IF_ERROR(b->add_named("Identity", {found->second}, {grad_node.outputs[k]}));
    }
    // The builder listed its gradients as graph outputs: keep the model's own outputs only.
    g.outputs = outputs;
    // Consumers of the Gradient's outputs now come before the nodes producing them.
    RETURN_IF_ERROR(topological_sort(g));
  }
}

}  // namespace ort_train
