// NPZ shards read by row (training/npz_shards.cc, training/data_files.h): the
// rows of shards are the rows of their concatenation, whatever the shards'
// sizes or compression, and a bad shard is named.
#include <cstring>
#include <filesystem>
#include <thread>

#include "graph/onnx_io.h"
#include "training/data_files.h"
#include "training/npz.h"
#include "training/row_dataset.h"
#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;

namespace {

// Rows [first, first + n) of a [rows, 3] float array and a [rows] int64 one.
std::map<std::string, Tensor> rows_of(int64_t first, int64_t n) {
  Tensor x = Tensor::host(DType::kFloat, {n, 3});
  Tensor y = Tensor::host(DType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < 3; ++j) x.data<float>()[i * 3 + j] = static_cast<float>((first + i) * 10 + j);
    y.data<int64_t>()[i] = first + i;
  }
  return {{"x", x}, {"y", y}};
}

// The same archive with its end records rewritten as ZIP64's (what numpy
// writes for archives past 4 GiB), the classic record's fields saturated.
std::string as_zip64(const std::string& zip) {
  uint32_t cd_bytes, cd_at;
  uint16_t entries;
  const size_t eocd = zip.size() - 22;
  std::memcpy(&entries, zip.data() + eocd + 10, 2);
  std::memcpy(&cd_bytes, zip.data() + eocd + 12, 4);
  std::memcpy(&cd_at, zip.data() + eocd + 16, 4);
  std::string out = zip.substr(0, eocd);
  auto put = [&](auto v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  const uint64_t record_at = out.size();
  put(uint32_t{0x06064b50}); put(uint64_t{44}); put(uint16_t{45}); put(uint16_t{45}); put(uint32_t{0});
  put(uint32_t{0}); put(uint64_t{entries}); put(uint64_t{entries}); put(uint64_t{cd_bytes}); put(uint64_t{cd_at});
  put(uint32_t{0x07064b50}); put(uint32_t{0}); put(record_at); put(uint32_t{1});
  put(uint32_t{0x06054b50}); put(uint16_t{0}); put(uint16_t{0}); put(uint16_t{0xffff}); put(uint16_t{0xffff});
  put(uint32_t{0xffffffff}); put(uint32_t{0xffffffff}); put(uint16_t{0});
  return out;
}

void check_rows(const RowDataset& ds, const std::vector<uint64_t>& rows) {
  auto got = ds.read(rows);
  INFO(got.status().message());
  REQUIRE(got.ok());
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << rows[i]);
    CHECK(got->at("y").data<int64_t>()[i] == static_cast<int64_t>(rows[i]));
    CHECK(got->at("x").data<float>()[i * 3 + 2] == static_cast<float>(rows[i] * 10 + 2));
  }
}

}  // namespace

TEST_CASE("npz_shards.rows_are_the_concatenations_rows") {
  Dir dir("ort_train_npz_shards");
  // Shards of 5, 0, 1 and 7 rows: stored, stored, ZIP64 and deflated (numpy's
  // savez_compressed layout, made here by rewriting a stored one's members).
  REQUIRE(write_npz(rows_of(0, 5), dir / "a.npz").ok());
  REQUIRE(write_npz(rows_of(5, 0), dir / "b.npz").ok());
  REQUIRE(write_npz(rows_of(5, 1), dir / "c64.npz").ok());
  auto stored = read_file(dir / "c64.npz");
  REQUIRE(stored.ok());
  REQUIRE(write_file_atomic(dir / "c64.npz", as_zip64(*stored)).ok());
  REQUIRE(write_npz(rows_of(6, 7), dir / "d.npz").ok());
  std::vector<std::string> files{dir / "a.npz", dir / "b.npz", dir / "c64.npz", dir / "d.npz"};
  auto ds = open_npz_shards(files, {"x", "y"});
  INFO(ds.status().message());
  REQUIRE(ds.ok());
  CHECK((*ds)->rows() == 13);
  check_rows(**ds, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  check_rows(**ds, {12, 0, 5, 4, 6, 6, 3});
  // From several threads at once (--prefetch); Catch2's assertions are
  // not thread-safe, so each thread counts its wrong rows and the test checks the counts.
  std::vector<std::thread> readers;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&ds, &wrong, t] {
      for (int k = 0; k < 50; ++k) {
        std::vector<uint64_t> rows{static_cast<uint64_t>((t + k) % 13), 12, 0};
        auto got = (*ds)->read(rows);
        if (!got.ok()) {
          ++wrong[static_cast<size_t>(t)];
          continue;
        }
        for (size_t i = 0; i < rows.size(); ++i)
          wrong[static_cast<size_t>(t)] += got->at("y").data<int64_t>()[i] != static_cast<int64_t>(rows[i]) ||
                                           got->at("x").data<float>()[i * 3 + 2] != static_cast<float>(rows[i] * 10 + 2);
      }
    });
  for (auto& r : readers) r.join();
  CHECK(wrong == std::vector<int>(4, 0));
  // The folder resolves to the shards in name order.
  auto found = resolve_data_files(dir.p.string());
  REQUIRE(found.ok());
  CHECK(found->kind == DataFiles::Kind::kNpz);
  CHECK(found->files == files);
}

TEST_CASE("npz_shards.deflated_members_are_inflated_once_to_disk") {
  // numpy's savez_compressed fixture: a [3, 4] float array 'a', deflated.
  std::string fixture = source_dir() + "/tests/training/data/numpy_savez_compressed.npz";
  Dir dir("ort_train_npz_deflated");
  REQUIRE(write_npz({{"a", make<float>({1, 4}, {100, 101, 102, 103})}}, dir / "z.npz").ok());
  auto ds = open_npz_shards({fixture, dir / "z.npz"}, {"a"});
  INFO(ds.status().message());
  REQUIRE(ds.ok());
  auto got = (*ds)->read({3, 0, 2});
  REQUIRE(got.ok());
  require_close(got->at("a"), make<float>({3, 4}, {100, 101, 102, 103, 0, 1, 2, 3, 8, 9, 10, 11}), 0, 0);
}

TEST_CASE("npz_shards.a_bad_shard_is_named") {
  Dir dir("ort_train_npz_bad_shards");
  REQUIRE(write_npz(rows_of(0, 4), dir / "good.npz").ok());
  auto other = rows_of(0, 4);
  other["x"] = Tensor::host(DType::kFloat, {4, 2});
  REQUIRE(write_npz(other, dir / "narrow.npz").ok());
  REQUIRE(write_npz({{"x", rows_of(0, 2)["x"]}}, dir / "no_y.npz").ok());
  auto r = open_npz_shards({dir / "good.npz", dir / "narrow.npz"}, {"x", "y"});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Matchers::Contains("narrow.npz: array 'x' is float32 [2] per sample"));
  r = open_npz_shards({dir / "good.npz", dir / "no_y.npz"}, {"x", "y"});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Matchers::Contains("no_y.npz: no array named 'y'"));
  // A truncated shard fails when opened, by name, not mid-run.
  auto bytes = read_file(dir / "good.npz");
  REQUIRE(bytes.ok());
  REQUIRE(write_file_atomic(dir / "cut.npz", bytes->substr(0, bytes->size() / 2)).ok());
  r = open_npz_shards({dir / "good.npz", dir / "cut.npz"}, {"x", "y"});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Matchers::Contains("cut.npz"));
}

TEST_CASE("data_files.folders_globs_and_list_files") {
  Dir dir("ort_train_data_files");
  for (const char* name : {"s2.npz", "s1.npz", "s3.npz"}) REQUIRE(write_npz(rows_of(0, 1), dir / name).ok());
  fs::create_directories(dir / "sub");
  auto folder = resolve_data_files(dir.p.string());
  REQUIRE(folder.ok());
  CHECK(folder->files == std::vector<std::string>{dir / "s1.npz", dir / "s2.npz", dir / "s3.npz"});
  auto glob = resolve_data_files(dir / "s[12].npz");
  REQUIRE(glob.ok());
  CHECK(glob->files == std::vector<std::string>{dir / "s1.npz", dir / "s2.npz"});
  // A list file: relative to its folder, in its own order, comments skipped.
  REQUIRE(write_file_atomic(dir / "sub/list.txt", "# shards\n../s3.npz\n\n  ../s1.npz  \n").ok());
  auto list = resolve_data_files(dir / "sub/list.txt");
  INFO(list.status().message());
  REQUIRE(list.ok());
  CHECK(list->files == std::vector<std::string>{(fs::path(dir / "sub") / "../s3.npz").string(),
                                                (fs::path(dir / "sub") / "../s1.npz").string()});
  REQUIRE(write_file_atomic(dir / "sub/bad.txt", "../s1.npz\n../gone.npz\n").ok());
  auto bad = resolve_data_files(dir / "sub/bad.txt");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Matchers::Contains("bad.txt, line 2"));
  auto none = resolve_data_files(dir / "*.nothing");
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.status().message(), Catch::Matchers::Contains("matches no files"));
  REQUIRE(write_file_atomic(dir / "t.bin", std::string(8, '\0')).ok());
  auto mixed = resolve_data_files(dir.p.string());
  REQUIRE_FALSE(mixed.ok());
  CHECK_THAT(mixed.status().message(), Catch::Matchers::Contains("mixes NPZ and token shards"));
  // A folder of batch sub-directories only is batch data, as before.
  Dir batches("ort_train_data_files_batches");
  fs::create_directories(batches / "batch_0");
  auto b = resolve_data_files(batches.p.string());
  REQUIRE(b.ok());
  CHECK(b->kind == DataFiles::Kind::kBatchDirs);
  Dir empty("ort_train_data_files_empty");
  auto e = resolve_data_files(empty.p.string());
  REQUIRE_FALSE(e.ok());
  CHECK_THAT(e.status().message(), Catch::Matchers::Contains("no .npz or .bin shards"));
}

// --data examples/bert/data with --eval-data examples/bert/data/eval.npz: the
// folder's eval.npz is left out of training, by file identity (a list file's
// "../x.npz" is the same file as "x.npz").
TEST_CASE("data_files.the_held_out_shard_is_left_out_of_the_training_shards") {
  Dir dir("ort_train_held_out_shards");
  for (const char* name : {"train.npz", "eval.npz"}) REQUIRE(write_npz(rows_of(0, 1), dir / name).ok());
  fs::create_directories(dir / "sub");
  auto train = resolve_data_files(dir.p.string());
  REQUIRE(train.ok());
  REQUIRE(train->files.size() == 2);
  auto held_out = resolve_data_files((fs::path(dir / "sub") / "../eval.npz").string());
  REQUIRE(held_out.ok());
  CHECK(leave_out_held_out(*train, *held_out) == std::vector<std::string>{dir / "eval.npz"});
  CHECK(train->files == std::vector<std::string>{dir / "train.npz"});
  // Apart: nothing is left out.
  Dir other("ort_train_held_out_apart");
  REQUIRE(write_npz(rows_of(0, 1), other / "eval.npz").ok());
  auto apart = resolve_data_files(other / "eval.npz");
  REQUIRE(apart.ok());
  CHECK(leave_out_held_out(*train, *apart).empty());
  CHECK(train->files.size() == 1);
}

}  // namespace ort_train::testing

namespace ort_train::testing {

// Issue 52, item 8: a bool byte other than 0 or 1 in a shard was fed as it
// was (Cast gave 5, Not gave 0); it is read as true, as numpy reads it.
TEST_CASE("npz_shards.bool_bytes_other_than_0_and_1_are_read_as_true") {
  Dir dir("ort_train_npz_bools");
  Tensor flags = Tensor::host(DType::kBool, {3, 2});
  const uint8_t bytes[6] = {0, 1, 5, 0, 255, 2};
  std::memcpy(flags.raw(), bytes, 6);
  REQUIRE(write_npz({{"m", flags}}, dir / "b.npz").ok());
  auto ds = open_npz_shards({dir / "b.npz"}, {"m"});
  REQUIRE(ds.ok());
  auto got = (*ds)->read({0, 1, 2});
  REQUIRE(got.ok());
  const auto* p = static_cast<const uint8_t*>(got->at("m").raw());
  CHECK(std::vector<uint8_t>(p, p + 6) == std::vector<uint8_t>{0, 1, 1, 0, 1, 1});
}

}  // namespace ort_train::testing
