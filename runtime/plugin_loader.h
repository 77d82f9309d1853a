// Loading an optional part of ort_train built as a shared library (the CUDA
// plugin, the MPI plugin), so a run that never needs it does not load its
// dependencies. A plugin's registrars run when it loads; its calls into the
// core resolve against the executable.
#pragma once
#include <string>

namespace ort_train {

// Looks for `file_name` in $`env_var` (a path), next to the executable, one
// folder up, in ../lib beside it, then on the library path, and dlopens the
// first found. Returns why it is unavailable, or "" when it loaded.
std::string load_plugin(const std::string& file_name, const char* env_var);

}  // namespace ort_train
