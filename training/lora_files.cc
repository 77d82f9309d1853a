#include "training/lora_files.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "training/safetensors.h"

namespace ort_train {
namespace fs = std::filesystem;
namespace {

// The PyTorch name of a train_also initializer (a folded one's parameter).
std::string parameter_name(const LoraPlan& plan, const std::string& initializer) {
  auto it = plan.settings.parameter_names.find(initializer);
  return it != plan.settings.parameter_names.end() ? it->second : initializer;
}

std::string train_also_key(const LoraPlan& plan, const std::string& initializer) {
  return "base_model.model." + parameter_name(plan, initializer);
}

// The file's dims of A (`a`) or B: PEFT's nn.Linear / nn.Conv2d weights.
Dims peft_dims(const LoraAdapter& ad, int64_t rank, bool a) {
  Dims d = a ? Dims{rank, ad.in} : Dims{ad.out, rank};
  if (ad.layout == LoraLayout::kConv1x1) d.insert(d.end(), {1, 1});
  return d;
}

// A [in, rank] -> [rank, in] and B [rank, out] -> [out, rank]: a float32 transpose.
Tensor transposed(const Tensor& t, Dims dims) {
  const int64_t rows = t.dim(0), cols = t.dim(1);
  Tensor out = Tensor::host(DType::kFloat, std::move(dims));
  const float* src = t.data<float>();
  float* dst = out.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  return out;
}

Status write_config(const fs::path& path, const LoraPlan& plan) {
  std::vector<std::string> modules;
  for (const LoraAdapter& ad : plan.adapters) modules.push_back(ad.module);
  const double alpha = plan.settings.alpha;
  nlohmann::json c = {
      {"peft_type", "LORA"},
      {"task_type", nullptr},
      {"base_model_name_or_path", nullptr},
      {"r", plan.settings.rank},
      {"target_modules", modules},
      {"bias", "none"},
      {"fan_in_fan_out", false},
      {"inference_mode", true},
      {"init_lora_weights", true},
      {"modules_to_save", nullptr},
      {"use_rslora", false},
      {"use_dora", false},
      {"rank_pattern", nlohmann::json::object()},
      {"alpha_pattern", nlohmann::json::object()},
  };
  // PEFT writes lora_alpha as an int; a fractional alpha stays a number.
  if (alpha == std::floor(alpha) && std::abs(alpha) < 1e15) c["lora_alpha"] = static_cast<int64_t>(alpha);
  else c["lora_alpha"] = alpha;
  c["lora_dropout"] = plan.settings.dropout;
  std::string text = c.dump(2) + "\n";
  ASSIGN_OR_RETURN(auto out, AtomicFileWriter::open(path.string(), OutputName::kChosen));
  RETURN_IF_ERROR(out->write(text.data(), text.size()));
  return out->commit();
}

// A floating-point tensor of the file as float32: F16, BF16 and F64 widened
// or rounded as PyTorch's .float() does (the header's dtypes were checked).
Tensor as_float(const Tensor& t) {
  Tensor out = Tensor::host(DType::kFloat, t.dims());
  float* dst = out.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<float>(float_element(t.dtype(), t.raw(), i));
  return out;
}

}  // namespace

std::string peft_key(const LoraAdapter& adapter, bool a) {
  return "base_model.model." + adapter.module + (a ? ".lora_A.weight" : ".lora_B.weight");
}

Status write_peft_adapters(const std::string& path, const LoraTensors& lora) {
  const LoraPlan& plan = *lora.plan;
  std::map<std::string, Tensor> tensors;
  for (const LoraAdapter& ad : plan.adapters) {
    tensors[peft_key(ad, true)] = transposed(lora.values.at(ad.a), peft_dims(ad, plan.settings.rank, true));
    tensors[peft_key(ad, false)] = transposed(lora.values.at(ad.b), peft_dims(ad, plan.settings.rank, false));
  }
  for (const std::string& name : lora.train_also) tensors[train_also_key(plan, name)] = lora.values.at(name);
  RETURN_IF_ERROR(write_safetensors(path, tensors, {{"format", "pt"}}));
  return write_config(fs::path(path).parent_path() / "adapter_config.json", plan);
}

Status read_peft_adapters(const std::string& path, LoraTensors& lora) {
  const LoraPlan& plan = *lora.plan;
  ASSIGN_OR_RETURN(auto bytes, open_readable_file(path));
  ASSIGN_OR_RETURN(SafetensorsHeader header, read_safetensors_header(*bytes));
  // key -> (initializer, the file's dims, whether it is stored transposed)
  struct Expected {
    std::string initializer;
    Dims dims;
    bool transposed;
  };
  std::map<std::string, Expected> expected;
  for (const LoraAdapter& ad : plan.adapters) {
    expected[peft_key(ad, true)] = {ad.a, peft_dims(ad, plan.settings.rank, true), true};
    expected[peft_key(ad, false)] = {ad.b, peft_dims(ad, plan.settings.rank, false), true};
  }
  std::set<std::string> optional;
  for (const std::string& name : lora.train_also) {
    expected[train_also_key(plan, name)] = {name, lora.values.at(name).dims(), false};
    optional.insert(train_also_key(plan, name));
  }
  for (const auto& [key, e] : header.entries) {
    auto it = expected.find(key);
    if (it == expected.end())
      return invalid_argument("{}: key '{}' is no adapter of this model and lora: (expected keys like '{}')", path, key,
                              expected.begin()->first);
    if (e.dims != it->second.dims)
      return invalid_argument("{}: key '{}' has shape {}; this model and lora.rank {} need {}", path, key,
                              dims_to_string(e.dims), plan.settings.rank, dims_to_string(it->second.dims));
    if (!dtype_is_float(e.dtype))
      return invalid_argument("{}: key '{}' is {}; adapters are floating point (F32, F16, BF16 or F64)", path, key,
                              safetensors_dtype_name(e.dtype));
  }
  for (const auto& [key, e] : expected)
    if (!header.entries.count(key) && !optional.count(key))
      return invalid_argument("{}: key '{}' is missing ({} of the {} adapter keys are in the file)", path, key,
                              header.entries.size(), expected.size() - optional.size());
  // All checked: read, then copy in place.
  std::map<std::string, Tensor> values;
  for (const auto& [key, e] : header.entries) {
    ASSIGN_OR_RETURN(Tensor raw, read_safetensors_tensor(*bytes, e));
    const Tensor f = as_float(raw);
    const Expected& x = expected.at(key);
    const Tensor& dst = lora.values.at(x.initializer);
    values[x.initializer] = x.transposed ? transposed(f.reshaped({f.dim(0), f.dim(1)}), dst.dims()) : f;
  }
  for (const auto& [name, t] : values) {
    Tensor& dst = lora.values.at(name);
    if (dst.dtype() != DType::kFloat || dst.device() != DeviceKind::kCpu)
      return make_error(ErrorCode::kInternal, "adapter '{}' is not a float32 host tensor", name);
    std::memcpy(dst.raw(), t.raw(), t.nbytes());
  }
  return Status::Ok();
}

Status merge_adapters(Model& forward, const LoraTensors& lora) {
  const LoraPlan& plan = *lora.plan;
  for (const LoraAdapter& ad : plan.adapters) {
    auto it = forward.graph.initializers.find(ad.weight);
    if (it == forward.graph.initializers.end() || it->second.dtype() != DType::kFloat)
      return make_error(ErrorCode::kInternal, "the adapted weight '{}' is not a float32 initializer of the model",
                        ad.weight);
    Tensor delta = lora_delta(ad, lora.values.at(ad.a), lora.values.at(ad.b), plan.settings.scale());
    if (delta.dims() != it->second.dims())
      return make_error(ErrorCode::kInternal, "adapter of '{}': {} against the weight's {}", ad.weight,
                        dims_to_string(delta.dims()), dims_to_string(it->second.dims()));
    const float* d = delta.data<float>();
    float* w = it->second.data<float>();
    for (int64_t i = 0; i < delta.numel(); ++i) w[i] += d[i];
  }
  return Status::Ok();
}

}  // namespace ort_train
