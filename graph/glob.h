// Shell-style globs on initializer names (trainable.include/exclude,
// optimizer.no_decay, lora.targets and lora.train_also): fnmatch with no
// flags, so `*` also crosses the dots of "layer.0.q_proj.weight".
#pragma once
#include <fnmatch.h>

#include <string>

namespace ort_train {

inline bool glob_match(const std::string& glob, const std::string& name) {
  return fnmatch(glob.c_str(), name.c_str(), 0) == 0;
}

}  // namespace ort_train
