#include "training/batch_data.h"

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <random>

#include "graph/onnx_io.h"
#include "training/whole_number.h"

namespace ort_train {
namespace fs = std::filesystem;

Result<std::vector<std::string>> list_batch_dirs(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return io_error("data folder not found: {}", dir);
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code entry_ec;  // an entry that cannot be looked at (a looping link) is no batch
    if (e.is_directory(entry_ec)) out.push_back(e.path().string());
  }
  if (ec) return io_error("cannot list {}: {}", dir, ec.message());
  std::sort(out.begin(), out.end());
  if (out.empty()) return invalid_argument("data folder {} has no batch sub-directories", dir);
  return out;
}

Result<std::map<std::string, Tensor>> read_batch_dir(const std::string& dir, const std::vector<std::string>& names) {
  std::map<std::string, Tensor> out;
  for (const std::string& name : names) {
    fs::path file = fs::path(dir) / tensor_file_name(name);
    if (!path_present(file.string())) return invalid_argument("batch {} has no file for '{}' ({})", dir, name, file.string());
    ASSIGN_OR_RETURN(NamedTensor nt, read_tensor_file(file.string()));
    out[name] = std::move(nt.tensor);
  }
  return out;
}

Result<std::map<std::string, Tensor>> synthetic_batch(const std::vector<TensorDecl>& decls,
                                                      const std::map<std::string, int64_t>& dims, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::map<std::string, Tensor> out;
  for (const TensorDecl& d : decls) {
    Dims shape;
    for (const Dim& dim : d.shape) {
      if (dim.known()) {
        shape.push_back(dim.value);
        continue;
      }
      auto it = dims.find(dim.symbol);
      if (it == dims.end())
        return invalid_argument("synthetic data: dim '{}' of '{}' has no size: give --dim {}=N (or {}: N under the "
                                "description's dims:){}",
                                dim.symbol, d.name, dim.symbol, dim.symbol,
                                dim.symbol == "batch" ? ", or --batch-size N" : "");
      shape.push_back(it->second);
    }
    Tensor t = Tensor::host(d.dtype, shape);
    double lo = d.range ? d.range->first : 0.0, hi = d.range ? d.range->second : 2.0;
    // An integer input's range: whole numbers its dtype holds, [lo, hi) not
    // empty (a cast of 1e300 to int64 is undefined behaviour).
    if (dtype_is_integer(d.dtype) &&
        !(lo < hi && holds_whole_number(d.dtype, lo) && holds_whole_number(d.dtype, hi - 1) && hi == std::floor(hi)))
      return invalid_argument("synthetic data: the range [{:g}, {:g}) of '{}' is not whole numbers that its {} holds",
                              lo, hi, d.name, dtype_name(d.dtype));
    bool ok = true;
    switch (d.dtype) {
      case DType::kFloat: {
        std::normal_distribution<float> dist;
        for (float& v : t.span<float>()) v = d.range ? static_cast<float>(lo + (hi - lo) * std::generate_canonical<double, 53>(gen)) : dist(gen);
        break;
      }
      case DType::kDouble: {
        std::normal_distribution<double> dist;
        for (double& v : t.span<double>()) v = d.range ? lo + (hi - lo) * std::generate_canonical<double, 53>(gen) : dist(gen);
        break;
      }
      case DType::kInt64: case DType::kInt32: {
        std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo), std::max<int64_t>(static_cast<int64_t>(lo), static_cast<int64_t>(hi) - 1));
        if (d.dtype == DType::kInt64)
          for (int64_t& v : t.span<int64_t>()) v = dist(gen);
        else
          for (int32_t& v : t.span<int32_t>()) v = static_cast<int32_t>(dist(gen));
        break;
      }
      case DType::kBool:
        for (bool& v : t.span<bool>()) v = (gen() & 1) != 0;
        break;
      default: ok = false;
    }
    if (!ok) return unsupported("synthetic data: dtype {} of '{}' is not generated", dtype_name(d.dtype), d.name);
    out[d.name] = std::move(t);
  }
  return out;
}

}  // namespace ort_train
