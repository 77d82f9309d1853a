// Token files read by window (training/token_shards.cc): llm.c's header for
// uint16 and uint32 tokens, nanoGPT's raw arrays, windows across files.
#include <cstring>

#include "graph/onnx_io.h"
#include "training/row_dataset.h"
#include "test_util.h"

namespace ort_train::testing {

namespace {

template <typename T>
std::string token_bytes(uint64_t first, uint64_t n) {
  std::string s;
  for (uint64_t i = 0; i < n; ++i) {
    T v = static_cast<T>(first + i);
    s.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  return s;
}

std::string llmc_header(int32_t magic, int32_t version, int32_t tokens) {
  std::string h(1024, '\0');
  int32_t fields[3] = {magic, version, tokens};
  std::memcpy(h.data(), fields, sizeof fields);
  return h;
}

TokenWindows windows(int64_t seq) {
  TokenWindows w;
  w.seq = seq;
  w.input_ids = "input_ids";
  w.labels = "labels";
  return w;
}

}  // namespace

TEST_CASE("token_shards.windows_of_seq_plus_one_tokens_across_files") {
  Dir dir("ort_train_token_shards");
  // Tokens 0..20 raw uint16 (nanoGPT), 21..40 under llm.c's uint16 header,
  // 70000..70010 under its uint32 header.
  REQUIRE(write_file_atomic(dir / "a.bin", token_bytes<uint16_t>(0, 21)).ok());
  REQUIRE(write_file_atomic(dir / "b.bin", llmc_header(20240520, 1, 20) + token_bytes<uint16_t>(21, 20)).ok());
  REQUIRE(write_file_atomic(dir / "c.bin", llmc_header(20240801, 7, 11) + token_bytes<uint32_t>(70000, 11)).ok());
  TokenWindows w = windows(4);
  w.fill["attention_mask"] = {DType::kInt64, 1.0};
  auto ds = open_token_shards({dir / "a.bin", dir / "b.bin", dir / "c.bin"}, w);
  INFO(ds.status().message());
  REQUIRE(ds.ok());
  // (21-1)/4 = 5 windows, (20-1)/4 = 4, (11-1)/4 = 2.
  CHECK((*ds)->rows() == 11);
  auto got = (*ds)->read({0, 4, 5, 10});
  INFO(got.status().message());
  REQUIRE(got.ok());
  CHECK(got->at("input_ids").to_int64_vector() ==
        std::vector<int64_t>{0, 1, 2, 3, 16, 17, 18, 19, 21, 22, 23, 24, 70004, 70005, 70006, 70007});
  CHECK(got->at("labels").to_int64_vector() ==
        std::vector<int64_t>{1, 2, 3, 4, 17, 18, 19, 20, 22, 23, 24, 25, 70005, 70006, 70007, 70008});
  CHECK(got->at("attention_mask").to_int64_vector() == std::vector<int64_t>(16, 1));
  // Models that shift their labels themselves get labels = input_ids.
  w.shift_labels = false;
  w.labels_dtype = DType::kInt32;
  auto same = open_token_shards({dir / "a.bin"}, w);
  REQUIRE(same.ok());
  auto s = (*same)->read({1});
  REQUIRE(s.ok());
  CHECK(s->at("labels").dtype() == DType::kInt32);
  CHECK(s->at("labels").to_int64_vector() == std::vector<int64_t>{4, 5, 6, 7});
}

TEST_CASE("token_shards.damaged_files_are_refused_by_name") {
  Dir dir("ort_train_token_damaged");
  REQUIRE(write_file_atomic(dir / "odd.bin", std::string(7, '\1')).ok());
  auto r = open_token_shards({dir / "odd.bin"}, windows(2));
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Matchers::Contains("odd.bin: 7 bytes is not a whole number of 16-bit"));
  REQUIRE(write_file_atomic(dir / "v9.bin", llmc_header(20240520, 9, 4) + token_bytes<uint16_t>(0, 4)).ok());
  r = open_token_shards({dir / "v9.bin"}, windows(2));
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Matchers::Contains("v9.bin: llm.c token file version 9"));
  // A header whose count disagrees with the size is read as raw tokens: the
  // file is then not llm.c's, and its 1024 header bytes become tokens.
  REQUIRE(write_file_atomic(dir / "short.bin", llmc_header(20240520, 1, 100) + token_bytes<uint16_t>(0, 4)).ok());
  auto raw = open_token_shards({dir / "short.bin"}, windows(2));
  REQUIRE(raw.ok());
  CHECK((*raw)->rows() == (516 - 1) / 2);
  TokenWindows floats = windows(2);
  floats.input_dtype = DType::kFloat;
  CHECK_FALSE(open_token_shards({dir / "short.bin"}, floats).ok());
}

}  // namespace ort_train::testing

namespace ort_train::testing {

// Issue 52, item 8: a uint32 token past int32's range wrapped to a negative
// id when fed to int32 inputs (int64 ones already refused nothing, as it fits).
TEST_CASE("token_shards.a_token_an_int32_input_cannot_hold_is_refused") {
  Dir dir("ort_train_token_int32");
  REQUIRE(write_file_atomic(dir / "big.bin", llmc_header(20240801, 7, 9) + token_bytes<uint32_t>(0x7ffffffcull, 9))
              .ok());
  TokenWindows w = windows(2);  // windows of 2+1 tokens from 0x7ffffffc: the fifth token is 2^31
  w.input_dtype = w.labels_dtype = DType::kInt32;
  auto ds = open_token_shards({dir / "big.bin"}, w);
  REQUIRE(ds.ok());
  CHECK((*ds)->read({0}).ok());  // 0x7ffffffc..0x7ffffffe fit
  auto labels = (*ds)->read({1});
  REQUIRE_FALSE(labels.ok());
  CHECK_THAT(labels.status().message(), Catch::Contains("token 2147483648 does not fit the int32 input 'labels'"));
  auto ids = (*ds)->read({2});
  REQUIRE_FALSE(ids.ok());
  CHECK_THAT(ids.status().message(), Catch::Contains("does not fit the int32 input 'input_ids'"));
  w.input_dtype = w.labels_dtype = DType::kInt64;
  auto wide = open_token_shards({dir / "big.bin"}, w);
  REQUIRE(wide.ok());
  auto read = (*wide)->read({2});
  REQUIRE(read.ok());
  CHECK(read->at("input_ids").to_int64_vector()[0] == 0x80000000ll);
}

}  // namespace ort_train::testing
