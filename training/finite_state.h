// "No checkpoint or export holds NaN weights": the gradients are checked for
// inf and NaN before every update, but weights can still become non-finite
// (an optimizer setting that overflows, a forged checkpoint whose optimizer
// state is NaN). Before a checkpoint or an export is written, and after a
// resume, the weights (float32 masters included) and the optimizer state are
// read once more.
#pragma once
#include <string>

#include "graph/status.h"
#include "training/trainer.h"

namespace ort_train {

// An error naming the first weight or optimizer state tensor that holds inf
// or NaN, and `when` ("before the checkpoint at step 4"); ok when none does.
Status check_finite_state(Trainer& trainer, const std::string& when);

}  // namespace ort_train
