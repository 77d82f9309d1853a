// fp16's dynamic loss scaling: the scaler's update rule (GradScaler's
// _amp_update_scale_). Its unscale is the optimizers' gradient factor
// (training/trainer.cc, numerics/optimizer_math.h); an overflow skipping the
// update is tests/apps/train_loop_test.cc's (train.precision_fp16_...).
#include <cmath>
#include <limits>

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

}  // namespace ort_train::testing
