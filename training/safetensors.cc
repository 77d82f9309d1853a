#include "training/safetensors.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ort_train {
namespace {

// The format library refuses headers past 100 MB; so do we, before reading one.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

const std::pair<const char*, DType> kDtypes[] = {
    {"F32", DType::kFloat},   {"F16", DType::kFloat16}, {"BF16", DType::kBFloat16}, {"F64", DType::kDouble},
    {"I64", DType::kInt64},   {"I32", DType::kInt32},   {"I16", DType::kInt16},     {"I8", DType::kInt8},
    {"U8", DType::kUInt8},    {"U16", DType::kUInt16},  {"U32", DType::kUInt32},    {"U64", DType::kUInt64},
    {"BOOL", DType::kBool}};

struct Entry {
  std::string name;
  DType dtype;
  Dims dims;
  uint64_t begin, end;
};

// One tensor's header entry, checked on its own.
Result<Entry> parse_entry(const std::string& file, const std::string& name, const nlohmann::json& v) {
  auto bad = [&](const std::string& what) { return invalid_argument("{}: tensor '{}': {}", file, name, what); };
  if (!v.is_object()) return bad("expected an object with dtype, shape and data_offsets");
  for (const auto& [key, unused] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets") return bad("unknown key '" + key + "'");
  if (!v.contains("dtype") || !v["dtype"].is_string()) return bad("no dtype");
  if (!v.contains("shape") || !v["shape"].is_array()) return bad("no shape");
  if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
    return bad("data_offsets is not a pair of offsets");
  Entry e{name, DType::kUndefined, {}, 0, 0};
  const std::string dtype = v["dtype"].get<std::string>();
  for (const auto& [n, t] : kDtypes)
    if (dtype == n) e.dtype = t;
  if (e.dtype == DType::kUndefined) return bad(fmt::format("dtype '{}' is not one this reader knows", dtype));
  if (v["shape"].size() > 64) return bad(fmt::format("{} dims", v["shape"].size()));
  for (const auto& d : v["shape"]) {
    if (!d.is_number_unsigned()) return bad("a dim that is not a whole number >= 0");
    uint64_t size = d.get<uint64_t>();
    if (size > static_cast<uint64_t>(INT64_MAX)) return bad("a dim past 2^63");
    e.dims.push_back(static_cast<int64_t>(size));
  }
  for (int i = 0; i < 2; ++i)
    if (!v["data_offsets"][i].is_number_unsigned()) return bad("an offset that is not a whole number >= 0");
  e.begin = v["data_offsets"][0].get<uint64_t>();
  e.end = v["data_offsets"][1].get<uint64_t>();
  std::optional<uint64_t> bytes = checked_nbytes(e.dtype, e.dims);
  if (!bytes) return bad(fmt::format("shape {} of {} overflows", dims_to_string(e.dims), dtype));
  if (e.end < e.begin || e.end - e.begin != *bytes)
    return bad(fmt::format("data_offsets [{}, {}] hold {} bytes; shape {} of {} needs {}", e.begin, e.end,
                           e.end < e.begin ? 0 : e.end - e.begin, dims_to_string(e.dims), dtype, *bytes));
  return e;
}

}  // namespace

std::string safetensors_dtype_name(DType t) {
  for (const auto& [n, d] : kDtypes)
    if (d == t) return n;
  return "";
}

Result<SafetensorsHeader> read_safetensors_header(const ReadableBytes& bytes) {
  const std::string& file = bytes.name();
  if (bytes.size() < 8) return invalid_argument("{}: {} bytes: no safetensors header", file, bytes.size());
  uint8_t len_bytes[8];
  RETURN_IF_ERROR(bytes.read(0, 8, len_bytes));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | len_bytes[i];
  if (header_len > kMaxHeaderBytes)
    return invalid_argument("{}: a safetensors header of {} bytes (at most {} are read)", file, header_len,
                            kMaxHeaderBytes);
  if (header_len > bytes.size() - 8)
    return invalid_argument("{}: the header says {} bytes, the file holds {} after the length: truncated", file,
                            header_len, bytes.size() - 8);
  ASSIGN_OR_RETURN(std::string text, bytes.read_string(8, static_cast<size_t>(header_len)));
  nlohmann::json header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return invalid_argument("{}: the safetensors header is not a JSON object", file);
  SafetensorsHeader out;
  std::vector<Entry> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) return invalid_argument("{}: __metadata__ is not an object", file);
      for (const auto& [k, s] : v.items()) {
        if (!s.is_string()) return invalid_argument("{}: __metadata__.{} is not a string", file, k);
        out.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    ASSIGN_OR_RETURN(Entry e, parse_entry(file, name, v));
    entries.push_back(std::move(e));
  }
  // Every data byte belongs to exactly one tensor (the format's rule: no
  // holes, no overlap), and the data ends where the file does.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const uint64_t data_bytes = bytes.size() - 8 - header_len;
  uint64_t at = 0;
  for (const Entry& e : entries) {
    if (e.begin != at)
      return invalid_argument("{}: tensor '{}' starts at data byte {}, {} expected (the data must be covered once, "
                              "without holes or overlap)", file, e.name, e.begin, at);
    at = e.end;
  }
  if (at != data_bytes)
    return invalid_argument("{}: the tensors hold {} data bytes, the file {}{}", file, at, data_bytes,
                            at > data_bytes ? ": truncated" : "");
  for (const Entry& e : entries) out.entries[e.name] = {e.dtype, e.dims, 8 + header_len + e.begin};
  return out;
}

Result<Tensor> read_safetensors_tensor(const ReadableBytes& bytes, const SafetensorsEntry& entry) {
  Tensor t = Tensor::host(entry.dtype, entry.dims);
  if (t.nbytes() > 0) RETURN_IF_ERROR(bytes.read(entry.offset, t.nbytes(), t.raw()));
  t.normalize_bools();
  return t;
}

Status write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                         const std::map<std::string, std::string>& metadata, OutputName name) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  // Wider elements first, then by name (the format's library's order): with
  // the header padded to 8 bytes, every tensor starts aligned to its element.
  std::vector<const std::pair<const std::string, Tensor>*> order;
  for (const auto& entry : tensors) order.push_back(&entry);
  std::stable_sort(order.begin(), order.end(),
                   [](auto* x, auto* y) { return dtype_size(x->second.dtype()) > dtype_size(y->second.dtype()); });
  uint64_t at = 0;
  for (const auto* entry : order) {
    const auto& [n, t] = *entry;
    const std::string dtype = safetensors_dtype_name(t.dtype());
    if (dtype.empty() || t.device() != DeviceKind::kCpu)
      return invalid_argument("{}: tensor '{}' ({}) cannot be written as safetensors", path, n, dtype_name(t.dtype()));
    header[n] = {{"dtype", dtype}, {"shape", t.dims()}, {"data_offsets", {at, at + t.nbytes()}}};
    at += t.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  ASSIGN_OR_RETURN(auto out, AtomicFileWriter::open(path, name));
  RETURN_IF_ERROR(out->write(len, 8));
  RETURN_IF_ERROR(out->write(text.data(), text.size()));
  for (const auto* entry : order)
    if (entry->second.nbytes() > 0) RETURN_IF_ERROR(out->write(entry->second.raw(), entry->second.nbytes()));
  return out->commit();
}

}  // namespace ort_train
