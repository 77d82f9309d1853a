#include "graph/mapped_external_data.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

namespace ort_train {
namespace {

// What identifies the file's contents as seen at load: a rename over the
// path changes the inode, an in-place write the modification and change
// times (st_ctime cannot be set back by the writer), a truncation the size.
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{}, ctime{};
  bool operator==(const FileIdentity& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec && ctime.tv_nsec == o.ctime.tv_nsec;
  }
};

FileIdentity identity_of(const struct stat& st) {
  return {st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
}

struct Mapping {
  std::string name, path;
  FileIdentity file;
  uint64_t offset = 0, length = 0;
  void* base = nullptr;  // page-aligned start of the mapping
  size_t mapped = 0;     // its length
};

// Keyed by the tensor's data pointer (Storage::data()); an entry leaves when
// its bytes are read in or its storage is freed.
struct Registry {
  std::mutex mu;
  std::unordered_map<const void*, Mapping> mappings;
  uint64_t bytes = 0;
};

constexpr size_t kMaxMappings = 16384;

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: storages may be freed during static destruction
  return *r;
}

// m's file, reopened by path and checked to be the one mapped at load.
Status reopen(const Mapping& m, RegularFile& f) {
  RETURN_IF_ERROR(open_regular(m.path, f).with_context(fmt::format("initializer '{}': its external data", m.name)));
  if (!(identity_of(f.info) == m.file))
    return io_error("initializer '{}': its external data {} was replaced or changed after the model was loaded; "
                    "nothing was read from it (run again once it is left alone)",
                    m.name, m.path);
  return Status::Ok();
}

// m's bytes into `dst` from the reopened file.
Status read_bytes(const Mapping& m, const RegularFile& f, char* dst) {
  return read_range_into(f, m.path, m.offset, m.length, dst).with_context(fmt::format("initializer '{}'", m.name));
}

// Reads m's bytes into the anonymous memory that now replaces its mapping.
Status read_mapping(const Mapping& m, char* data) {
  RegularFile f;
  RETURN_IF_ERROR(reopen(m, f));
  // MAP_FIXED over our own mapping: the address (and so every Tensor sharing
  // the storage) stays, the file's pages go.
  void* fresh = ::mmap(m.base, m.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (fresh == MAP_FAILED)
    return io_error("initializer '{}': cannot allocate {} bytes to read it into: {}", m.name, m.mapped,
                    std::strerror(errno));
  return read_bytes(m, f, data);
}

}  // namespace

Result<std::shared_ptr<Storage>> map_external_range(const RegularFile& f, const std::string& path, uint64_t offset,
                                                     uint64_t length, const std::string& name) {
  if (length == 0) return io_error("initializer '{}': nothing of {} to map", name, path);
  {
    // Each mapping is one of the process's memory areas (Linux allows 65530
    // by default, and malloc needs some): a file claiming a hundred thousand
    // weights (sparse, it costs its author nothing) would leave none.
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.mappings.size() >= kMaxMappings)
      return io_error("initializer '{}': {} weights are mapped already", name, kMaxMappings);
  }
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  const size_t mapped = static_cast<size_t>(offset - start + length);
  void* base = ::mmap(nullptr, mapped, PROT_READ, MAP_PRIVATE, f.fd, static_cast<off_t>(start));
  if (base == MAP_FAILED) return io_error("initializer '{}': cannot map {}: {}", name, path, std::strerror(errno));
  char* data = static_cast<char*>(base) + (offset - start);
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.mappings[data] = Mapping{name, path, identity_of(f.info), offset, length, base, mapped};
    r.bytes += length;
  }
  auto release = [base, mapped](void* p) {
    Registry& r = registry();
    {
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.mappings.find(p);
      if (it != r.mappings.end()) {
        r.bytes -= it->second.length;
        r.mappings.erase(it);
      }
    }
    ::munmap(base, mapped);
  };
  return std::make_shared<Storage>(data, static_cast<size_t>(length), DeviceKind::kCpu, release);
}

bool is_mapped_external(const Tensor& t) {
  if (!t.storage() || t.device() != DeviceKind::kCpu) return false;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.mappings.count(t.raw()) > 0;
}

Result<Tensor> readable(const Tensor& t) {
  if (!t.storage() || t.device() != DeviceKind::kCpu) return t;
  Mapping m;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.mappings.find(t.raw());
    if (it == r.mappings.end()) return t;
    m = it->second;
  }
  RegularFile f;
  RETURN_IF_ERROR(reopen(m, f));
  Tensor copy = Tensor::host(t.dtype(), t.dims());
  RETURN_IF_ERROR(read_bytes(m, f, static_cast<char*>(copy.raw())));
  return copy;
}

Status read_in(const Tensor& t) {
  if (!t.storage() || t.device() != DeviceKind::kCpu) return Status::Ok();
  Registry& r = registry();
  // Held while reading: two threads reading one tensor in must not both
  // replace its memory, and the reads of a graph's weights are sequential anyway.
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.mappings.find(t.raw());
  if (it == r.mappings.end()) return Status::Ok();
  Status read = read_mapping(it->second, static_cast<char*>(t.raw()));
  // Whatever the outcome, the file's pages are gone or about to be refused:
  // an error leaves the tensor as it is, and the run stops on the error.
  if (read.ok()) {
    r.bytes -= it->second.length;
    r.mappings.erase(it);
  }
  return read;
}

Status read_in_initializers(const Graph& g) {
  for (const auto& [name, t] : g.initializers) RETURN_IF_ERROR(read_in(t));
  return Status::Ok();
}

uint64_t mapped_external_bytes() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.bytes;
}

}  // namespace ort_train
