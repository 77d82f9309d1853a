// oneDNN's own convolution on the CPU, float32, forward (Conv) and backward
// (ConvGrad: dX by backward data, dW and dB by backward weights), as a third
// candidate of the measured choice of Conv and ConvGrad (issue 54, item 2;
// runtime/cpu/gemm_backend.h). The other two are the im2col + GEMM kernels
// with OpenBLAS's or oneDNN's sgemm. oneDNN's direct convolutions read and
// write blocked layouts (nChw8c on AVX2, nChw16c on AVX-512), so each call
// reorders the plain NCHW tensors in and out; whether that still wins is
// what the measurement says, per shape, on the user's machine. It runs only
// where the choice is measured (--gemm-library measured, or a kernel-choices
// file that names it); a shape oneDNN makes no convolution for is an error
// that drops the candidate.
#pragma once
#include "runtime/kernel.h"

namespace ort_train {

// Conv(X, W[, B]) -> Y, float32, 1-D to 3-D, any group, stride, dilation and pads.
Status onednn_conv_forward(KernelContext& ctx);

// ConvGrad(dY, X, W) -> dX, dW, dB with the forward's attributes; outputs left
// out of the node are not computed.
Status onednn_conv_backward(KernelContext& ctx);

// How many convolutions (forward or backward) oneDNN has run in this process
// (tests: that a choice of "onednn_conv" reaches it).
int64_t onednn_convolutions();

}  // namespace ort_train
