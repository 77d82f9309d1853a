#include "graph/node_arity.h"

#include <onnx/defs/schema.h>

#include <algorithm>

#include "graph/op_schema.h"

namespace ort_train {

Status check_node_arity(const Node& node, int64_t opset) {
  const bool has_output = std::any_of(node.outputs.begin(), node.outputs.end(), [](const std::string& o) { return !o.empty(); });
  if (!has_output) return invalid_argument("{}: the node has no output", node.describe());
  if (!node.domain.empty()) return Status::Ok();  // com.ort_train and others: their shape rules check
  // An op ort_train does not run is listed, with every other, by check_ops_known.
  if (!OpRegistry::instance().find(node.domain, node.op_type, opset)) return Status::Ok();
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(node.op_type, static_cast<int>(opset), onnx::ONNX_DOMAIN);
  if (!schema) return Status::Ok();
  const int given = static_cast<int>(node.inputs.size());
  // Files carry an old opset import with a newer version's arity (a 2-input
  // Gemm at opset 9): what either this version or the latest allows passes.
  const onnx::OpSchema* latest = onnx::OpSchemaRegistry::Schema(node.op_type, onnx::ONNX_DOMAIN);
  int fewest = schema->min_input();
  if (latest) fewest = std::min(fewest, latest->min_input());
  if (given < fewest)
    return invalid_argument("{}: {} inputs given, {} takes at least {}", node.describe(), given, node.op_type, fewest);
  // (More inputs than the schema names are left to the shape rule: exporters
  // write them, ONNX Runtime's own test models among them, and nothing reads them.)
  // Whether input i must be given, by this version's schema and the latest's.
  auto required = [](const onnx::OpSchema* s, int i, std::string* name) {
    const auto& formal = s->inputs();
    if (formal.empty()) return false;
    // Past the formal list only a variadic last parameter repeats, and its members are required.
    const auto& f = formal[std::min<size_t>(static_cast<size_t>(i), formal.size() - 1)];
    if (name) *name = f.GetName();
    return f.GetOption() != onnx::OpSchema::Optional;
  };
  for (int i = 0; i < given; ++i) {
    if (!node.inputs[static_cast<size_t>(i)].empty()) continue;
    std::string name;
    if (required(schema, i, &name) && (!latest || required(latest, i, nullptr)))
      return invalid_argument("{}: input {} ('{}') is required but the node leaves it empty", node.describe(), i, name);
  }
  return Status::Ok();
}

}  // namespace ort_train
