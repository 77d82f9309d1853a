// Data read a row (a sample) at a time, from files that stay on disk: NPZ
// shards (training/npz_shards.cc) and token files (training/token_shards.cc).
// A micro-batch is a list of global row numbers (training/row_order.h picks
// them); nothing holds more than the rows asked for. read() may be called
// from several threads at once (--prefetch).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"

namespace ort_train {

class ReadableBytes;

class RowDataset {
 public:
  virtual ~RowDataset() = default;
  virtual uint64_t rows() const = 0;
  // The rows, in this order, stacked along a new first axis: one tensor per name.
  virtual Result<std::map<std::string, Tensor>> read(const std::vector<uint64_t>& rows) const = 0;
  // What ranks compare and the log shows: shard count, rows, bytes.
  virtual std::string describe() const = 0;
};

// NPZ shards, each a set of arrays sharing their first dim (the rows), like one
// NPZ. Every shard must hold each of `names` with the same dtype and the same
// trailing dims; shards may differ in rows. A bad shard is named.
Result<std::unique_ptr<RowDataset>> open_npz_shards(const std::vector<std::string>& files,
                                                   const std::vector<std::string>& names);

// How a token file's windows become a model's inputs.
struct TokenWindows {
  int64_t seq = 0;              // tokens per row of input_ids; a row reads seq + 1
  std::string input_ids;        // gets tokens [0, seq) of the window
  std::string labels;           // gets tokens [1, seq + 1), or [0, seq) when !shift_labels ("" for none)
  bool shift_labels = true;     // false for models that shift their labels themselves (Hugging Face's *LMHeadModel)
  DType input_dtype = DType::kInt64, labels_dtype = DType::kInt64;
  std::map<std::string, std::pair<DType, double>> fill;  // other [batch, seq] inputs, one value throughout
  // Files without llm.c's header: the token width (uint16, as nanoGPT
  // writes; kUInt32 for vocabularies past 65,536).
  DType raw_dtype = DType::kUInt16;
};

// Token files: llm.c's (a 256-int32 header: magic 20240520 with version 1 for
// uint16 tokens, 20240801 with version 7 for uint32, then the token count)
// or nanoGPT's raw token arrays. Row r of a file is the window of seq + 1
// tokens from token r * seq: consecutive rows overlap by the one token that
// is the last label of one and the first input of the next.
Result<std::unique_ptr<RowDataset>> open_token_shards(const std::vector<std::string>& files, const TokenWindows& w);
// The same over bytes already open (the fuzz target's, a test's).
Result<std::unique_ptr<RowDataset>> token_shards_of(const std::vector<std::shared_ptr<const ReadableBytes>>& files,
                                                    const TokenWindows& w);

}  // namespace ort_train
