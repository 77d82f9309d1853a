#include "training/finite_state.h"

#include <cmath>

#include "runtime/vector_ops.h"

namespace ort_train {

Status check_finite_state(Trainer& trainer, const std::string& when) {
  ASSIGN_OR_RETURN(VectorOps * math, vector_ops(trainer.device().kind()));
  auto finite = [&](const Tensor& t) -> Result<bool> {
    if (!t.defined() || t.numel() == 0 || t.dtype() != DType::kFloat) return true;
    ASSIGN_OR_RETURN(double norm, math->global_norm({t}));
    return std::isfinite(norm);
  };
  for (const ParameterStore::Entry& e : trainer.parameters().entries()) {
    ASSIGN_OR_RETURN(bool ok, finite(e.master));
    if (!ok)
      return invalid_argument("the weight '{}' holds inf or NaN {}: nothing written (a learning rate or optimizer "
                              "setting that diverged, or a damaged checkpoint)",
                              e.name, when);
  }
  for (const auto& [name, t] : trainer.optimizer().state()) {
    ASSIGN_OR_RETURN(bool ok, finite(*t));
    if (!ok)
      return invalid_argument("the optimizer state '{}' holds inf or NaN {}: nothing written", name, when);
  }
  return Status::Ok();
}

}  // namespace ort_train
