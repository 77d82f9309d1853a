#include "training/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "graph/onnx_io.h"
#include "graph/stable_hash.h"

namespace ort_train {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'O', 'R', 'T', 'C', 'K', 'P', 'T', '\0'};

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

uint64_t checkpoint_hash(const char* p, size_t n) { return fnv1a64(p, n); }

Result<std::unique_ptr<CheckpointDirLock>> CheckpointDirLock::acquire(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("cannot create {}: {}", dir, ec.message());
  std::string path = (fs::path(dir) / ".lock").string();
  // O_NOFOLLOW: a .lock that is a link would have us truncate and write what it points to.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0 && errno == ELOOP)
    return io_error("{} is a symbolic link: refused (the lock is a plain file ort_train makes; remove the link)", path);
  if (fd < 0) return io_error("cannot open {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error("{} is not a regular file: refused (the lock is a plain file ort_train makes)", path);
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char owner[32] = {};
    ssize_t n = ::pread(fd, owner, sizeof(owner) - 1, 0);
    ::close(fd);
    std::string pid = n > 0 ? std::string(owner, static_cast<size_t>(n)) : "unknown";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return io_error("checkpoint folder {} is in use by another ort_train (pid {}); give each run its own "
                       "--checkpoint-dir",
                       dir, pid);
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    ::close(fd);
    return io_error("cannot write {}: {}", path, std::strerror(errno));
  }
  // Holding the lock, no other ort_train writes here: a checkpoint's
  // temporary file (<name>.tmp.<pid>) is what a killed run left behind.
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("ckpt-", 0) == 0 && name.find(".ortc.tmp.") != std::string::npos) {
      std::error_code rm;
      fs::remove(e.path(), rm);
      if (!rm) spdlog::info("removed {}, left by a run that ended while writing it", e.path().string());
    }
  }
  return std::unique_ptr<CheckpointDirLock>(new CheckpointDirLock(fd));
}

CheckpointDirLock::~CheckpointDirLock() { ::close(fd_); }

std::string checkpoint_path(const std::string& dir, int64_t step) {
  return (fs::path(dir) / fmt::format("ckpt-{:08}.ortc", step)).string();
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  // By step number, not by name: the name's 8 digits grow to 9 past step 10^8.
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("ckpt-", 0) != 0 || e.path().extension() != ".ortc") continue;
    const std::string digits = name.substr(5, name.size() - 5 - 5);
    int64_t step = 0;
    auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (err != std::errc() || end != digits.data() + digits.size() || digits.empty()) continue;
    found.emplace_back(step, e.path().string());
  }
  std::sort(found.rbegin(), found.rend());
  std::vector<std::string> out;
  for (auto& [step, path] : found) out.push_back(std::move(path));
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
  put<uint64_t>(out, checkpoint_hash(out.data(), out.size()));
  return write_file_atomic(path, out);
}

Result<Checkpoint> read_checkpoint(const std::string& path) {
  ASSIGN_OR_RETURN(std::string in, read_file(path));
  return parse_checkpoint(in, path);
}

Result<Checkpoint> parse_checkpoint(const std::string& in, const std::string& path) {
  const size_t fixed = sizeof(kMagic) + 4 + 8;
  if (in.size() < fixed + 16 || std::memcmp(in.data(), kMagic, sizeof(kMagic)) != 0)
    return io_error("{}: not an ort_train checkpoint (or truncated)", path);
  uint32_t version = get<uint32_t>(in, sizeof(kMagic));
  if (version != Checkpoint::kVersion)
    return io_error("{}: checkpoint format version {} (this build reads {})", path, version, Checkpoint::kVersion);
  // Every length is compared with what is left of the file before it is
  // added to anything, so no sum can wrap.
  uint64_t header_len = get<uint64_t>(in, sizeof(kMagic) + 4);
  if (header_len > in.size() - fixed - 16) return io_error("{}: truncated checkpoint", path);
  uint64_t data_len = get<uint64_t>(in, fixed + header_len);
  size_t data_at = fixed + header_len + 8;
  if (data_len != in.size() - data_at - 8)
    return io_error("{}: truncated checkpoint ({} bytes, the header says {} bytes of tensor data)", path, in.size(),
                    data_len);
  if (checkpoint_hash(in.data(), in.size() - 8) != get<uint64_t>(in, in.size() - 8))
    return io_error("{}: corrupt checkpoint (hash mismatch)", path);
  Checkpoint c;
  try {
    nlohmann::json h = nlohmann::json::parse(in.substr(fixed, header_len));
    c.step = h.at("step").get<int64_t>();
    c.micro_batch = h.at("micro_batch").get<int64_t>();
    c.seed = h.at("seed").get<uint64_t>();
    if (c.step < 0 || c.micro_batch < 0) return io_error("{}: negative step or data position", path);
    c.fingerprint = h.at("fingerprint").get<std::map<std::string, std::string>>();
    std::set<std::string> seen;
    for (const auto& e : h.at("tensors")) {
      std::string name = e.at("name").get<std::string>();
      // A name twice would restore one copy and leave the other's parameter
      // as it was: no writer makes such a table.
      if (!seen.insert(name).second) return io_error("{}: tensor '{}' appears twice in the checkpoint", path, name);
      Dims dims = e.at("dims").get<Dims>();
      int dtype = e.at("dtype").get<int>();
      uint64_t off = e.at("offset").get<uint64_t>(), bytes = e.at("bytes").get<uint64_t>();
      // The table is checked against the data before anything is allocated.
      auto expected = checked_nbytes(static_cast<DType>(dtype), dims);
      if (!expected || *expected != bytes || off > data_len ||
          bytes > data_len - off)
        return io_error("{}: inconsistent tensor table at '{}'", path, name);
      Tensor t = Tensor::host(static_cast<DType>(dtype), dims);
      std::memcpy(t.raw(), in.data() + data_at + off, bytes);
      c.tensors.emplace_back(std::move(name), t);
    }
  } catch (const nlohmann::json::exception& e) {
    return io_error("{}: unreadable checkpoint header: {}", path, e.what());
  }
  return c;
}

}  // namespace ort_train
