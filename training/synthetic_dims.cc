#include "training/synthetic_dims.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace ort_train {
namespace {

bool is_graph_input(const Graph& g, const std::string& name) {
  return std::any_of(g.inputs.begin(), g.inputs.end(), [&](const ValueInfo& v) { return v.name == name; });
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The position table: a 2-D weight a Gather reads at computed indices.
std::optional<std::pair<std::string, int64_t>> position_table(const Graph& g) {
  std::optional<std::pair<std::string, int64_t>> named, largest;
  for (const Node& n : g.nodes) {
    if (n.op_type != "Gather" || !n.domain.empty() || n.inputs.size() < 2 || n.attr_int("axis", 0) != 0) continue;
    const std::string& table = n.inputs[0];
    if (!g.is_initializer(table) || g.is_initializer(n.inputs[1]) || is_graph_input(g, n.inputs[1])) continue;
    const Dims& dims = g.initializers.at(table).dims();
    if (dims.size() != 2 || dims[0] < 1) continue;
    std::pair<std::string, int64_t> found{table, dims[0]};
    if (!named && lower(table).find("pos") != std::string::npos) named = found;
    if (!largest || found.second > largest->second) largest = found;
  }
  return named ? named : largest;
}

}  // namespace

SyntheticDims default_synthetic_dims(const Graph& g, const std::vector<TensorDecl>& decls,
                                     std::map<std::string, int64_t> dims, std::optional<int64_t> batch_size) {
  SyntheticDims out;
  // The batch: "batch", or the symbol every declaration starts with.
  std::optional<std::string> batch_symbol;
  for (const TensorDecl& d : decls) {
    std::string first = d.shape.empty() || d.shape[0].known() ? "" : d.shape[0].symbol;
    if (!batch_symbol) batch_symbol = first;
    else if (*batch_symbol != first) batch_symbol = "";
  }
  std::optional<std::pair<std::string, int64_t>> positions = position_table(g);
  for (const TensorDecl& d : decls) {
    for (const Dim& dim : d.shape) {
      if (dim.known() || dim.symbol.empty() || dims.count(dim.symbol)) continue;
      if (dim.symbol == "batch" || (batch_symbol && dim.symbol == *batch_symbol)) {
        dims[dim.symbol] = batch_size.value_or(kDefaultBatchSize);
        out.defaulted.push_back(fmt::format("{} {} ({})", dim.symbol, dims[dim.symbol],
                                            batch_size ? "the batch size" : "the default batch; --batch-size N sets it"));
      } else if (positions) {
        dims[dim.symbol] = std::min(positions->second, kDefaultSequenceLength);
        out.defaulted.push_back(fmt::format("{} {} (the position table {} has {} rows; --dim {}=N sets it)", dim.symbol,
                                            dims[dim.symbol], positions->first, positions->second, dim.symbol));
      }
    }
  }
  out.dims = std::move(dims);
  return out;
}

}  // namespace ort_train
