#include "graph/graph.h"

namespace ort_train {

std::string Node::describe() const {
  std::string d = domain.empty() ? op_type : domain + "." + op_type;
  return "node '" + name + "' (" + d + ")";
}

std::vector<const ValueInfo*> Graph::required_inputs() const {
  std::vector<const ValueInfo*> out;
  for (const ValueInfo& v : inputs)
    if (!is_initializer(v.name)) out.push_back(&v);
  return out;
}

int64_t Model::opset(const std::string& d) const {
  for (const OpsetImport& o : opset_imports)
    if (o.domain == d || (d.empty() && o.domain == "ai.onnx")) return o.version;
  return 0;
}

std::string shape_to_string(const OptShape& s) {
  if (!s) return "[unknown rank]";
  std::string r = "[";
  for (size_t i = 0; i < s->size(); ++i) r += (i ? "," : "") + (*s)[i].to_string();
  return r + "]";
}

}  // namespace ort_train
