#include "graph/confined_path.h"

#include <algorithm>

namespace ort_train {
namespace fs = std::filesystem;

ConfinedPath confine_path(const std::string& folder, const std::string& relative) {
  ConfinedPath c;
  std::error_code ec;
  c.folder = fs::weakly_canonical(fs::absolute(folder.empty() ? "." : folder, ec), ec);
  if (fs::path(relative).is_absolute()) {
    c.absolute = true;
    return c;
  }
  c.resolved = fs::weakly_canonical(c.folder / relative, ec);  // symlinks resolved
  if (ec) {
    c.error = ec.message();
    return c;
  }
  auto [f, r] = std::mismatch(c.folder.begin(), c.folder.end(), c.resolved.begin(), c.resolved.end());
  c.inside = f == c.folder.end();
  return c;
}

}  // namespace ort_train
