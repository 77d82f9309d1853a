// The checkpoint file format (training/checkpoint.h) read back directly: a
// round trip, and forged files whose hash is valid (the writer computes it)
// but whose tensor table lies.
#include "graph/onnx_io.h"
#include "graph/stable_hash.h"
#include "test_util.h"
#include "training/checkpoint.h"

namespace ort_train::testing {
namespace {

Checkpoint two_tensors() {
  Checkpoint c;
  c.step = 7;
  c.micro_batch = 14;
  c.seed = 3;
  c.fingerprint["model"] = "abc";
  c.tensors.emplace_back("param/w", random_tensor({2, 3}, 1));
  c.tensors.emplace_back("state/w/m", random_tensor({2, 3}, 2));
  return c;
}

// A checkpoint file around `header` (JSON) and `data`, with a valid hash.
std::string forged_file(const std::string& header, const std::string& data) {
  std::string f("ORTCKPT\0", 8);
  auto put = [&f](auto v) { f.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(uint32_t{Checkpoint::kVersion});
  put(uint64_t{header.size()});
  f += header;
  put(uint64_t{data.size()});
  f += data;
  put(fnv1a64(f.data(), f.size()));
  return f;
}

const char* kTable = R"("step": 1, "micro_batch": 1, "seed": 0, "fingerprint": {},
  "tensors": [{"name": "param/w", "dims": [2], "dtype": 1, "offset": 0, "bytes": 8}])";

}  // namespace

// Issue 52, item 11: a 200 MB header carrying an array nobody reads was
// accepted, and a resume from it peaked at 17x the file's size.
TEST_CASE("checkpoint_file.a_header_past_64_MiB_is_refused_and_unknown_keys_are_not_kept") {
  Dir d("ort_train_checkpoint_header");
  const std::string data(8, '\0');
  // Unknown keys beside the known ones: parsed, dropped, the checkpoint read.
  std::string junk = "0";
  for (int i = 0; i < 1000; ++i) junk += ", 1";
  std::string extra = "{\"junk\": [" + junk + "], " + kTable + "}";
  REQUIRE(write_file_atomic(d / "extra.ortc", forged_file(extra, data)).ok());
  auto back = read_checkpoint(d / "extra.ortc");
  INFO(back.status().message());
  REQUIRE(back.ok());
  CHECK(back->tensors.size() == 1);
  // A header past 64 MiB: refused by its length, before it is read.
  std::string big = std::string("{\"junk\": \"") + std::string((size_t{64} << 20) + 1, 'x') + "\", " + kTable + "}";
  REQUIRE(write_file_atomic(d / "big.ortc", forged_file(big, data)).ok());
  auto refused = read_checkpoint(d / "big.ortc");
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("a checkpoint header of"));
}

TEST_CASE("checkpoint_file.round_trip_keeps_every_tensor_and_counter") {
  Dir d("ort_train_checkpoint_file");
  Checkpoint c = two_tensors();
  REQUIRE(write_checkpoint(c, d / "ckpt.ortc").ok());
  auto back = read_checkpoint(d / "ckpt.ortc");
  INFO(back.status().message());
  REQUIRE(back.ok());
  CHECK(back->step == 7);
  CHECK(back->micro_batch == 14);
  CHECK(back->seed == 3);
  CHECK(back->fingerprint == c.fingerprint);
  REQUIRE(back->tensors.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(back->tensors[i].first == c.tensors[i].first);
    CHECK(back->tensors[i].second.to_double_vector() == c.tensors[i].second.to_double_vector());
  }
}

TEST_CASE("checkpoint_file.a_tensor_named_twice_is_refused") {
  // Restoring by name would load one of the two and leave the parameter the
  // other names as it was: a silently half-restored run.
  Dir d("ort_train_checkpoint_file_twice");
  Checkpoint c = two_tensors();
  c.tensors.emplace_back("param/w", random_tensor({2, 3}, 5));
  REQUIRE(write_checkpoint(c, d / "ckpt.ortc").ok());
  auto back = read_checkpoint(d / "ckpt.ortc");
  REQUIRE_FALSE(back.ok());
  CHECK(back.status().message().find("tensor 'param/w' appears twice in the checkpoint") != std::string::npos);
}

}  // namespace ort_train::testing
