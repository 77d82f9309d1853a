// The forward model that `train --export` writes, kept through the run
// without holding its weights. Training reads most initializers as they are
// (trainable ones, trained in place; frozen weights read directly; running
// statistics updated in place), but the graph's passes fold some frozen
// weights into copies of their own (the Transpose of an nn.Linear weight, a
// Cast to bf16) and release the originals: a kept reference would hold them
// beside the copies, twice the weights at the peak of a LoRA run (1.5x in
// bf16). So the model is kept as its structure, a weak reference per
// initializer and a hash of each one's bytes. At the export the references
// still alive give the tensors as training left them; the released ones are
// read again from the model file, each checked against its hash, so that a
// file replaced during the run is an error, not another model's weights.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "graph/graph.h"
#include "graph/status.h"

namespace ort_train {

class ForwardForExport {
 public:
  ForwardForExport() = default;
  // `forward` as loaded from `model_path`; its tensors are not held.
  ForwardForExport(const Model& forward, std::string model_path);

  // The initializers still alive, as training left them; call while the
  // trainer (which holds them) exists. The released ones are left out.
  Model with_live_initializers() const;
  // Reads the released initializers of `m` (with_live_initializers') back
  // from the model file, each checked against its hash.
  Status read_released(Model& m) const;

 private:
  struct Kept {
    DType dtype = DType::kUndefined;
    Dims dims;
    std::weak_ptr<Storage> storage;
    uint64_t hash = 0;
  };
  Model structure_;  // the graph without initializer tensors
  std::map<std::string, Kept> kept_;
  std::string model_path_;
};

// A hash of a tensor's dtype, dims and bytes, 8 bytes at a time.
uint64_t tensor_content_hash(const Tensor& t);

}  // namespace ort_train
