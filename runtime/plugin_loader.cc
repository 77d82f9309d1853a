#include "runtime/plugin_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace ort_train {

std::string load_plugin(const std::string& file_name, const char* env_var) {
  namespace fs = std::filesystem;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv(env_var); env && *env) candidates.push_back(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back((exe.parent_path() / file_name).string());
    candidates.push_back((exe.parent_path().parent_path() / file_name).string());
    candidates.push_back((exe.parent_path().parent_path() / "lib" / file_name).string());
  }
  candidates.push_back(file_name);
  for (const std::string& c : candidates) {
    bool is_path = c.find('/') != std::string::npos;
    if (is_path && !fs::exists(c, ec)) continue;
    if (dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL)) return "";
    return dlerror();  // found but not loadable (a library it needs is missing): say so
  }
  return "the plugin " + file_name + " was not found next to the executable";
}

}  // namespace ort_train
