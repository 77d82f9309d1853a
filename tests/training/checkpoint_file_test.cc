// The checkpoint file format (training/checkpoint.h) read back directly: a
// round trip, and forged files whose hash is valid (the writer computes it)
// but whose tensor table lies.
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

}  // namespace

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
