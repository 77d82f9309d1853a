#include "training/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <future>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "graph/atomic_file.h"
#include "graph/onnx_io.h"
#include "graph/stable_hash.h"

namespace ort_train {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'O', 'R', 'T', 'C', 'K', 'P', 'T', '\0'};
// The header is a table of a few hundred bytes per tensor: 64 MiB is some
// 300 000 tensors. A larger one is no checkpoint ort_train wrote.
constexpr uint64_t kMaxHeaderBytes = uint64_t{64} << 20;

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
T get(const std::string& in, size_t at) {  // callers have read at + sizeof(T) bytes into `in`
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
  std::string lead(kMagic, sizeof(kMagic));
  put<uint32_t>(lead, Checkpoint::kVersion);
  put<uint64_t>(lead, h.size());
  lead += h;
  put<uint64_t>(lead, offset);
  // Tensor by tensor into the file: no copy of the state is made, whatever
  // its size. The hash (FNV-1a, about 1.4 s a GiB) runs over the same bytes on
  // another thread while they are written, so a write takes the longer of
  // the two, not their sum.
  // Its name is ort_train's: a link or FIFO planted there is replaced, never written through.
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> f, AtomicFileWriter::open(path, OutputName::kChosen));
  std::vector<std::pair<const void*, size_t>> pieces{{lead.data(), lead.size()}};
  for (const auto& [name, t] : c.tensors) pieces.emplace_back(t.raw(), t.nbytes());
  std::future<uint64_t> hashed = std::async(std::launch::async, [&pieces] {
    uint64_t h = kFnv1a64Start;
    for (const auto& [p, n] : pieces) h = fnv1a64_update(h, p, n);
    return h;
  });
  Status written = Status::Ok();
  for (const auto& [p, n] : pieces)
    if (written = f->write(p, n); !written.ok()) break;
  const uint64_t hash = hashed.get();
  RETURN_IF_ERROR(written);
  RETURN_IF_ERROR(f->write(&hash, sizeof hash));
  return f->commit();
}

Status CheckpointReader::read(size_t i, void* dst, uint64_t from, uint64_t n) const {
  if (i >= entries_.size() || from > entries_[i].bytes || n > entries_[i].bytes - from)
    return invalid_argument("checkpoint: no bytes [{}, +{}) in tensor {}", from, n, i);
  if (memory_) {
    std::memcpy(dst, static_cast<const char*>(memory_->tensors[i].second.raw()) + from, static_cast<size_t>(n));
    return Status::Ok();
  }
  return file_->read(at_[i] + from, static_cast<size_t>(n), dst);
}

Result<Tensor> CheckpointReader::read_tensor(size_t i) const {
  Tensor t = Tensor::host(entries_[i].dtype, entries_[i].dims);
  RETURN_IF_ERROR(read(i, t.raw()));
  t.normalize_bools();
  return t;
}

CheckpointReader CheckpointReader::of(const Checkpoint& c) {
  CheckpointReader r;
  r.step = c.step;
  r.micro_batch = c.micro_batch;
  r.seed = c.seed;
  r.fingerprint = c.fingerprint;
  r.memory_ = &c;
  for (const auto& [name, t] : c.tensors) r.entries_.push_back(Entry{name, t.dtype(), t.dims(), t.nbytes()});
  return r;
}

Result<CheckpointReader> CheckpointReader::open(std::shared_ptr<const ReadableBytes> file) {
  const ReadableBytes& in = *file;
  const std::string& path = in.name();
  const uint64_t size = in.size();
  const size_t fixed = sizeof(kMagic) + 4 + 8;
  if (size < fixed + 16) return io_error("{}: not an ort_train checkpoint (or truncated)", path);
  ASSIGN_OR_RETURN(std::string lead, in.read_string(0, fixed));
  if (std::memcmp(lead.data(), kMagic, sizeof(kMagic)) != 0)
    return io_error("{}: not an ort_train checkpoint (or truncated)", path);
  uint32_t version = get<uint32_t>(lead, sizeof(kMagic));
  if (version != Checkpoint::kVersion)
    return io_error("{}: checkpoint format version {} (this build reads {})", path, version, Checkpoint::kVersion);
  // Every length is compared with what is left of the file before it is
  // added to anything, so no sum can wrap.
  uint64_t header_len = get<uint64_t>(lead, sizeof(kMagic) + 4);
  if (header_len > size - fixed - 16) return io_error("{}: truncated checkpoint", path);
  if (header_len > kMaxHeaderBytes)
    return io_error("{}: a checkpoint header of {} bytes (at most {} are read)", path, header_len, kMaxHeaderBytes);
  uint64_t data_len = 0;
  RETURN_IF_ERROR(in.read(fixed + header_len, 8, &data_len));
  const uint64_t data_at = fixed + header_len + 8;
  if (data_len != size - data_at - 8)
    return io_error("{}: truncated checkpoint ({} bytes, the header says {} bytes of tensor data)", path, size,
                    data_len);
  // The hash over the whole file first, read a piece at a time: a damaged
  // file is refused before anything is restored from it.
  {
    constexpr size_t kPiece = size_t{4} << 20;
    std::string piece(kPiece, '\0');
    uint64_t hash = kFnv1a64Start, stored = 0;
    for (uint64_t at = 0; at < size - 8; at += kPiece) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(kPiece, size - 8 - at));
      RETURN_IF_ERROR(in.read(at, n, piece.data()));
      hash = fnv1a64_update(hash, piece.data(), n);
    }
    RETURN_IF_ERROR(in.read(size - 8, 8, &stored));
    if (hash != stored) return io_error("{}: corrupt checkpoint (hash mismatch)", path);
  }
  ASSIGN_OR_RETURN(std::string header_text, in.read_string(fixed, static_cast<size_t>(header_len)));
  CheckpointReader r;
  r.file_ = std::move(file);
  try {
    // Only the keys a checkpoint has are kept while parsing: an array a forged
    // header carries beside them is parsed and dropped, never held.
    static const std::set<std::string> kKnown = {"step", "micro_batch", "seed", "fingerprint", "tensors"};
    nlohmann::json h = nlohmann::json::parse(
        header_text, [](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
          return !(depth == 1 && event == nlohmann::json::parse_event_t::key && !kKnown.count(parsed.get<std::string>()));
        });
    r.step = h.at("step").get<int64_t>();
    r.micro_batch = h.at("micro_batch").get<int64_t>();
    r.seed = h.at("seed").get<uint64_t>();
    if (r.step < 0 || r.micro_batch < 0) return io_error("{}: negative step or data position", path);
    r.fingerprint = h.at("fingerprint").get<std::map<std::string, std::string>>();
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
      if (!expected || *expected != bytes || off > data_len || bytes > data_len - off)
        return io_error("{}: inconsistent tensor table at '{}'", path, name);
      r.entries_.push_back(Entry{std::move(name), static_cast<DType>(dtype), std::move(dims), bytes});
      r.at_.push_back(data_at + off);
    }
  } catch (const nlohmann::json::exception& e) {
    return io_error("{}: unreadable checkpoint header: {}", path, e.what());
  }
  return r;
}

Result<CheckpointReader> open_checkpoint(const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<const ReadableBytes> file, open_readable_file(path));
  return CheckpointReader::open(std::move(file));
}

Result<Checkpoint> read_checkpoint(const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<const ReadableBytes> file, open_readable_file(path));
  return read_checkpoint(file);
}

Result<Checkpoint> read_checkpoint(const std::shared_ptr<const ReadableBytes>& file) {
  ASSIGN_OR_RETURN(CheckpointReader r, CheckpointReader::open(file));
  Checkpoint c;
  c.step = r.step;
  c.micro_batch = r.micro_batch;
  c.seed = r.seed;
  c.fingerprint = r.fingerprint;
  for (size_t i = 0; i < r.entries().size(); ++i) {
    ASSIGN_OR_RETURN(Tensor t, r.read_tensor(i));
    c.tensors.emplace_back(r.entries()[i].name, std::move(t));
  }
  return c;
}

Result<Checkpoint> parse_checkpoint(const std::string& bytes, const std::string& path) {
  return read_checkpoint(readable_string(bytes, path));
}

}  // namespace ort_train
