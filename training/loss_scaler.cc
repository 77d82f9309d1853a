#include "training/loss_scaler.h"

#include <cmath>

namespace ort_train {

void LossScaler::update(bool found_inf) {
  if (found_inf) {
    scale_ = static_cast<float>(static_cast<double>(scale_) * backoff_);
    tracker_ = 0;
    return;
  }
  if (++tracker_ < interval_) return;
  float grown = static_cast<float>(static_cast<double>(scale_) * growth_);
  if (std::isfinite(grown)) scale_ = grown;
  tracker_ = 0;
}

}  // namespace ort_train
