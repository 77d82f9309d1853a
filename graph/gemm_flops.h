// The multiply-add work of a graph's products, by the element type they run
// in: what `inspect` reports as the share of a step in low precision under
// --precision bf16. Counted: MatMul, Gemm, com.ort_train FusedMatMul (2*M*N*K
// per product), Conv (2 * output elements * input channels per group *
// kernel size) and ConvGrad (twice that, for dX and dW), com.ort_train
// Attention (Q K^T and P V: 2*B*H*T*S*(D + Dv)) and AttentionGrad (twice
// that). Elementwise work is not counted.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace ort_train {

struct GemmFlops {
  std::map<DType, double> by_dtype;  // FLOPs (2 per multiply-add) of the nodes whose shapes are known
  std::vector<std::string> unknown;  // products whose shapes are not all known (not counted)
  double total() const;
  double fraction(DType t) const;    // of total(); 0 when nothing was counted
};

GemmFlops count_gemm_flops(const Graph& g);

}  // namespace ort_train
