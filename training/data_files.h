// What a --data path names (spec section 3): "synthetic"; one .npz or token
// .bin file; a folder holding .npz or .bin shards (else batch
// sub-directories); a glob ('shards/*.npz'); or a list file naming shards,
// one per line, relative to the list's folder ('#' starts a comment).
#pragma once
#include <string>
#include <vector>

#include "graph/status.h"

namespace ort_train {

struct DataFiles {
  enum class Kind { kSynthetic, kBatchDirs, kNpz, kTokens };
  Kind kind = Kind::kSynthetic;
  // Shards in the order rows are numbered: a folder's and a glob's sorted by
  // name, a list file's as listed. kBatchDirs: the folder itself.
  std::vector<std::string> files;
};

Result<DataFiles> resolve_data_files(const std::string& data);

// Removes from `train` every shard that is the same file as one of
// `held_out`'s (--data examples/bert/data holds eval.npz, the --eval-data):
// held-out rows are never trained on. Returns the shards removed.
std::vector<std::string> leave_out_held_out(DataFiles& train, const DataFiles& held_out);

}  // namespace ort_train
