// The 16-bit CPU kernels of half_activations' ops (runtime/cpu/kernels/
// half_twins.cc): each output is the float32 kernel's on the widened inputs,
// rounded once, bit for bit; Dropout draws the float32 kernel's mask; the CUDA
// kernels' per-element functions (cuda_kernels/elementwise.h's half_*) give
// the same bits on the host.
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "cuda_kernels/elementwise.h"
#include "numerics/float16.h"
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

template <typename H>
void require_same_bits(const Tensor& actual, const Tensor& expected) {
  REQUIRE(actual.dtype() == expected.dtype());
  REQUIRE(actual.dims() == expected.dims());
  int64_t differ = 0;
  for (int64_t i = 0; i < actual.numel(); ++i) differ += actual.data<H>()[i].bits != expected.data<H>()[i].bits;
  CHECK(differ == 0);
}

// The node run on 16-bit inputs against the float32 node on their widened
// values, rounded: inputs are narrowed copies of `inputs` (float ones only).
template <typename H>
void check_twin(NodeSpec spec) {
  NodeSpec low = spec, wide = spec;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (!spec.inputs[i].defined() || spec.inputs[i].dtype() != DType::kFloat || (spec.op == "Dropout" && i > 0))
      continue;
    low.inputs[i] = narrowed<H>(spec.inputs[i]);
    wide.inputs[i] = widened<H>(low.inputs[i]);
  }
  auto got = run_node(low);
  auto want = run_node(wide);
  REQUIRE(got.size() == want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    if (want[o].dtype() != DType::kFloat) {
      CHECK(std::memcmp(got[o].raw(), want[o].raw(), want[o].nbytes()) == 0);  // Dropout's mask
      continue;
    }
    require_same_bits<H>(got[o], narrowed<H>(want[o]));
  }
}

// The CUDA kernels' element functions on the host against the CPU's 16-bit
// kernel: equal, or one unit apart where the CPU's vectorized exp/tanh/erf
// (runtime/cpu/vector_math.h) and the C library's differ in float32's last
// bit right at a 16-bit rounding boundary, or within 1e-6 where GELU's tail is
// tiny: the device's 0.5 x (1 + erf(x/sqrt 2)) cancels there, absolute error
// about |x| float32 epsilons, as its float32 kernel does.
template <typename H, typename F>
void check_device_elements(const std::string& what, const std::vector<Tensor>& inputs, const Tensor& cpu, F element) {
  int64_t equal = 0, one_unit = 0, more = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    H d = element(i);
    H c = cpu.data<H>()[i];
    int diff = std::abs(static_cast<int>(d.bits) - static_cast<int>(c.bits));
    bool tail = std::abs(static_cast<float>(d) - static_cast<float>(c)) <= 1e-6f;
    (diff == 0 ? equal : diff == 1 || tail ? one_unit : more)++;
  }
  INFO(what << ": " << equal << " equal, " << one_unit << " one unit apart, " << more << " further");
  CHECK(more == 0);
  CHECK(one_unit * 8 <= cpu.numel());
  (void)inputs;
}

template <typename H>
void check_device_arithmetic(const Tensor& x, const Tensor& y) {
  using namespace ort_train::cuda;
  Tensor a = narrowed<H>(x), b = narrowed<H>(y);
  const H* pa = a.data<H>();
  const H* pb = b.data<H>();
  const std::pair<const char*, UnaryOp> unary[] = {{"Relu", UnaryOp::kRelu}, {"Tanh", UnaryOp::kTanh},
                                                   {"Sigmoid", UnaryOp::kSigmoid}, {"Neg", UnaryOp::kNeg}};
  for (const auto& [op, unary_op] : unary) {
    UnaryOp u = unary_op;  // clang before 16 cannot capture a structured binding in a lambda
    Tensor cpu = run_node({op, {a}, {}, 1, 17})[0];
    check_device_elements<H>(op, {a}, cpu, [&](int64_t i) { return half_unary_value<H>(u, pa[i], 0.f); });
  }
  Tensor gelu = run_node({"Gelu", {a}, {}, 1, 20})[0];
  check_device_elements<H>("Gelu", {a}, gelu, [&](int64_t i) { return half_unary_value<H>(UnaryOp::kGelu, pa[i], 0.f); });
  Tensor gelu_tanh = run_node({"Gelu", {a}, {Attribute::make_string("approximate", "tanh")}, 1, 20})[0];
  check_device_elements<H>("Gelu tanh", {a}, gelu_tanh,
                           [&](int64_t i) { return half_unary_value<H>(UnaryOp::kGeluTanh, pa[i], 0.f); });
  Tensor silu = run_node({"Silu", {a}, {}, 1, 1, {}, kOrtTrainDomain})[0];
  check_device_elements<H>("Silu", {a}, silu, [&](int64_t i) { return half_unary_value<H>(UnaryOp::kSilu, pa[i], 0.f); });
  const std::pair<const char*, BinaryOp> binary[] = {
      {"Add", BinaryOp::kAdd}, {"Sub", BinaryOp::kSub}, {"Mul", BinaryOp::kMul}, {"Div", BinaryOp::kDiv}};
  for (const auto& [op, binary_op] : binary) {
    BinaryOp o = binary_op;
    Tensor cpu = run_node({op, {a, b}, {}, 1, 17})[0];
    check_device_elements<H>(op, {a, b}, cpu, [&](int64_t i) { return half_binary_value<H>(o, pa[i], pb[i]); });
  }
  const std::pair<const char*, ActivationGrad> grads[] = {{"ReluGrad", ActivationGrad::kRelu},
                                                          {"SigmoidGrad", ActivationGrad::kSigmoid},
                                                          {"TanhGrad", ActivationGrad::kTanh},
                                                          {"GeluGrad", ActivationGrad::kGelu},
                                                          {"SiluGrad", ActivationGrad::kSilu}};
  for (const auto& [op, grad_op] : grads) {
    ActivationGrad g = grad_op;
    Tensor cpu = run_node({op, {b, a}, {}, 1, 1, {}, kOrtTrainDomain})[0];
    check_device_elements<H>(op, {b, a}, cpu,
                             [&](int64_t i) { return half_activation_grad_value<H>(g, pb[i], pa[i], 0.f); });
  }
}

template <typename H>
void check_all_twins() {
  Tensor x = random_tensor({3, 5, 8}, 11, -4.f, 4.f), y = random_tensor({3, 5, 8}, 12, -4.f, 4.f);
  Tensor row = random_tensor({8}, 13, 0.5f, 2.f);
  for (const char* op : {"Relu", "Tanh", "Sigmoid", "Neg"}) check_twin<H>({op, {x}, {}, 1, 17});
  check_twin<H>({"Gelu", {x}, {Attribute::make_string("approximate", "tanh")}, 1, 20});
  check_twin<H>({"Gelu", {x}, {}, 1, 1, {}, kOrtTrainDomain});
  check_twin<H>({"Silu", {x}, {}, 1, 1, {}, kOrtTrainDomain});
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    check_twin<H>({op, {x, y}, {}, 1, 17});
    check_twin<H>({op, {x, row}, {}, 1, 17});  // broadcast
  }
  check_twin<H>({"Sum", {x, y}, {}, 1, 17});
  {  // three inputs: rounded after each addition
    Tensor a = narrowed<H>(x), b = narrowed<H>(y), c = narrowed<H>(random_tensor({3, 5, 8}, 14, -4.f, 4.f));
    Tensor got = run_node({"Sum", {a, b, c}, {}, 1, 17})[0];
    Tensor want = Tensor::host(a.dtype(), a.dims());
    for (int64_t i = 0; i < a.numel(); ++i) {
      H ab(static_cast<float>(a.data<H>()[i]) + static_cast<float>(b.data<H>()[i]));
      want.data<H>()[i] = H(static_cast<float>(ab) + static_cast<float>(c.data<H>()[i]));
    }
    require_same_bits<H>(got, want);
  }
  for (const char* op : {"ReluGrad", "SigmoidGrad", "TanhGrad", "GeluGrad", "SiluGrad"})
    check_twin<H>({op, {y, x}, {}, 1, 1, {}, kOrtTrainDomain});
  NodeSpec dropout{"Dropout", {x, Tensor::scalar_f32(0.25f), Tensor::from_vector<bool>({}, {true})}, {}, 2, 17};
  dropout.run_options.seed = 7;
  check_twin<H>(dropout);
  Tensor mask = run_node(dropout)[1];
  check_twin<H>({"DropoutGrad", {y, mask, Tensor::scalar_f32(0.25f), Tensor::from_vector<bool>({}, {true})}, {}, 1, 1,
                 {}, kOrtTrainDomain});
}

}  // namespace

TEST_CASE("half twins: bfloat16 kernels are the float32 kernels rounded once", "[kernels][half]") {
  check_all_twins<BFloat16>();
}

TEST_CASE("half twins: float16 kernels are the float32 kernels rounded once", "[kernels][half]") {
  check_all_twins<Float16>();
}

TEST_CASE("half twins: the CUDA 16-bit element functions give the CPU kernels' values", "[kernels][half]") {
  Tensor x = random_tensor({4096}, 21, -6.f, 6.f), y = random_tensor({4096}, 22, -6.f, 6.f);
  check_device_arithmetic<BFloat16>(x, y);
  check_device_arithmetic<Float16>(x, y);
}
