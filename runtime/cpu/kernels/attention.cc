// The CPU kernels of com.ort_train Attention and AttentionGrad: the flash and
// gemm candidates (attention.h), chosen by measurement on the real shapes.
// Flash is the default (kept on a tie, and under --deterministic); both are
// deterministic, so a pinned run and a measured one differ only in which
// rounding they get.
#include "runtime/cpu/kernels/attention.h"

#include "runtime/kernel_choice.h"

namespace ort_train {
namespace {

const std::vector<KernelCandidate> kForward{{"flash", attention_flash, true}, {"gemm", attention_gemm, true}};
const std::vector<KernelCandidate> kBackward{{"flash", attention_grad_flash, true},
                                             {"gemm", attention_grad_gemm, true}};

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "Attention", 1, 1000, DeviceKind::kCpu,
                    measured_choice(DeviceKind::kCpu, kForward));
ORT_REGISTER_KERNEL(kOrtTrainDomain, "AttentionGrad", 1, 1000, DeviceKind::kCpu,
                    measured_choice(DeviceKind::kCpu, kBackward));
// 16-bit Q, K, V (half_activations'): one implementation, the gemm algorithm
// with the CUDA 16-bit kernel's rounding points.
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "Attention", 1, 1000, DeviceKind::kCpu, attention_gemm_half,
                               (std::vector<DType>{DType::kBFloat16, DType::kFloat16}));
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "AttentionGrad", 1, 1000, DeviceKind::kCpu, attention_grad_gemm_half,
                               (std::vector<DType>{DType::kBFloat16, DType::kFloat16}));

}  // namespace ort_train
