// Learning-rate schedules with warm-up, matching Hugging Face's
// get_{constant,linear,cosine,polynomial_decay}_schedule_with_warmup used
// with LambdaLR the usual way (optimizer.step() then scheduler.step()): the
// t-th optimizer step (1-based) uses base_lr * lambda(t - 1).
#pragma once
#include <cstdint>

#include "configs/model_description.h"

namespace ort_train {

// Multiplier of the base learning rate at optimizer step `t` (1-based).
// `total_steps` is the schedule's horizon (the run's steps when the description leaves it out).
double lr_multiplier(const ScheduleConfig& s, int64_t t, int64_t total_steps, double base_lr);

}  // namespace ort_train
