// training/readable_bytes.h: a shard is reopened by path whenever the
// descriptor cache dropped it. A shard replaced by a FIFO during the run is
// then refused at once, never waited on (issue 52, item 2).
#include "training/readable_bytes.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace ort_train::testing {
namespace {

TEST_CASE("readable_bytes: a file replaced by a FIFO is refused when reopened, not waited on") {
  Dir d("ort_train_readable_fifo");
  std::ofstream(d / "shard") << "0123456789";
  auto shard = open_readable_file(d / "shard");
  REQUIRE(shard.ok());
  std::string got(4, '\0');
  REQUIRE((*shard)->read(2, 4, got.data()).ok());
  CHECK(got == "2345");
  // Replaced, then pushed out of the descriptor cache (64 open files) by others read after it.
  std::filesystem::remove(d.p / "shard");
  REQUIRE(::mkfifo((d / "shard").c_str(), 0600) == 0);
  std::vector<std::shared_ptr<const ReadableBytes>> others;
  for (int i = 0; i < 70; ++i) {
    std::string path = d / ("other" + std::to_string(i));
    std::ofstream(path) << "x";
    auto f = open_readable_file(path);
    REQUIRE(f.ok());
    char c = 0;
    REQUIRE((*f)->read(0, 1, &c).ok());
    others.push_back(*f);
  }
  Status again = (*shard)->read(2, 4, got.data());
  REQUIRE_FALSE(again.ok());
  CHECK_THAT(again.message(), Catch::Contains("no longer a regular file"));
}

}  // namespace
}  // namespace ort_train::testing
