#include "training/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "graph/onnx_io.h"

namespace ort_train {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'O', 'R', 'T', 'C', 'K', 'P', 'T', '\0'};

// FNV-1a 64 over the bytes: detects truncation and corruption (not tampering).
uint64_t fnv1a(const char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 1099511628211ull;
  }
  return h;
}

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
T get(const std::string& in, size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  return v;
}

}  // namespace

std::string checkpoint_path(const std::string& dir, int64_t step) {
  return (fs::path(dir) / fmt::format("ckpt-{:08}.ortc", step)).string();
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("ckpt-", 0) == 0 && e.path().extension() == ".ortc") out.push_back(e.path().string());
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

Status write_checkpoint(const Checkpoint& c, const std::string& path) {
  nlohmann::json header{{"step", c.step}, {"micro_batch", c.micro_batch}, {"seed", c.seed},
                        {"fingerprint", c.fingerprint}};
  nlohmann::json table = nlohmann::json::array();
  uint64_t offset = 0;
  for (const auto& [name, t] : c.tensors) {
    table.push_back({{"name", name}, {"dtype", static_cast<int>(t.dtype())}, {"dims", t.dims()},
                     {"offset", offset}, {"bytes", t.nbytes()}});
    offset += t.nbytes();
  }
  header["tensors"] = table;
  std::string h = header.dump();
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, Checkpoint::kVersion);
  put<uint64_t>(out, h.size());
  out += h;
  put<uint64_t>(out, offset);
  for (const auto& [name, t] : c.tensors) out.append(static_cast<const char*>(t.raw()), t.nbytes());
  put<uint64_t>(out, fnv1a(out.data(), out.size()));
  return write_file_atomic(path, out);
}

Result<Checkpoint> read_checkpoint(const std::string& path) {
  ASSIGN_OR_RETURN(std::string in, read_file(path));
  size_t fixed = sizeof(kMagic) + 4 + 8;
  if (in.size() < fixed + 16 || std::memcmp(in.data(), kMagic, sizeof(kMagic)) != 0)
    return io_error("{}: not an ort_train checkpoint (or truncated)", path);
  uint32_t version = get<uint32_t>(in, sizeof(kMagic));
  if (version != Checkpoint::kVersion)
    return io_error("{}: checkpoint format version {} (this build reads {})", path, version, Checkpoint::kVersion);
  uint64_t header_len = get<uint64_t>(in, sizeof(kMagic) + 4);
  if (fixed + header_len + 8 > in.size()) return io_error("{}: truncated checkpoint", path);
  uint64_t data_len = get<uint64_t>(in, fixed + header_len);
  size_t data_at = fixed + header_len + 8;
  if (data_at + data_len + 8 != in.size())
    return io_error("{}: truncated checkpoint ({} bytes, expected {})", path, in.size(), data_at + data_len + 8);
  if (fnv1a(in.data(), in.size() - 8) != get<uint64_t>(in, in.size() - 8))
    return io_error("{}: corrupt checkpoint (hash mismatch)", path);
  Checkpoint c;
  try {
    nlohmann::json h = nlohmann::json::parse(in.substr(fixed, header_len));
    c.step = h["step"];
    c.micro_batch = h["micro_batch"];
    c.seed = h["seed"];
    c.fingerprint = h["fingerprint"].get<std::map<std::string, std::string>>();
    for (const auto& e : h["tensors"]) {
      Dims dims = e["dims"].get<Dims>();
      Tensor t = Tensor::host(static_cast<DType>(e["dtype"].get<int>()), dims);
      uint64_t off = e["offset"], bytes = e["bytes"];
      if (bytes != t.nbytes() || off + bytes > data_len) return io_error("{}: inconsistent tensor table", path);
      std::memcpy(t.raw(), in.data() + data_at + off, bytes);
      c.tensors.emplace_back(e["name"].get<std::string>(), t);
    }
  } catch (const nlohmann::json::exception& e) {
    return io_error("{}: unreadable checkpoint header: {}", path, e.what());
  }
  return c;
}

}  // namespace ort_train
