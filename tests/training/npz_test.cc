// NPZ reading and writing: files numpy wrote (np.savez stored, np.savez_compressed
// deflated; committed as fixtures), our own round trip, and damaged archives.
#include <filesystem>

#include "graph/onnx_io.h"
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

}  // namespace ort_train::testing
