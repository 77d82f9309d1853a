// safetensors: a round trip, and every rule of the format a file can break
// refused with the file's and the tensor's name.
#include <cstring>

#include "test_util.h"
#include "training/safetensors.h"

namespace ort_train::testing {
namespace {

// A file of `header` (JSON text) and `data` bytes after it.
std::string file_of(const std::string& header, const std::string& data, int64_t claimed = -1) {
  uint64_t len = claimed < 0 ? header.size() : static_cast<uint64_t>(claimed);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(len >> (8 * i));
  return out + header + data;
}

Result<SafetensorsHeader> header_of(const std::string& bytes) {
  return read_safetensors_header(*readable_string(bytes, "a.safetensors"));
}

}  // namespace

TEST_CASE("safetensors: tensors of each dtype and the metadata read back as written", "[safetensors]") {
  Dir dir("ort_train_safetensors_roundtrip");
  std::map<std::string, Tensor> tensors{{"w", random_tensor({3, 4}, 1)},
                                        {"b.bf16", narrowed<BFloat16>(random_tensor({5}, 2))},
                                        {"ids", make<int64_t>({2}, {7, -3})},
                                        {"empty", Tensor::host(DType::kFloat, {0, 4})}};
  const std::string path = dir / "t.safetensors";
  REQUIRE(write_safetensors(path, tensors, {{"format", "pt"}}).ok());
  auto bytes = open_readable_file(path);
  REQUIRE(bytes.ok());
  auto header = read_safetensors_header(**bytes);
  INFO(header.status().message());
  REQUIRE(header.ok());
  CHECK(header->metadata == std::map<std::string, std::string>{{"format", "pt"}});
  REQUIRE(header->entries.size() == tensors.size());
  // The header is padded to 8 bytes and wider dtypes come first, so each
  // tensor starts aligned to its element (as the format's library writes them).
  for (const auto& [name, e] : header->entries) CHECK(e.offset % dtype_size(e.dtype) == 0);
  for (const auto& [name, t] : tensors) {
    INFO(name);
    const SafetensorsEntry& e = header->entries.at(name);
    CHECK(e.dtype == t.dtype());
    CHECK(e.dims == t.dims());
    auto back = read_safetensors_tensor(**bytes, e);
    REQUIRE(back.ok());
    REQUIRE(back->nbytes() == t.nbytes());
    CHECK(std::memcmp(back->raw(), t.raw(), t.nbytes()) == 0);
  }
}

TEST_CASE("safetensors: a file that breaks the format is refused, naming the tensor", "[safetensors][hostile]") {
  const std::string f32 = R"("dtype": "F32", "shape": [2])";
  const std::string eight(8, '\1');
  struct Bad {
    const char* what;
    std::string bytes;
    const char* expect;
  };
  const Bad cases[] = {
      {"shorter than the length", std::string(5, '\0'), "no safetensors header"},
      {"a length past the file", file_of("{}", "", 4096), "truncated"},
      {"a length past 100 MiB", file_of("{}", "", int64_t{1} << 40), "at most"},
      {"not JSON", file_of("{not json", ""), "not a JSON object"},
      {"a JSON array", file_of("[1, 2]", ""), "not a JSON object"},
      {"no dtype", file_of(R"({"w": {"shape": [2], "data_offsets": [0, 8]}})", eight), "tensor 'w': no dtype"},
      {"an unknown dtype", file_of(R"({"w": {"dtype": "F8_E9", "shape": [2], "data_offsets": [0, 8]}})", eight),
       "tensor 'w': dtype 'F8_E9'"},
      {"a negative dim", file_of(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", eight),
       "tensor 'w': a dim that is not a whole number"},
      {"a size the offsets do not hold", file_of(R"({"w": {)" + f32 + R"(, "data_offsets": [0, 4]}})", eight),
       "tensor 'w': data_offsets [0, 4] hold 4 bytes"},
      {"offsets backwards", file_of(R"({"w": {)" + f32 + R"(, "data_offsets": [8, 0]}})", eight),
       "tensor 'w': data_offsets [8, 0]"},
      {"an overflowing shape",
       file_of(R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})", eight),
       "overflows"},
      {"a hole before the data", file_of(R"({"w": {)" + f32 + R"(, "data_offsets": [8, 16]}})", eight + eight),
       "tensor 'w' starts at data byte 8, 0 expected"},
      {"two tensors on the same bytes",
       file_of(R"({"a": {)" + f32 + R"(, "data_offsets": [0, 8]}, "b": {)" + f32 + R"(, "data_offsets": [0, 8]}})",
               eight),
       "starts at data byte 0, 8 expected"},
      {"data past the tensors", file_of(R"({"w": {)" + f32 + R"(, "data_offsets": [0, 8]}})", eight + "x"),
       "the tensors hold 8 data bytes, the file 9"},
      {"data cut short", file_of(R"({"w": {)" + f32 + R"(, "data_offsets": [0, 8]}})", "1234"), "truncated"},
      {"metadata that is not strings", file_of(R"({"__metadata__": {"format": 1}})", ""), "__metadata__.format"},
      {"an unknown key", file_of(R"({"w": {)" + f32 + R"(, "data_offsets": [0, 8], "x": 1}})", eight),
       "tensor 'w': unknown key 'x'"},
  };
  for (const Bad& b : cases) {
    INFO(b.what);
    auto r = header_of(b.bytes);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("a.safetensors"));
    CHECK_THAT(r.status().message(), Catch::Contains(b.expect));
  }
}

}  // namespace ort_train::testing
