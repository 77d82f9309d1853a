// Paths written inside files from others (an initializer's external-data
// location) name files in that file's folder, never elsewhere: a downloaded
// model must not point ort_train at /etc/passwd or ~/.ssh. The rule: no
// absolute path, and after `..` and symlinks are resolved, the file is still
// inside the folder; the caller opens `resolved`, the path it checked. (A
// description is its user's own configuration and is not confined.)
#pragma once
#include <filesystem>
#include <string>

namespace ort_train {

struct ConfinedPath {
  std::filesystem::path folder;    // the folder, absolute, symlinks resolved
  std::filesystem::path resolved;  // folder / relative, absolute, symlinks resolved
  bool absolute = false;           // `relative` was absolute (resolved is then empty)
  bool inside = false;             // resolved lies inside folder
  std::string error;               // the filesystem's error, when resolution failed
};

// Resolves `relative` against `folder` ("" means the working directory).
ConfinedPath confine_path(const std::string& folder, const std::string& relative);

}  // namespace ort_train
