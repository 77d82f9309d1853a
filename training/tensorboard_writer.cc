#include "training/tensorboard_writer.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>

#include "graph/atomic_file.h"
#include "tensorboard_event.pb.h"  // generated into the build folder

namespace ort_train {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr int kDtString = 7;  // TensorFlow's DT_STRING

}  // namespace

uint32_t crc32c(const void* data, size_t n) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reversed Castagnoli polynomial
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t n) {
  uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

Result<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error("--tensorboard {}: cannot create the folder: {}", dir, ec.message());
  char host[256] = "localhost";
  ::gethostname(host, sizeof(host) - 1);
  auto w = std::unique_ptr<TensorBoardWriter>(new TensorBoardWriter());
  // The pid keeps two runs started in the same second apart.
  w->path_ = (std::filesystem::path(dir) /
              fmt::format("events.out.tfevents.{}.{}.{}", static_cast<int64_t>(now_seconds()), host, ::getpid()))
                 .string();
  // The name is ort_train's: a link or FIFO planted there is replaced, not written through.
  auto fd = create_new_file(w->path_);
  if (!fd.ok()) return fd.status().with_context("--tensorboard");
  w->fd_ = *fd;
  tensorboard::Event first;
  first.set_wall_time(now_seconds());
  first.set_file_version("brain.Event:2");
  RETURN_IF_ERROR(w->write_record(first.SerializeAsString()));
  RETURN_IF_ERROR(w->flush());
  return w;
}

Status TensorBoardWriter::write_record(const std::string& bytes) {
  // TFRecord: length (uint64 LE), its masked CRC, the bytes, their masked CRC.
  uint64_t len = bytes.size();
  unsigned char header[8];
  for (int i = 0; i < 8; ++i) header[i] = static_cast<unsigned char>(len >> (8 * i));
  std::string record(reinterpret_cast<const char*>(header), 8);
  auto put32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) record.push_back(static_cast<char>(v >> (8 * i)));
  };
  put32(masked_crc32c(header, 8));
  record += bytes;
  put32(masked_crc32c(bytes.data(), bytes.size()));
  return write_all(fd_, record.data(), record.size(), path_).with_context("--tensorboard");
}

Status TensorBoardWriter::scalar(const std::string& tag, double value, int64_t step) {
  tensorboard::Event e;
  e.set_wall_time(now_seconds());
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  return write_record(e.SerializeAsString());
}

Status TensorBoardWriter::text(const std::string& tag, const std::string& text, int64_t step) {
  tensorboard::Event e;
  e.set_wall_time(now_seconds());
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  v->mutable_tensor()->set_dtype(kDtString);
  v->mutable_tensor()->mutable_tensor_shape();
  v->mutable_tensor()->add_string_val(text);
  return write_record(e.SerializeAsString());
}

TensorBoardWriter::~TensorBoardWriter() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace ort_train
