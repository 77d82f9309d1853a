// The gradients' norm taken during the backward: each gradient's sums of
// squares are read as the run makes it final (RunOptions::on_output_ready, on
// the step's last micro-batch), while it is still in cache, so the step reads
// the gradients once after the backward (the optimizer's pass) instead of
// twice (the norm, then the pass).
//
// The same fixed chunks as VectorOps::global_norm, added in the same order
// (tensor by tensor, chunk by chunk) when the step asks: the same norm to the
// bit, whatever order the backward finished the gradients in. A gradient no
// node made (a constant one, which the run never reports) is read at finish().
//
// For one rank on the CPU with float32 gradients: under data parallelism the
// norm is of the sums over the ranks (after the reduction), a 16-bit
// gradient's is of its float32 master (summed after the run), and on a GPU a
// norm per gradient would be a synchronization each.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"
#include "runtime/vector_ops.h"

namespace ort_train {

class BackwardNorm {
 public:
  // `gradients[i]` is the buffer graph output `outputs[i]` ends in.
  BackwardNorm(const std::vector<std::string>& outputs, std::vector<Tensor> gradients, VectorOps& math);
  // Before the run that makes the gradients final.
  void begin();
  // RunOptions::on_output_ready: reads output `name` if it is a gradient.
  Status gradient_ready(const std::string& name);
  // The norm of every gradient (those the run did not report read now);
  // an error when begin() was not called this step.
  Result<double> finish();
  // Gradients read during the last run (the rest were read by finish()).
  size_t read_during_run() const { return read_during_run_; }

 private:
  std::vector<Tensor> gradients_;
  std::map<std::string, size_t> index_;      // output name -> gradient
  std::vector<std::vector<double>> partial_;  // each gradient's chunk sums
  std::vector<bool> read_;
  VectorOps* math_ = nullptr;
  bool begun_ = false;
  size_t read_during_run_ = 0;
};

}  // namespace ort_train
