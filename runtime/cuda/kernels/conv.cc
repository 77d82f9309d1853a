// CUDA registrations: Conv and ConvGrad (dX, dW, dB) on cuDNN's legacy
// convolution API, float32, 1-D (as 2-D with a unit height), 2-D and 3-D, with
// groups, strides, dilations and pads (auto_pad resolved by window_geometry).
// cuDNN takes symmetric pads only: an asymmetric pair (b, e) runs as the
// symmetric min(b, e) over a copy of X zero-padded by the rest, and dX is read
// back out of that copy's gradient. dB is a deterministic double-precision channel sum
// (cuda_kernels/batch_norm.h), as on the CPU.
#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <vector>

#include "cuda_kernels/batch_norm.h"
#include "cuda_kernels/copy.h"
#include "graph/ops/window_geometry.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/index_maps.h"

namespace ort_train::cuda {
namespace {

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc() = default;
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  ~TensorDesc() {
    if (d) cudnnDestroyTensorDescriptor(d);
  }
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc() = default;
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  ~FilterDesc() {
    if (d) cudnnDestroyFilterDescriptor(d);
  }
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc() = default;
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  ~ConvDesc() {
    if (d) cudnnDestroyConvolutionDescriptor(d);
  }
};

// Descriptors of one convolution; `key` identifies its shape and settings for the algorithm cache.
struct ConvSetup {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  std::vector<int> key;
  // X as cuDNN sees it: X itself, or X zero-padded by the asymmetric part of
  // the pads, with `interior` the place of X (and of dX in its gradient) in it.
  Dims x_padded;
  bool padded = false;
  CopyMap interior;
};

Status set_tensor(cudnnTensorDescriptor_t& d, const std::vector<int>& dims) {
  CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&d));
  std::vector<int> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  CUDNN_RETURN_IF_ERROR(
      cudnnSetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, static_cast<int>(dims.size()), dims.data(), strides.data()));
  return Status::Ok();
}

Result<std::vector<int>> to_int(const KernelContext& ctx, const std::vector<int64_t>& v) {
  std::vector<int> out;
  for (int64_t x : v) {
    if (x < 0 || x > INT_MAX) return unsupported("{}: dimension {} is out of cuDNN's range", ctx.node().describe(), x);
    out.push_back(static_cast<int>(x));
  }
  return out;
}

// x_dims, w_dims, y_dims: X, W and Y (or dY) of the forward convolution.
Status setup(const KernelContext& ctx, const Dims& x_dims, const Dims& w_dims, const Dims& y_dims, ConvSetup& s) {
  const Node& node = ctx.node();
  size_t rank = x_dims.size();
  if (rank < 3 || rank > 5)
    return unsupported("{}: the CUDA kernel takes 1 to 3 spatial dims, got input rank {}", node.describe(), rank);
  if (w_dims.size() != rank || y_dims.size() != rank)
    return shape_error("{}: X, W and Y must have the same rank", node.describe());
  int64_t group = node.attr_int("group", 1);
  int64_t C = x_dims[1], M = w_dims[0];
  if (group <= 0 || C % group != 0 || M % group != 0 || w_dims[1] * group != C || y_dims[1] != M ||
      y_dims[0] != x_dims[0])
    return shape_error("{}: X {}, W {} and Y {} do not fit {} groups", node.describe(), dims_to_string(x_dims),
                       dims_to_string(w_dims), dims_to_string(y_dims), group);
  std::vector<int64_t> spatial(x_dims.begin() + 2, x_dims.end()), kernel(w_dims.begin() + 2, w_dims.end());
  ASSIGN_OR_RETURN(auto geo, window_geometry(node, spatial, kernel, false));
  s.x_padded = x_dims;
  std::vector<int64_t> extra_begin(rank, 0);
  for (size_t d = 0; d < geo.size(); ++d) {
    const WindowDim& w = geo[d];
    int64_t m = std::min(w.pad_begin, w.pad_end);
    if (m < 0) return unsupported("{}: negative pads on spatial dim {}", node.describe(), d);
    extra_begin[2 + d] = w.pad_begin - m;
    s.x_padded[2 + d] += w.pad_begin + w.pad_end - 2 * m;
  }
  s.padded = s.x_padded != x_dims;
  if (s.padded) {
    Dims padded_strides = row_major_strides(s.x_padded);
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += extra_begin[d] * padded_strides[d];
    ASSIGN_OR_RETURN(s.interior, strided_map(x_dims, padded_strides, offset));
  }
  std::vector<int64_t> xs(s.x_padded), ws(w_dims), ys(y_dims), pads, strides, dils;
  if (rank == 3) {  // 1-D as 2-D with a unit height
    xs.insert(xs.begin() + 2, 1);
    ws.insert(ws.begin() + 2, 1);
    ys.insert(ys.begin() + 2, 1);
    pads.push_back(0);
    strides.push_back(1);
    dils.push_back(1);
  }
  for (size_t d = 0; d < geo.size(); ++d) {
    const WindowDim& w = geo[d];
    if (w.out != y_dims[2 + d])
      return shape_error("{}: output spatial dim {} is {}, the geometry gives {}", node.describe(), d, y_dims[2 + d],
                         w.out);
    pads.push_back(std::min(w.pad_begin, w.pad_end));
    strides.push_back(w.stride);
    dils.push_back(w.dilation);
  }
  ASSIGN_OR_RETURN(std::vector<int> xi, to_int(ctx, xs));
  ASSIGN_OR_RETURN(std::vector<int> wi, to_int(ctx, ws));
  ASSIGN_OR_RETURN(std::vector<int> yi, to_int(ctx, ys));
  ASSIGN_OR_RETURN(std::vector<int> pi, to_int(ctx, pads));
  ASSIGN_OR_RETURN(std::vector<int> si, to_int(ctx, strides));
  ASSIGN_OR_RETURN(std::vector<int> di, to_int(ctx, dils));
  int nb = static_cast<int>(xi.size());
  RETURN_IF_ERROR(set_tensor(s.x.d, xi));
  RETURN_IF_ERROR(set_tensor(s.y.d, yi));
  CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&s.w.d));
  CUDNN_RETURN_IF_ERROR(cudnnSetFilterNdDescriptor(s.w.d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, nb, wi.data()));
  CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&s.conv.d));
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionNdDescriptor(s.conv.d, nb - 2, pi.data(), si.data(), di.data(),
                                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionGroupCount(s.conv.d, static_cast<int>(group)));
  // DEFAULT_MATH still lets cuDNN use TF32 on Ampere+; FMA_MATH is the strict float32 mode.
  bool tf32 = context().allow_tf32;
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(s.conv.d, tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  std::vector<int> expect(static_cast<size_t>(nb));
  CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionNdForwardOutputDim(s.conv.d, s.x.d, s.w.d, nb, expect.data()));
  if (expect != yi) return shape_error("{}: cuDNN's output shape differs from Y {}", node.describe(), dims_to_string(y_dims));
  s.key = {nb};
  for (const auto* v : {&xi, &wi, &pi, &si, &di}) s.key.insert(s.key.end(), v->begin(), v->end());
  s.key.push_back(static_cast<int>(group));
  s.key.push_back(context().deterministic);
  s.key.push_back(tf32);
  return Status::Ok();
}

enum class Pass : int { kForward, kBackwardData, kBackwardFilter };

struct AlgoChoice {
  int algo = 0;
  size_t workspace = 0;
};

// Deterministic mode: the fixed algorithm, else the heuristics' deterministic
// ones; otherwise the heuristics' order. The first whose workspace query
// succeeds is cached per shape and settings.
template <typename Perf, typename Algo, typename MaxCount, typename Heuristics, typename Workspace>
Result<AlgoChoice> choose(const KernelContext& ctx, const ConvSetup& s, Pass pass, Algo fixed, MaxCount max_count,
                          Heuristics heuristics, Workspace workspace) {
  static std::mutex mu;
  static std::map<std::vector<int>, AlgoChoice> cache;
  std::vector<int> key = s.key;
  key.push_back(static_cast<int>(pass));
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  bool det = context().deterministic;
  std::vector<Algo> candidates;
  if (det) candidates.push_back(fixed);
  int n = 0, got = 0;
  CUDNN_RETURN_IF_ERROR(max_count(&n));
  std::vector<Perf> perf(static_cast<size_t>(n));
  if (n > 0) CUDNN_RETURN_IF_ERROR(heuristics(n, &got, perf.data()));
  for (int i = 0; i < got; ++i) {
    const Perf& p = perf[static_cast<size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS || (det && p.determinism != CUDNN_DETERMINISTIC)) continue;
    candidates.push_back(p.algo);
  }
  for (Algo a : candidates) {
    size_t bytes = 0;
    if (workspace(a, &bytes) != CUDNN_STATUS_SUCCESS) continue;
    AlgoChoice c{static_cast<int>(a), bytes};
    cache.emplace(std::move(key), c);
    return c;
  }
  return unsupported("{}: no cuDNN convolution algorithm for this shape{}", ctx.node().describe(),
                     det ? " in deterministic mode" : "");
}

Result<Tensor> workspace_buffer(KernelContext& ctx, size_t bytes) {
  if (bytes == 0) return Tensor();
  return temp(ctx, DType::kUInt8, {static_cast<int64_t>(bytes)});
}

// X where cuDNN reads it: X itself, or its zero-padded copy (ConvSetup::padded).
Result<Tensor> padded_input(KernelContext& ctx, const ConvSetup& s, const Tensor& X) {
  if (!s.padded) return X;
  ASSIGN_OR_RETURN(Tensor xp, temp(ctx, X.dtype(), s.x_padded));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(xp.raw(), 0, xp.nbytes(), stream()));
  CUDA_RETURN_IF_ERROR(launch_scatter_copy(X.raw(), xp.raw(), X.numel(), static_cast<int>(dtype_size(X.dtype())),
                                           s.interior, stream()));
  return xp;
}

Status conv(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  for (size_t i = 0; i < 3; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, ctx.input(i).dtype());
  CUDA_OUTPUT(Y, ctx, 0);
  if (Y.numel() == 0) return Status::Ok();
  if (X.numel() == 0 || W.numel() == 0)
    return unsupported("{}: the CUDA kernel does not take an empty X or W with a non-empty Y", ctx.node().describe());
  ConvSetup s;
  RETURN_IF_ERROR(setup(ctx, X.dims(), W.dims(), Y.dims(), s));
  ASSIGN_OR_RETURN(Tensor Xc, padded_input(ctx, s, X));
  cudnnHandle_t h = context().cudnn;
  ASSIGN_OR_RETURN(AlgoChoice c, (choose<cudnnConvolutionFwdAlgoPerf_t>(
                                     ctx, s, Pass::kForward, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                     [&](int* n) { return cudnnGetConvolutionForwardAlgorithmMaxCount(h, n); },
                                     [&](int n, int* got, cudnnConvolutionFwdAlgoPerf_t* p) {
                                       return cudnnGetConvolutionForwardAlgorithm_v7(h, s.x.d, s.w.d, s.conv.d, s.y.d,
                                                                                     n, got, p);
                                     },
                                     [&](cudnnConvolutionFwdAlgo_t a, size_t* bytes) {
                                       return cudnnGetConvolutionForwardWorkspaceSize(h, s.x.d, s.w.d, s.conv.d,
                                                                                      s.y.d, a, bytes);
                                     })));
  ASSIGN_OR_RETURN(Tensor ws, workspace_buffer(ctx, c.workspace));
  float one = 1.f, zero = 0.f;
  CUDNN_RETURN_IF_ERROR(cudnnConvolutionForward(h, &one, s.x.d, Xc.raw(), s.w.d, W.raw(), s.conv.d,
                                                static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), ws.raw(), c.workspace,
                                                &zero, s.y.d, Y.raw()));
  if (ctx.has_input(2)) {
    const Tensor& B = ctx.input(2);
    int64_t M = W.dims()[0];
    if (B.numel() != M)
      return shape_error("{}: bias has {} elements, W has {} output channels", ctx.node().describe(), B.numel(), M);
    std::vector<int> bd(Y.dims().size() < 4 ? 4 : Y.dims().size(), 1);
    bd[1] = static_cast<int>(M);
    TensorDesc bias;
    RETURN_IF_ERROR(set_tensor(bias.d, bd));
    CUDNN_RETURN_IF_ERROR(cudnnAddTensor(h, &one, bias.d, B.raw(), &one, s.y.d, Y.raw()));
  }
  return Status::Ok();
}

Status conv_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  const Tensor& X = ctx.input(1);
  const Tensor& W = ctx.input(2);
  for (size_t i = 0; i < 3; ++i)
    if (ctx.input(i).dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, ctx.input(i).dtype());
  bool want_dx = ctx.has_output(0), want_dw = ctx.num_outputs() > 1 && ctx.has_output(1);
  bool want_db = ctx.num_outputs() > 2 && ctx.has_output(2);
  if (dY.rank() < 2) return shape_error("{}: dY must have rank >= 2", ctx.node().describe());
  cudnnHandle_t h = context().cudnn;
  float one = 1.f, zero = 0.f;
  bool empty = dY.numel() == 0 || X.numel() == 0 || W.numel() == 0;
  ConvSetup s;
  if ((want_dx || want_dw) && !empty) RETURN_IF_ERROR(setup(ctx, X.dims(), W.dims(), dY.dims(), s));
  if (want_dx) {
    CUDA_OUTPUT(dX, ctx, 0);
    if (empty) {
      if (dX.nbytes()) CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dX.raw(), 0, dX.nbytes(), stream()));
    } else {
      ASSIGN_OR_RETURN(AlgoChoice c,
                       (choose<cudnnConvolutionBwdDataAlgoPerf_t>(
                           ctx, s, Pass::kBackwardData, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                           [&](int* n) { return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, n); },
                           [&](int n, int* got, cudnnConvolutionBwdDataAlgoPerf_t* p) {
                             return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, s.w.d, s.y.d, s.conv.d, s.x.d, n,
                                                                               got, p);
                           },
                           [&](cudnnConvolutionBwdDataAlgo_t a, size_t* bytes) {
                             return cudnnGetConvolutionBackwardDataWorkspaceSize(h, s.w.d, s.y.d, s.conv.d, s.x.d, a,
                                                                                 bytes);
                           })));
      ASSIGN_OR_RETURN(Tensor ws, workspace_buffer(ctx, c.workspace));
      Tensor dXc = dX;  // with padding: the gradient of the padded copy, whose interior is dX
      if (s.padded) {
        ASSIGN_OR_RETURN(dXc, temp(ctx, dX.dtype(), s.x_padded));
      }
      CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardData(h, &one, s.w.d, W.raw(), s.y.d, dY.raw(), s.conv.d,
                                                         static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), ws.raw(),
                                                         c.workspace, &zero, s.x.d, dXc.raw()));
      if (s.padded)
        CUDA_RETURN_IF_ERROR(launch_gather_copy(dXc.raw(), dX.raw(), dX.numel(),
                                                static_cast<int>(dtype_size(dX.dtype())), s.interior, stream()));
    }
  }
  if (want_dw) {
    CUDA_OUTPUT(dW, ctx, 1);
    if (empty) {
      if (dW.nbytes()) CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dW.raw(), 0, dW.nbytes(), stream()));
    } else {
      ASSIGN_OR_RETURN(AlgoChoice c,
                       (choose<cudnnConvolutionBwdFilterAlgoPerf_t>(
                           ctx, s, Pass::kBackwardFilter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
                           [&](int* n) { return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, n); },
                           [&](int n, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* p) {
                             return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, s.x.d, s.y.d, s.conv.d, s.w.d, n,
                                                                                 got, p);
                           },
                           [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* bytes) {
                             return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, s.x.d, s.y.d, s.conv.d, s.w.d,
                                                                                   a, bytes);
                           })));
      ASSIGN_OR_RETURN(Tensor ws, workspace_buffer(ctx, c.workspace));
      ASSIGN_OR_RETURN(Tensor Xc, padded_input(ctx, s, X));
      CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardFilter(h, &one, s.x.d, Xc.raw(), s.y.d, dY.raw(), s.conv.d,
                                                           static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo),
                                                           ws.raw(), c.workspace, &zero, s.w.d, dW.raw()));
    }
  }
  if (want_db) {
    CUDA_OUTPUT(dB, ctx, 2);
    int64_t N = dY.dims()[0], M = dY.dims()[1];
    int64_t S = N * M == 0 ? 0 : dY.numel() / (N * M);
    if (dB.numel() != M)
      return shape_error("{}: dB has {} elements, dY has {} channels", ctx.node().describe(), dB.numel(), M);
    ASSIGN_OR_RETURN(Tensor sums, temp(ctx, DType::kDouble, {M}));
    ASSIGN_OR_RETURN(Tensor partials, temp(ctx, DType::kDouble, {channel_sum_partials(N, M, S)}));
    CUDA_RETURN_IF_ERROR(launch_channel_sums(ChannelSum::kX, dY.data<float>(), nullptr, nullptr, nullptr, N, M, S, 1.0,
                                             partials.data<double>(), sums.data<double>(), nullptr, stream()));
    CUDA_RETURN_IF_ERROR(launch_store_float(sums.data<double>(), dB.data<float>(), M, stream()));
  }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("Conv", 1, 1000, conv);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "ConvGrad", 1, 1000, conv_grad);

}  // namespace ort_train::cuda
