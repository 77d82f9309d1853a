// fp16's dynamic loss scaling: the scaler's update rule (GradScaler's
// _amp_update_scale_) and the vector ops' unscale (its unscale_), on the CPU
// and through the GPU's element function run on the host.
#include <cmath>
#include <limits>

#include "numerics/unscale.h"
#include "runtime/device.h"
#include "runtime/vector_ops.h"
#include "training/loss_scaler.h"
#include "test_util.h"

namespace ort_train::testing {

TEST_CASE("loss_scaler.backs_off_on_overflow_and_grows_after_the_interval") {
  LossScaleConfig c;
  c.init_scale = 1024;
  c.growth_interval = 3;
  LossScaler s(c);
  CHECK(s.scale() == 1024.f);
  s.update(true);  // overflow: halve, count restarts
  CHECK(s.scale() == 512.f);
  CHECK(s.growth_tracker() == 0);
  s.update(false);
  s.update(false);
  CHECK(s.scale() == 512.f);
  CHECK(s.growth_tracker() == 2);
  s.update(false);  // the third clean step in a row: double
  CHECK(s.scale() == 1024.f);
  CHECK(s.growth_tracker() == 0);
  s.update(false);
  s.update(true);  // an overflow restarts the count toward growth
  CHECK(s.scale() == 512.f);
  CHECK(s.growth_tracker() == 0);
  CHECK(s.inverse() == 1.f / 512.f);
  // Growth that would overflow float32 is not taken (the count still restarts).
  s.restore(std::numeric_limits<float>::max(), 2);
  s.update(false);
  CHECK(s.scale() == std::numeric_limits<float>::max());
  CHECK(s.growth_tracker() == 0);
}

TEST_CASE("loss_scaler.unscale_multiplies_and_flags_inf_or_nan") {
  REQUIRE(get_device(DeviceKind::kCpu).ok());
  auto ops = vector_ops(DeviceKind::kCpu);
  REQUIRE(ops.ok());
  Tensor a = make<float>({3}, {2.f, -4.f, 8.f});
  Tensor b = Tensor::host(DType::kFloat, {100000});  // past one parallel chunk
  for (int64_t i = 0; i < b.numel(); ++i) b.data<float>()[i] = static_cast<float>(i % 7);
  auto clean = (*ops)->unscale({a, b}, 0.5f);
  REQUIRE(clean.ok());
  CHECK_FALSE(*clean);
  CHECK(a.data<float>()[1] == -2.f);
  CHECK(b.data<float>()[99999] == static_cast<float>(99999 % 7) * 0.5f);
  b.data<float>()[77777] = std::numeric_limits<float>::infinity();
  auto inf = (*ops)->unscale({a, b}, 1.f);
  REQUIRE(inf.ok());
  CHECK(*inf);
  b.data<float>()[77777] = std::nanf("");
  CHECK(*(*ops)->unscale({b}, 0.25f));
  // The GPU kernel's element function: checked before the multiplication.
  bool flag = false;
  CHECK(unscale_element(6.f, 0.5f, flag) == 3.f);
  CHECK_FALSE(flag);
  CHECK(std::isinf(unscale_element(std::numeric_limits<float>::infinity(), 0.5f, flag)));
  CHECK(flag);
}

}  // namespace ort_train::testing
