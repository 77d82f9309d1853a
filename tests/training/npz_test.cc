// NPZ reading and writing: files numpy wrote (np.savez stored, np.savez_compressed
// deflated; committed as fixtures), our own round trip, and damaged archives.
#include <cstring>
#include <filesystem>
#include <fstream>

#include "graph/onnx_io.h"
#include "runtime/device.h"
#include "training/npz.h"
#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;

TEST_CASE("npz.reads_what_numpy_writes") {
  std::string dir = source_dir() + "/tests/training/data/";
  auto stored = read_npz(dir + "numpy_savez.npz");
  INFO(stored.status().message());
  REQUIRE(stored.ok());
  require_close(stored->at("a"), make<float>({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}), 0, 0);
  CHECK(stored->at("b").to_int64_vector() == std::vector<int64_t>{1, 2, 3});
  auto compressed = read_npz(dir + "numpy_savez_compressed.npz");
  INFO(compressed.status().message());
  REQUIRE(compressed.ok());
  require_close(compressed->at("a"), stored->at("a"), 0, 0);
  CHECK(compressed->at("b").dtype() == DType::kBool);
  CHECK(compressed->at("b").data<bool>()[0]);
  CHECK_FALSE(compressed->at("b").data<bool>()[1]);
}

TEST_CASE("npz.round_trip_and_damage") {
  fs::path p = fs::temp_directory_path() / "ort_train_npz_test.npz";
  std::map<std::string, Tensor> arrays{{"x", random_tensor({5, 3}, 1)}, {"ids", make<int64_t>({2}, {7, -1})},
                                       {"scalar", make<double>({}, {2.5})}};
  REQUIRE(write_npz(arrays, p.string()).ok());
  auto back = read_npz(p.string());
  INFO(back.status().message());
  REQUIRE(back.ok());
  require_close(back->at("x"), arrays["x"], 0, 0);
  CHECK(back->at("ids").to_int64_vector() == std::vector<int64_t>{7, -1});
  CHECK(back->at("scalar").rank() == 0);
  fs::resize_file(p, fs::file_size(p) - 30);
  CHECK_FALSE(read_npz(p.string()).ok());
  fs::remove(p);
}

TEST_CASE("npz.what_the_arrays_inflate_to_counts_against_max_memory") {
  // A deflate bomb (issue 33, item 7): members whose sizes add up past the
  // memory budget are refused from the zip directory before they inflate
  // (before the per-member check that deflate cannot expand past 1032:1).
  // numpy's compressed file with each member's uncompressed size rewritten
  // to 40 MB (its central directory, which the reader trusts for sizes).
  auto bytes = read_file(source_dir() + "/tests/training/data/numpy_savez_compressed.npz");
  REQUIRE(bytes.ok());
  std::string zip = *bytes;
  const std::string central("PK\x01\x02", 4);
  int members = 0;
  for (size_t at = zip.find(central); at != std::string::npos; at = zip.find(central, at + 4), ++members) {
    uint32_t claimed = 40u << 20;
    std::memcpy(&zip[at + 24], &claimed, 4);
  }
  REQUIRE(members == 2);
  set_memory_limit(32u << 20);  // --max-memory 32M
  auto r = parse_npz(zip, "bomb.npz");
  set_memory_limit(0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("bomb.npz: its arrays inflate to more than the memory budget of 33554432 bytes set "
                                  "by --max-memory") != std::string::npos);
}

// Issue 52 (a further round): an archive holding one array name twice is
// refused (numpy.load keeps the last, a first-wins reader would train on
// other data than the user checked).
TEST_CASE("npz.an_array_in_the_file_twice_is_refused") {
  fs::path p = fs::temp_directory_path() / "ort_train_npz_twice.npz";
  REQUIRE(write_npz({{"x", random_tensor({2, 3}, 1)}, {"y", random_tensor({2, 3}, 2)}}, p.string()).ok());
  auto bytes = read_file(p.string());
  REQUIRE(bytes.ok());
  std::string zip = *bytes;
  int renamed = 0;  // "y.npy" -> "x.npy" in the local header and the directory
  for (size_t at = zip.find("y.npy"); at != std::string::npos; at = zip.find("y.npy", at + 1), ++renamed) zip[at] = 'x';
  CHECK(renamed == 2);
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << zip;
  }
  auto back = read_npz(p.string());
  REQUIRE_FALSE(back.ok());
  CHECK_THAT(back.status().message(), Catch::Contains("the array 'x' is in the file twice"));
  fs::remove(p);
}

}  // namespace ort_train::testing
