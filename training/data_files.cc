#include "training/data_files.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "graph/onnx_io.h"

namespace ort_train {
namespace fs = std::filesystem;
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The kind every shard agrees on, by extension: .npz or .bin.
Result<DataFiles> shards(const std::vector<std::string>& files, const std::string& data) {
  if (files.empty()) return invalid_argument("{}: names no .npz or .bin shards", data);
  DataFiles out{ends_with(files[0], ".bin") ? DataFiles::Kind::kTokens : DataFiles::Kind::kNpz, files};
  for (const std::string& f : files) {
    bool npz = ends_with(f, ".npz"), bin = ends_with(f, ".bin");
    if (!npz && !bin) return invalid_argument("{}: shard {} is neither .npz nor a token .bin", data, f);
    if (bin != (out.kind == DataFiles::Kind::kTokens))
      return invalid_argument("{}: mixes NPZ and token shards ({} and {}); give one kind", data, files[0], f);
  }
  return out;
}

Result<DataFiles> list_file(const std::string& path) {
  // A list of paths is small; a file past 64 MiB is no list (nor a shard with a wrong extension).
  ASSIGN_OR_RETURN(std::string text, read_file(path, uint64_t{64} << 20));
  if (text.find('\0') != std::string::npos)
    return invalid_argument("{}: not a list of shards (binary content); data files end in .npz or .bin", path);
  std::vector<std::string> files;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line.erase(0, line.find_first_not_of(" \t\r"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty() || line[0] == '#') continue;
    fs::path p = fs::path(line).is_absolute() ? fs::path(line) : fs::path(path).parent_path() / line;
    if (!path_present(p.string())) return io_error("{}, line {}: {} does not exist", path, n, p.string());
    files.push_back(p.string());
  }
  return shards(files, path);
}

}  // namespace

Result<DataFiles> resolve_data_files(const std::string& data) {
  if (data == "synthetic") return DataFiles{};
  std::error_code ec;
  if (fs::is_directory(data, ec)) {
    std::vector<std::string> files;
    bool sub_dirs = false;
    for (auto it = fs::directory_iterator(data, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::string p = it->path().string();
      if (it->is_directory(ec)) sub_dirs = true;
      else if (ends_with(p, ".npz") || ends_with(p, ".bin")) files.push_back(p);
    }
    if (ec) return io_error("cannot list {}: {}", data, ec.message());
    if (files.empty()) {
      if (!sub_dirs) return invalid_argument("{} holds no .npz or .bin shards and no batch sub-directories", data);
      return DataFiles{DataFiles::Kind::kBatchDirs, {data}};
    }
    std::sort(files.begin(), files.end());
    return shards(files, data);
  }
  if (path_present(data)) {
    if (ends_with(data, ".npz")) return DataFiles{DataFiles::Kind::kNpz, {data}};
    if (ends_with(data, ".bin")) return DataFiles{DataFiles::Kind::kTokens, {data}};
    return list_file(data);
  }
  if (data.find_first_of("*?[") != std::string::npos) {
    glob_t g{};
    int rc = ::glob(data.c_str(), GLOB_ERR, nullptr, &g);
    std::vector<std::string> files(g.gl_pathv, g.gl_pathv + (rc == 0 ? g.gl_pathc : 0));
    globfree(&g);
    if (rc == GLOB_NOMATCH || files.empty()) return io_error("--data {}: the pattern matches no files", data);
    if (rc != 0) return io_error("--data {}: the pattern could not be read", data);
    return shards(files, data);  // glob sorts them
  }
  return io_error("--data {} does not exist", data);
}

std::vector<std::string> leave_out_held_out(DataFiles& train, const DataFiles& held_out) {
  std::vector<std::string> left_out;
  if (train.kind == DataFiles::Kind::kSynthetic || train.kind == DataFiles::Kind::kBatchDirs) return left_out;
  auto is_held_out = [&](const std::string& f) {
    for (const std::string& h : held_out.files) {
      std::error_code ec;
      if (fs::equivalent(f, h, ec)) return true;
    }
    return false;
  };
  std::vector<std::string> kept;
  for (const std::string& f : train.files) (is_held_out(f) ? left_out : kept).push_back(f);
  train.files = std::move(kept);
  return left_out;
}

}  // namespace ort_train
