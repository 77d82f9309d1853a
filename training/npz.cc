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
// caller then fails a range check, so a short file reads nothing out of bounds).
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

Result<Tensor> parse_npy(const std::string& b, const std::string& where) {
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) return io_error("{}: not a .npy array", where);
  uint8_t major = static_cast<uint8_t>(b[6]);
  if (major != 1 && b.size() < 12) return io_error("{}: truncated .npy header", where);
  size_t len_at = 8, hlen = major == 1 ? le<uint16_t>(b, len_at) : le<uint32_t>(b, len_at);
  size_t data_at = len_at + (major == 1 ? 2 : 4) + hlen;
  if (data_at > b.size()) return io_error("{}: truncated .npy header", where);
  std::string h = b.substr(len_at + (major == 1 ? 2 : 4), hlen);
  if (header_field(h, "fortran_order").find("True") != std::string::npos)
    return unsupported("{}: Fortran-order arrays are not supported", where);
  ASSIGN_OR_RETURN(DType dt, npy_dtype(header_field(h, "descr"), where));
  std::string shape = header_field(h, "shape");
  Dims dims;
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
      dims.push_back(d);
    }
    i = j + 1;
  }
  // The bytes the header's shape asks for, checked against the bytes present
  // before anything is allocated: a header may claim any shape.
  auto bytes = checked_nbytes(dt, dims);
  if (!bytes) return io_error("{}: the .npy header's shape {} overflows 64 bits", where, shape);
  if (*bytes > b.size() - data_at)
    return io_error("{}: the .npy header's shape {} of {} needs {} bytes of data, the file holds {}", where, shape,
                    dtype_name(dt), *bytes, b.size() - data_at);
  Tensor t = Tensor::host(dt, dims);
  std::memcpy(t.raw(), b.data() + data_at, t.nbytes());
  return t;
}

Result<std::string> inflate_raw(const std::string& in, size_t out_size, const std::string& where) {
  // Deflate cannot expand more than about 1032:1; a member claiming more is
  // corrupt or a zip bomb, refused before its output is allocated.
  if (out_size / 1032 > in.size() + 1)
    return io_error("{}: claims {} bytes from {} compressed ones, more than deflate can expand", where, out_size,
                    in.size());
  std::string out(out_size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return io_error("{}: zlib init failed", where);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&z, Z_FINISH);
  uint64_t produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return io_error("{}: corrupt compressed member", where);
  if (produced != out_size)
    return io_error("{}: inflates to {} bytes, its zip entry says {}", where, produced, out_size);
  return out;
}

}  // namespace

Result<std::map<std::string, Tensor>> read_npz(const std::string& path) {
  ASSIGN_OR_RETURN(std::string zip, read_file(path));
  return parse_npz(zip, path);
}

Result<std::map<std::string, Tensor>> parse_npz(const std::string& zip, const std::string& path) {
  // The end-of-central-directory record: the last "PK\5\6" in the file.
  size_t eocd = zip.rfind(std::string("PK\x05\x06", 4));
  if (eocd == std::string::npos || eocd + 22 > zip.size()) return io_error("{}: not a zip/npz archive", path);
  uint16_t entries = le<uint16_t>(zip, eocd + 10);
  uint32_t cd = le<uint32_t>(zip, eocd + 16);
  std::map<std::string, Tensor> out;
  // The host's budget: --max-memory, the physical memory, RLIMIT_AS, the cgroup.
  ASSIGN_OR_RETURN(std::shared_ptr<Device> host, get_device(DeviceKind::kCpu, DeviceSettings{}));
  const uint64_t budget = host->memory_budget();
  uint64_t inflated = 0;
  size_t at = cd;
  // Offsets and sizes come from the file: each is compared with the bytes left
  // after the position it is added to, so no sum wraps and no read runs past the end.
  auto fits = [&](uint64_t from, uint64_t n) { return from <= zip.size() && n <= zip.size() - from; };
  for (uint16_t e = 0; e < entries; ++e) {
    if (!fits(at, 46) || le<uint32_t>(zip, at) != 0x02014b50) return io_error("{}: corrupt zip directory", path);
    uint16_t method = le<uint16_t>(zip, at + 10);
    uint64_t csize = le<uint32_t>(zip, at + 20), usize = le<uint32_t>(zip, at + 24);
    uint16_t nlen = le<uint16_t>(zip, at + 28), xlen = le<uint16_t>(zip, at + 30), clen = le<uint16_t>(zip, at + 32);
    uint64_t local = le<uint32_t>(zip, at + 42);
    if (!fits(at + 46, uint64_t{nlen} + xlen + clen)) return io_error("{}: corrupt zip directory", path);
    std::string name = zip.substr(at + 46, nlen);
    // ZIP64 sizes/offset (arrays over 4 GiB) live in the extra field.
    if (csize == 0xffffffffu || usize == 0xffffffffu || local == 0xffffffffu) {
      size_t x = at + 46 + nlen, end = x + xlen;
      while (x + 4 <= end) {
        uint16_t id = le<uint16_t>(zip, x), sz = le<uint16_t>(zip, x + 2);
        if (id == 1) {
          size_t f = x + 4, field_end = std::min(end, x + 4 + sz);
          auto next = [&]() {
            uint64_t v = f + 8 <= field_end ? le<uint64_t>(zip, f) : 0;
            f += 8;
            return v;
          };
          if (usize == 0xffffffffu) usize = next();
          if (csize == 0xffffffffu) csize = next();
          if (local == 0xffffffffu) local = next();
        }
        x += 4 + sz;
      }
    }
    at += 46 + nlen + xlen + clen;
    if (!fits(local, 30)) return io_error("{}: corrupt zip entry {}", path, name);
    uint64_t data = local + 30 + le<uint16_t>(zip, local + 26) + le<uint16_t>(zip, local + 28);
    if (!fits(data, csize)) return io_error("{}: truncated member {}", path, name);
    // What the arrays will take once inflated counts against the memory
    // budget before any is inflated: a 1 MB deflate bomb reached 2.1 GB.
    inflated = usize > UINT64_MAX - inflated ? UINT64_MAX : inflated + usize;
    if (budget > 0 && inflated > budget)
      return io_error("{}: its arrays inflate to more than the memory budget of {} bytes{} (member {} alone is {} "
                      "bytes)", path, budget, memory_limit() == budget ? " set by --max-memory" : "", name, usize);
    std::string member = zip.substr(data, csize);
    if (method == 8) {
      ASSIGN_OR_RETURN(member, inflate_raw(member, usize, path + ":" + name));
    } else if (method != 0) {
      return unsupported("{}: member {} uses zip method {}", path, name, method);
    }
    std::string key = name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0 ? name.substr(0, name.size() - 4) : name;
    ASSIGN_OR_RETURN(out[key], parse_npy(member, path + ":" + name));
  }
  return out;
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
