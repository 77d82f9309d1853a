// Dynamic loss scaling for --precision fp16, with PyTorch GradScaler's
// semantics: the backward starts from `scale` instead of 1 (the training
// graph's loss_scale input), so small float16 gradients stay above float16's
// underflow; the float32 gradients are multiplied by 1/scale and checked. A
// step whose gradients hold an inf or NaN is skipped (no optimizer update, its
// state untouched) and the scale backs off; after growth_interval clean steps
// in a row it grows. The scale and its clean-step count are float32 and int,
// as GradScaler's _scale and _growth_tracker, and go into checkpoints.
#pragma once
#include <cstdint>

#include "configs/model_description.h"

namespace ort_train {

class LossScaler {
 public:
  explicit LossScaler(const LossScaleConfig& c)
      : scale_(static_cast<float>(c.init_scale)),
        growth_(c.growth_factor),
        backoff_(c.backoff_factor),
        interval_(c.growth_interval) {}
  float scale() const { return scale_; }
  // What the gradients are multiplied by: GradScaler's double reciprocal, rounded to float32.
  float inverse() const { return static_cast<float>(1.0 / static_cast<double>(scale_)); }
  int64_t growth_tracker() const { return tracker_; }
  // After a step's gradients were checked (torch._amp_update_scale_): an
  // overflow multiplies the scale by backoff and restarts the count; the
  // growth_interval-th clean step in a row multiplies it by growth (unless
  // that would overflow float32) and restarts the count.
  void update(bool found_inf);
  void restore(float scale, int64_t tracker) {
    scale_ = scale;
    tracker_ = tracker;
  }

 private:
  float scale_;
  double growth_, backoff_;  // as GradScaler's factors: the product in double, stored as float32
  int64_t interval_;
  int64_t tracker_ = 0;
};

}  // namespace ort_train
