#include "optimizers/schedule.h"

#include <algorithm>
#include <cmath>

namespace ort_train {

double lr_multiplier(const ScheduleConfig& s, int64_t t, int64_t total_steps, double base_lr) {
  double step = static_cast<double>(t - 1);  // LambdaLR's counter at this step
  double warmup = static_cast<double>(s.warmup_steps);
  double total = static_cast<double>(s.total_steps.value_or(total_steps));
  if (step < warmup) return step / std::max(1.0, warmup);
  if (s.type == "constant") return 1.0;
  if (s.type == "linear") return std::max(0.0, (total - step) / std::max(1.0, total - warmup));
  double progress = (step - warmup) / std::max(1.0, total - warmup);
  if (s.type == "cosine") {
    double cycles = s.num_cycles.value_or(0.5);
    return std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * cycles * 2.0 * progress)));
  }
  // poly: from base_lr down to lr_end over the horizon, then lr_end.
  double lr_end = s.lr_end.value_or(1e-7), power = s.power.value_or(1.0);
  if (step > total) return lr_end / base_lr;
  double decay = (base_lr - lr_end) * std::pow(1.0 - progress, power) + lr_end;
  return decay / base_lr;
}

}  // namespace ort_train
