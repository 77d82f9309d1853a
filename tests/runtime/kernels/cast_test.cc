// Cast and CastLike between float32/64, every integer type and bool.
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

Attribute to(DType t) { return Attribute::make_int("to", static_cast<int64_t>(t)); }

Tensor cast(const Tensor& x, DType t, int64_t opset = 13) { return run_node({"Cast", {x}, {to(t)}, 1, opset})[0]; }

}  // namespace

TEST_CASE("Cast float to every integer type truncates toward zero", "[kernels][Cast]") {
  auto x = make<float>({5}, {1.7f, -2.2f, 0.f, 100.9f, -0.5f});
  for (DType t : {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64}) {
    INFO(dtype_name(t));
    auto y = cast(x, t);
    REQUIRE(y.dtype() == t);
    REQUIRE(y.to_int64_vector() == std::vector<int64_t>{1, -2, 0, 100, 0});
  }
  auto pos = make<double>({3}, {0.9, 7.5, 250.0});
  for (DType t : {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64}) {
    INFO(dtype_name(t));
    REQUIRE(cast(pos, t).to_int64_vector() == std::vector<int64_t>{0, 7, 250});
  }
}

TEST_CASE("Cast from float saturates out-of-range values and maps NaN to 0", "[kernels][Cast]") {
  auto x = make<float>({4}, {1e10f, -1e10f, NAN, INFINITY});
  REQUIRE(cast(x, DType::kInt32).to_int64_vector() ==
          std::vector<int64_t>{std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::lowest(), 0,
                               std::numeric_limits<int32_t>::max()});
  REQUIRE(cast(x, DType::kUInt8).to_int64_vector() == std::vector<int64_t>{255, 0, 0, 255});
}

TEST_CASE("Cast between integer types wraps modulo 2^n like numpy", "[kernels][Cast]") {
  auto x = make<int64_t>({4}, {300, -1, 127, -129});
  REQUIRE(cast(x, DType::kInt8).to_int64_vector() == std::vector<int64_t>{44, -1, 127, 127});
  REQUIRE(cast(x, DType::kUInt8).to_int64_vector() == std::vector<int64_t>{44, 255, 127, 127});
  REQUIRE(cast(make<uint32_t>({1}, {4000000000u}), DType::kInt64).to_int64_vector() ==
          std::vector<int64_t>{4000000000});
  auto big = cast(make<int64_t>({1}, {(int64_t{1} << 53) + 1}), DType::kDouble);
  REQUIRE(big.data<double>()[0] == static_cast<double>(int64_t{1} << 53));
}

TEST_CASE("Cast to and from bool", "[kernels][Cast]") {
  REQUIRE(cast(make<int64_t>({3}, {0, 2, -1}), DType::kBool).to_int64_vector() == std::vector<int64_t>{0, 1, 1});
  REQUIRE(cast(make<float>({4}, {0.f, -0.f, 0.5f, NAN}), DType::kBool).to_int64_vector() ==
          std::vector<int64_t>{0, 0, 1, 1});
  auto b = make<bool>({3}, {true, false, true});
  require_close(cast(b, DType::kFloat), make<float>({3}, {1, 0, 1}));
  REQUIRE(cast(b, DType::kUInt16).to_int64_vector() == std::vector<int64_t>{1, 0, 1});
}

TEST_CASE("Cast between float and double rounds to nearest, overflow goes to inf", "[kernels][Cast]") {
  auto d = make<double>({3}, {0.1, 1e300, -1e300});
  auto f = cast(d, DType::kFloat);
  REQUIRE(f.data<float>()[0] == 0.1f);
  REQUIRE(std::isinf(f.data<float>()[1]));
  REQUIRE(f.data<float>()[2] < 0);
  require_close(cast(make<float>({2}, {0.25f, -3.f}), DType::kDouble, 6), make<double>({2}, {0.25, -3.0}));
}

TEST_CASE("Cast to the same dtype is a view, scalars and empty tensors keep their shape", "[kernels][Cast]") {
  auto x = make<float>({2}, {1, 2});
  REQUIRE(cast(x, DType::kFloat).raw() == x.raw());
  auto s = cast(make<double>({}, {2.5}), DType::kInt32);
  REQUIRE(s.dims().empty());
  REQUIRE(s.to_int64_vector() == std::vector<int64_t>{2});
  auto e = cast(Tensor::host(DType::kFloat, {0, 4}), DType::kInt64);
  REQUIRE(e.dtype() == DType::kInt64);
  REQUIRE(e.dims() == Dims{0, 4});
}

TEST_CASE("Cast refuses types it cannot store, and needs 'to'", "[kernels][Cast]") {
  REQUIRE_FALSE(run_node_error({"Cast", {make<float>({1}, {1})}, {to(DType::kString)}}).ok());
  REQUIRE_FALSE(run_node_error({"Cast", {make<float>({1}, {1})}, {}}).ok());
}

TEST_CASE("CastLike takes the dtype of its second input", "[kernels][Cast][CastLike]") {
  auto like = run_node({"CastLike", {make<int64_t>({2}, {3, -4}), make<double>({1}, {0})}})[0];
  require_close(like, make<double>({2}, {3, -4}));
  auto b = run_node({"CastLike", {make<float>({2}, {0, 2}), Tensor::host(DType::kBool, {0})}, {}, 1, 19})[0];
  REQUIRE(b.to_int64_vector() == std::vector<int64_t>{0, 1});
}

TEST_CASE("Cast to and from float16 and bfloat16 rounds to nearest even", "[kernels][Cast][float16]") {
  // 1 + 2^-11 is a float16 tie (-> 1), 1 + 2^-8 a bfloat16 tie (-> 1); 65520 overflows float16.
  auto x = make<float>({5}, {1.f + 0x1p-11f, 1.f + 0x1p-8f, -2.5f, 65520.f, 0x1p-24f});
  Tensor h = cast(x, DType::kFloat16);
  REQUIRE(h.dtype() == DType::kFloat16);
  std::vector<uint16_t> hb(h.data<uint16_t>(), h.data<uint16_t>() + 5);
  CHECK(hb == std::vector<uint16_t>{0x3c00, 0x3c04, 0xc100, 0x7c00, 0x0001});
  Tensor b = cast(x, DType::kBFloat16);
  std::vector<uint16_t> bb(b.data<uint16_t>(), b.data<uint16_t>() + 5);
  CHECK(bb == std::vector<uint16_t>{0x3f80, 0x3f80, 0xc020, 0x4780, 0x3380});
  // Back to float32 and on to the integers, through float.
  Tensor back = cast(h, DType::kFloat);
  std::vector<float> widened(back.data<float>(), back.data<float>() + 5);
  CHECK(widened == std::vector<float>{1.f, 1.f + 0x1p-8f, -2.5f, INFINITY, 0x1p-24f});
  CHECK(cast(b, DType::kInt32).to_int64_vector() == std::vector<int64_t>{1, 1, -2, 65536, 0});
  CHECK(cast(h, DType::kBFloat16).dtype() == DType::kBFloat16);
}

TEST_CASE("kernels are keyed by dtype: a float16 node without a float16 kernel is named at plan time",
          "[kernels][float16]") {
  const KernelRegistry& r = KernelRegistry::instance();
  CHECK(r.find("", "MatMul", 17, DeviceKind::kCpu, DType::kFloat) != nullptr);
  CHECK(r.find("", "MatMul", 17, DeviceKind::kCpu, DType::kFloat16) != nullptr);  // autocast's GEMMs
  CHECK(r.find("", "Add", 17, DeviceKind::kCpu, DType::kFloat16) != nullptr);  // half_activations' (half_twins.cc)
  CHECK(r.find("", "Exp", 17, DeviceKind::kCpu, DType::kFloat16) == nullptr);
  CHECK(r.find("", "Cast", 17, DeviceKind::kCpu, DType::kBFloat16) != nullptr);
  CHECK(r.find("", "Reshape", 17, DeviceKind::kCpu, DType::kFloat16) != nullptr);  // views take any dtype
  Tensor a = Tensor::host(DType::kFloat16, {2, 2});
  Model m = single_node_model({"Exp", {a}});
  REQUIRE(infer_shapes(m).ok());
  Status st = check_kernels(m, DeviceKind::kCpu);
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("Exp_node (Exp opset 17): none for float16"));
}
