// The layering rule of docs/ARCHITECTURE.md, held by scanning every project
// include: a folder may include only itself and the folders below it.
//   apps -> training -> autodiff -> graph;  training -> optimizers -> runtime -> graph;
//   configs sit under autodiff (descriptions are plain data); numerics (the
//   portable host/device arithmetic: 16-bit floats, casts, counter-based random
//   numbers) include nothing of the project and anything may include them;
//   cuda_kernels include only numerics, and the devices' folders (runtime,
//   optimizers) include them: never the IR (graph) or what sits above it.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;

TEST_CASE("layering: every include points down the layers", "[architecture]") {
  const std::map<std::string, std::set<std::string>> allowed = {
      {"numerics", {"numerics"}},
      {"cuda_kernels", {"cuda_kernels", "numerics"}},
      {"graph", {"graph", "numerics"}},
      {"configs", {"configs", "graph", "numerics"}},
      {"runtime", {"runtime", "graph", "cuda_kernels", "numerics"}},
      {"autodiff", {"autodiff", "configs", "graph", "numerics"}},
      {"optimizers", {"optimizers", "runtime", "configs", "graph", "cuda_kernels", "numerics"}},
      {"training", {"training", "autodiff", "optimizers", "runtime", "configs", "graph", "numerics"}},
      {"apps", {"apps", "training", "autodiff", "optimizers", "runtime", "configs", "graph", "numerics"}},
  };
  const std::regex include_re(R"re(^\s*#\s*include\s*"([A-Za-z0-9_]+)/)re");
  int files = 0;
  std::vector<std::string> violations;
  for (const auto& [folder, ok] : allowed) {
    fs::path root = fs::path(source_dir()) / folder;
    REQUIRE(fs::is_directory(root));
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      std::string ext = e.path().extension().string();
      if (ext != ".h" && ext != ".cc" && ext != ".cu") continue;
      ++files;
      std::ifstream in(e.path());
      std::string line;
      int n = 0;
      while (std::getline(in, line)) {
        ++n;
        std::smatch m;
        if (std::regex_search(line, m, include_re) && allowed.count(m[1].str()) && !ok.count(m[1].str()))
          violations.push_back(fs::relative(e.path(), source_dir()).string() + ":" + std::to_string(n) + " includes " +
                               m[1].str() + "/");
      }
    }
  }
  CHECK(files > 100);
  std::string report;
  for (const auto& v : violations) report += "\n  " + v;
  INFO("includes that reach up a layer:" << report);
  CHECK(violations.empty());
}

// The scan must see a violation when there is one (a test that cannot fail proves nothing).
TEST_CASE("layering: the include scan recognises a project include", "[architecture]") {
  const std::regex include_re(R"re(^\s*#\s*include\s*"([A-Za-z0-9_]+)/)re");
  std::smatch m;
  std::string line = "#include \"training/trainer.h\"  // reaching up";
  REQUIRE(std::regex_search(line, m, include_re));
  CHECK(m[1].str() == "training");
  line = "#include \"cuda_kernels/softmax.h\"  // graph reaching into a device's kernels";
  REQUIRE(std::regex_search(line, m, include_re));
  CHECK(m[1].str() == "cuda_kernels");
  std::string system = "#include <fmt/format.h>";
  CHECK_FALSE(std::regex_search(system, m, include_re));
}

// ZeRO is one object (training/zero_sharding.h): the trainer and the apps ask
// it, and only it and the gradient side it hands its layout to (the reducer's
// buckets and ZeRO-2's sharded gradients) touch ParameterStore's Shard.
TEST_CASE("layering: ZeRO's share is reached through ZeroSharding alone", "[architecture]") {
  const std::set<std::string> allowed = {"training/zero_sharding.h", "training/zero_sharding.cc",
                                         "training/gradient_reducer.h", "training/gradient_reducer.cc",
                                         "training/gradient_buckets.h", "training/gradient_buckets.cc",
                                         "training/sharded_gradients.h", "training/sharded_gradients.cc"};
  const std::regex shard_re(R"re(ParameterStore::Shard|[.>]shard\()re");
  std::vector<std::string> outside;
  for (const char* folder : {"apps", "training", "optimizers"})
    for (const auto& e : fs::recursive_directory_iterator(fs::path(source_dir()) / folder)) {
      const std::string rel = fs::relative(e.path(), source_dir()).string();
      if (!e.is_regular_file() || allowed.count(rel)) continue;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n)
        if (std::regex_search(line, shard_re)) outside.push_back(rel + ":" + std::to_string(n));
    }
  std::string report;
  for (const auto& v : outside) report += "\n  " + v;
  INFO("ZeRO's layout used outside ZeroSharding and the gradient reducer:" << report);
  CHECK(outside.empty());
  // The pattern sees a use (a test that cannot fail proves nothing).
  CHECK(std::regex_search(std::string("  ASSIGN_OR_RETURN(zero_, store_->shard(rank_, world_));"), shard_re));
}

}  // namespace ort_train::testing
