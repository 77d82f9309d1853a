#include "training/npz.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>

#include "graph/onnx_io.h"
#include "runtime/device.h"

namespace ort_train {
namespace {

// A little-endian field at `at`; 0 when it would run past the end (every
// caller then fails a range check, so a short record reads nothing out of bounds).
template <typename T>
T le(const std::string& s, size_t at) {
  T v{};
  if (at <= s.size() && sizeof(T) <= s.size() - at) std::memcpy(&v, s.data() + at, sizeof(T));
  return v;
}

Result<DType> npy_dtype(const std::string& descr, const std::string& where) {
  static const std::map<std::string, DType> kTypes{{"<f4", DType::kFloat}, {"<f8", DType::kDouble},
                                                   {"<i8", DType::kInt64}, {"<i4", DType::kInt32},
                                                   {"|i1", DType::kInt8},  {"|u1", DType::kUInt8},
                                                   {"|b1", DType::kBool}};
  auto it = kTypes.find(descr);
  if (it == kTypes.end()) return unsupported("{}: array dtype '{}' is not supported", where, descr);
  return it->second;
}

const char* npy_descr(DType t) {
  switch (t) {
    case DType::kFloat: return "<f4";
    case DType::kDouble: return "<f8";
    case DType::kInt64: return "<i8";
    case DType::kInt32: return "<i4";
    case DType::kInt8: return "|i1";
    case DType::kUInt8: return "|u1";
    case DType::kBool: return "|b1";
    default: return nullptr;
  }
}

// The value of 'key' in the header dict, as text.
std::string header_field(const std::string& h, const std::string& key) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t colon = h.find(':', k);
  if (colon == std::string::npos) return "";
  size_t start = h.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) return "";
  if (h[start] == '(') return h.substr(start, h.find(')', start) - start + 1);
  if (h[start] == '\'') return h.substr(start + 1, h.find('\'', start + 1) - start - 1);
  return h.substr(start, h.find_first_of(",}", start) - start);
}

// The .npy array whose `size` bytes start at `at` in `bytes`: its dtype and
// dims from the header, and where its elements start, checked to be there.
Result<NpyArrayLocation> locate_npy(const std::shared_ptr<const ReadableBytes>& bytes, uint64_t at, uint64_t size,
                                    const std::string& where) {
  if (size < 10) return io_error("{}: not a .npy array", where);
  ASSIGN_OR_RETURN(std::string lead, bytes->read_string(at, static_cast<size_t>(std::min<uint64_t>(size, 12))));
  if (lead.compare(0, 6, "\x93NUMPY") != 0) return io_error("{}: not a .npy array", where);
  uint8_t major = static_cast<uint8_t>(lead[6]);
  if (major != 1 && size < 12) return io_error("{}: truncated .npy header", where);
  const uint64_t len_bytes = major == 1 ? 2 : 4;
  const uint64_t hlen = major == 1 ? le<uint16_t>(lead, 8) : le<uint32_t>(lead, 8);
  // numpy pads headers to 64 bytes; 1 MiB is far past any real one.
  if (hlen > (uint64_t{1} << 20) || 8 + len_bytes + hlen > size) return io_error("{}: truncated .npy header", where);
  ASSIGN_OR_RETURN(std::string h, bytes->read_string(at + 8 + len_bytes, static_cast<size_t>(hlen)));
  if (header_field(h, "fortran_order").find("True") != std::string::npos)
    return unsupported("{}: Fortran-order arrays are not supported", where);
  NpyArrayLocation loc;
  ASSIGN_OR_RETURN(loc.dtype, npy_dtype(header_field(h, "descr"), where));
  std::string shape = header_field(h, "shape");
  for (size_t i = 1; i < shape.size();) {
    size_t j = shape.find_first_of(",)", i);
    if (j == std::string::npos) return io_error("{}: bad shape {} in the .npy header", where, shape);
    std::string num = shape.substr(i, j - i);
    num.erase(0, num.find_first_not_of(' '));
    num.erase(num.find_last_not_of(' ') + 1);
    if (!num.empty()) {
      int64_t d = -1;
      auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), d);
      if (ec != std::errc() || end != num.data() + num.size() || d < 0)
        return io_error("{}: bad dimension '{}' in the .npy header's shape {}", where, num, shape);
      loc.dims.push_back(d);
    }
    i = j + 1;
  }
  // The bytes the header's shape asks for, checked against the bytes present
  // before anything is allocated or read: a header may claim any shape.
  const uint64_t data_rel = 8 + len_bytes + hlen;
  auto need = checked_nbytes(loc.dtype, loc.dims);
  if (!need) return io_error("{}: the .npy header's shape {} overflows 64 bits", where, shape);
  if (*need > size - data_rel)
    return io_error("{}: the .npy header's shape {} of {} needs {} bytes of data, the file holds {}", where, shape,
                    dtype_name(loc.dtype), *need, size - data_rel);
  loc.bytes = bytes;
  loc.data_at = at + data_rel;
  return loc;
}

// Deflate cannot expand more than about 1032:1; a member claiming more is
// corrupt or a bomb, refused before anything is inflated.
Status check_expansion(const NpzMember& m, const std::string& where) {
  if (m.size / 1032 > m.compressed + 1)
    return io_error("{}: claims {} bytes from {} compressed ones, more than deflate can expand", where, m.size,
                    m.compressed);
  return Status::Ok();
}

// Inflates a deflated member a chunk at a time into `sink`, checking that it
// ends where the directory says.
Status inflate_member(const ReadableBytes& zip, const NpzMember& m, const std::string& where,
                      const std::function<Status(const char*, size_t)>& sink) {
  RETURN_IF_ERROR(check_expansion(m, where));
  constexpr size_t kChunk = size_t{1} << 20;
  std::string in(kChunk, '\0'), out(kChunk, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return io_error("{}: zlib init failed", where);
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&z};
  uint64_t read = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0) {
      if (read == m.compressed) return io_error("{}: corrupt compressed member (it ends early)", where);
      size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, m.compressed - read));
      RETURN_IF_ERROR(zip.read(m.offset + read, n, in.data()));
      read += n;
      z.next_in = reinterpret_cast<Bytef*>(in.data());
      z.avail_in = static_cast<uInt>(n);
    }
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) return io_error("{}: corrupt compressed member", where);
    size_t produced = out.size() - z.avail_out;
    if (z.total_out > m.size) return io_error("{}: inflates past the {} bytes its zip entry says", where, m.size);
    if (produced > 0) RETURN_IF_ERROR(sink(out.data(), produced));
  }
  if (z.total_out != m.size)
    return io_error("{}: inflates to {} bytes, its zip entry says {}", where, static_cast<uint64_t>(z.total_out), m.size);
  return Status::Ok();
}

// The central directory's place and entry count, from the end records
// (ZIP64's when the classic record's fields are saturated).
struct Directory {
  uint64_t at = 0, bytes = 0, entries = 0;
};

Result<Directory> find_directory(const ReadableBytes& zip) {
  const std::string& path = zip.name();
  // The end record is the last "PK\5\6" in the last 64 KiB + 22 bytes (its comment is at most 64 KiB).
  const uint64_t tail_bytes = std::min<uint64_t>(zip.size(), 65535 + 22);
  ASSIGN_OR_RETURN(std::string tail, zip.read_string(zip.size() - tail_bytes, static_cast<size_t>(tail_bytes)));
  size_t eocd = tail.rfind(std::string("PK\x05\x06", 4));
  if (eocd == std::string::npos || eocd + 22 > tail.size()) return io_error("{}: not a zip/npz archive", path);
  Directory d{le<uint32_t>(tail, eocd + 16), le<uint32_t>(tail, eocd + 12), le<uint16_t>(tail, eocd + 10)};
  if (d.at == 0xffffffffu || d.bytes == 0xffffffffu || d.entries == 0xffff) {
    // ZIP64: a locator just before the end record points at the ZIP64 end record.
    const uint64_t eocd_at = zip.size() - tail_bytes + eocd;
    if (eocd_at < 20) return io_error("{}: corrupt ZIP64 end record", path);
    ASSIGN_OR_RETURN(std::string locator, zip.read_string(eocd_at - 20, 20));
    if (le<uint32_t>(locator, 0) != 0x07064b50) return io_error("{}: corrupt ZIP64 end record", path);
    uint64_t rec = le<uint64_t>(locator, 8);
    if (rec > zip.size() || zip.size() - rec < 56) return io_error("{}: corrupt ZIP64 end record", path);
    ASSIGN_OR_RETURN(std::string z64, zip.read_string(rec, 56));
    if (le<uint32_t>(z64, 0) != 0x06064b50) return io_error("{}: corrupt ZIP64 end record", path);
    d = Directory{le<uint64_t>(z64, 48), le<uint64_t>(z64, 40), le<uint64_t>(z64, 32)};
  }
  // An NPZ's directory is a few hundred bytes per array; 64 MiB is far past any real one.
  if (d.at > zip.size() || d.bytes > zip.size() - d.at || d.bytes > (uint64_t{64} << 20))
    return io_error("{}: corrupt zip directory", path);
  return d;
}

}  // namespace

Result<std::vector<NpzMember>> list_npz_members(const ReadableBytes& zip) {
  const std::string& path = zip.name();
  ASSIGN_OR_RETURN(Directory dir, find_directory(zip));
  ASSIGN_OR_RETURN(std::string cd, zip.read_string(dir.at, static_cast<size_t>(dir.bytes)));
  std::vector<NpzMember> members;
  size_t at = 0;
  for (uint64_t e = 0; e < dir.entries; ++e) {
    if (at + 46 > cd.size() || le<uint32_t>(cd, at) != 0x02014b50) return io_error("{}: corrupt zip directory", path);
    NpzMember m;
    m.method = le<uint16_t>(cd, at + 10);
    m.compressed = le<uint32_t>(cd, at + 20);
    m.size = le<uint32_t>(cd, at + 24);
    uint16_t nlen = le<uint16_t>(cd, at + 28), xlen = le<uint16_t>(cd, at + 30), clen = le<uint16_t>(cd, at + 32);
    uint64_t local = le<uint32_t>(cd, at + 42);
    if (uint64_t{nlen} + xlen + clen > cd.size() - at - 46) return io_error("{}: corrupt zip directory", path);
    std::string name = cd.substr(at + 46, nlen);
    // ZIP64 sizes/offset (arrays over 4 GiB) live in the extra field.
    if (m.compressed == 0xffffffffu || m.size == 0xffffffffu || local == 0xffffffffu) {
      size_t x = at + 46 + nlen, end = x + xlen;
      while (x + 4 <= end) {
        uint16_t id = le<uint16_t>(cd, x), sz = le<uint16_t>(cd, x + 2);
        if (id == 1) {
          size_t f = x + 4, field_end = std::min(end, x + 4 + sz);
          auto next = [&]() {
            uint64_t v = f + 8 <= field_end ? le<uint64_t>(cd, f) : 0;
            f += 8;
            return v;
          };
          if (m.size == 0xffffffffu) m.size = next();
          if (m.compressed == 0xffffffffu) m.compressed = next();
          if (local == 0xffffffffu) local = next();
        }
        x += 4 + sz;
      }
    }
    at += 46 + size_t{nlen} + xlen + clen;
    if (local > zip.size() || zip.size() - local < 30) return io_error("{}: corrupt zip entry {}", path, name);
    ASSIGN_OR_RETURN(std::string header, zip.read_string(local, 30));
    m.offset = local + 30 + le<uint16_t>(header, 26) + le<uint16_t>(header, 28);
    if (m.offset > zip.size() || m.compressed > zip.size() - m.offset)
      return io_error("{}: truncated member {}", path, name);
    if (m.method != 0 && m.method != 8) return unsupported("{}: member {} uses zip method {}", path, name, m.method);
    if (m.method == 0 && m.compressed != m.size)
      return io_error("{}: stored member {} has {} bytes, its entry says {}", path, name, m.compressed, m.size);
    m.name = name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0 ? name.substr(0, name.size() - 4) : name;
    // Two members of one name: numpy.load keeps the last, a reader of the
    // first would train on other data than the user checked.
    for (const NpzMember& earlier : members)
      if (earlier.name == m.name) return io_error("{}: the array '{}' is in the file twice", path, m.name);
    members.push_back(std::move(m));
  }
  return members;
}

Result<std::vector<NpyArrayLocation>> locate_npz_arrays(const std::shared_ptr<const ReadableBytes>& zip,
                                                        std::shared_ptr<SpoolFile>& spool) {
  ASSIGN_OR_RETURN(std::vector<NpzMember> members, list_npz_members(*zip));
  std::vector<NpyArrayLocation> out;
  for (const NpzMember& m : members) {
    std::string where = zip->name() + ":" + m.name + ".npy";
    if (m.method == 0) {
      ASSIGN_OR_RETURN(NpyArrayLocation loc, locate_npy(zip, m.offset, m.size, where));
      loc.name = m.name;
      out.push_back(std::move(loc));
      continue;
    }
    RETURN_IF_ERROR(check_expansion(m, where));
    if (!spool) { ASSIGN_OR_RETURN(spool, SpoolFile::create("deflated NPZ members")); }
    if (m.size > spool->free_bytes())
      return io_error("{}: inflates to {} bytes, more than the {} bytes free where it would be inflated ({}; set "
                      "TMPDIR, or write the shards with np.savez, uncompressed)", where, m.size, spool->free_bytes(),
                      spool->name());
    const uint64_t start = spool->size();
    RETURN_IF_ERROR(inflate_member(*zip, m, where, [&](const char* p, size_t n) { return spool->append(p, n); }));
    ASSIGN_OR_RETURN(NpyArrayLocation loc, locate_npy(spool, start, m.size, where));
    loc.name = m.name;
    out.push_back(std::move(loc));
  }
  return out;
}

namespace {

// Every array read whole into memory, deflated members inflated in memory.
Result<std::map<std::string, Tensor>> load_npz(const std::shared_ptr<const ReadableBytes>& zip) {
  const std::string& path = zip->name();
  ASSIGN_OR_RETURN(std::vector<NpzMember> members, list_npz_members(*zip));
  // What the arrays will take once inflated counts against the host's memory
  // budget (--max-memory, the physical memory, RLIMIT_AS, the cgroup) before
  // any is read: a 1 MB deflate bomb reached 2.1 GB.
  ASSIGN_OR_RETURN(std::shared_ptr<Device> host, get_device(DeviceKind::kCpu, DeviceSettings{}));
  const uint64_t budget = host->memory_budget();
  uint64_t total = 0;
  for (const NpzMember& m : members) {
    total = m.size > UINT64_MAX - total ? UINT64_MAX : total + m.size;
    if (budget > 0 && total > budget)
      return io_error("{}: its arrays inflate to more than the memory budget of {} bytes{} (member {} alone is {} "
                      "bytes)", path, budget, memory_limit() == budget ? " set by --max-memory" : "", m.name, m.size);
  }
  std::map<std::string, Tensor> out;
  for (const NpzMember& m : members) {
    std::string where = path + ":" + m.name + ".npy";
    std::shared_ptr<const ReadableBytes> bytes = zip;
    uint64_t at = m.offset;
    if (m.method == 8) {
      RETURN_IF_ERROR(check_expansion(m, where));
      std::string inflated;
      inflated.reserve(static_cast<size_t>(m.size));
      RETURN_IF_ERROR(inflate_member(*zip, m, where, [&](const char* p, size_t n) {
        inflated.append(p, n);
        return Status::Ok();
      }));
      bytes = readable_string(std::move(inflated), where);
      at = 0;
    }
    ASSIGN_OR_RETURN(NpyArrayLocation loc, locate_npy(bytes, at, m.size, where));
    Tensor t = Tensor::host(loc.dtype, loc.dims);
    RETURN_IF_ERROR(loc.bytes->read(loc.data_at, t.nbytes(), t.raw()));
    t.normalize_bools();
    out[m.name] = t;
  }
  return out;
}

}  // namespace

Result<std::map<std::string, Tensor>> read_npz(const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<const ReadableBytes> zip, open_readable_file(path));
  return load_npz(zip);
}

Result<std::map<std::string, Tensor>> parse_npz(const std::string& bytes, const std::string& path) {
  return load_npz(readable_string(bytes, path));
}

Status write_npz(const std::map<std::string, Tensor>& arrays, const std::string& path) {
  std::string zip, dir;
  auto put16 = [](std::string& s, uint16_t v) { s.append(reinterpret_cast<const char*>(&v), 2); };
  auto put32 = [](std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); };
  for (const auto& [name, t] : arrays) {
    const char* descr = npy_descr(t.dtype());
    if (!descr) return unsupported("npz: dtype {} of '{}' cannot be written", dtype_name(t.dtype()), name);
    std::string shape = "(";
    for (int64_t d : t.dims()) shape += std::to_string(d) + ",";
    if (t.rank() > 1) shape.pop_back();
    shape += ")";
    std::string h = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + h.size() + 1) % 64 != 0) h += ' ';
    h += '\n';
    std::string npy = std::string("\x93NUMPY\x01\x00", 8);
    put16(npy, static_cast<uint16_t>(h.size()));
    npy += h;
    npy.append(static_cast<const char*>(t.raw()), t.nbytes());
    if (npy.size() >= 0xffffffffu) return unsupported("npz: array '{}' is too large for this writer", name);
    std::string member = name + ".npy";
    uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(npy.data()), static_cast<uInt>(npy.size())));
    uint32_t offset = static_cast<uint32_t>(zip.size());
    put32(zip, 0x04034b50); put16(zip, 20); put16(zip, 0); put16(zip, 0); put16(zip, 0); put16(zip, 0);
    put32(zip, crc); put32(zip, static_cast<uint32_t>(npy.size())); put32(zip, static_cast<uint32_t>(npy.size()));
    put16(zip, static_cast<uint16_t>(member.size())); put16(zip, 0);
    zip += member + npy;
    put32(dir, 0x02014b50); put16(dir, 20); put16(dir, 20); put16(dir, 0); put16(dir, 0); put16(dir, 0); put16(dir, 0);
    put32(dir, crc); put32(dir, static_cast<uint32_t>(npy.size())); put32(dir, static_cast<uint32_t>(npy.size()));
    put16(dir, static_cast<uint16_t>(member.size())); put16(dir, 0); put16(dir, 0); put16(dir, 0); put16(dir, 0);
    put32(dir, 0); put32(dir, offset);
    dir += member;
  }
  uint32_t cd = static_cast<uint32_t>(zip.size());
  zip += dir;
  put32(zip, 0x06054b50); put16(zip, 0); put16(zip, 0);
  put16(zip, static_cast<uint16_t>(arrays.size())); put16(zip, static_cast<uint16_t>(arrays.size()));
  put32(zip, static_cast<uint32_t>(dir.size())); put32(zip, cd); put16(zip, 0);
  return write_file_atomic(path, zip);
}

}  // namespace ort_train
