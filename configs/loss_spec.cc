#include "configs/loss_spec.h"

namespace ort_train {

const char* loss_types() { return "softmax_cross_entropy, nll, mse, l1, bce_with_logits"; }

}  // namespace ort_train
