#include "training/backward_norm.h"

#include <cmath>

namespace ort_train {

BackwardNorm::BackwardNorm(const std::vector<std::string>& outputs, std::vector<Tensor> gradients, VectorOps& math)
    : gradients_(std::move(gradients)), partial_(gradients_.size()), read_(gradients_.size(), false), math_(&math) {
  for (size_t i = 0; i < outputs.size() && i < gradients_.size(); ++i) index_[outputs[i]] = i;
}

void BackwardNorm::begin() {
  std::fill(read_.begin(), read_.end(), false);
  begun_ = true;
  read_during_run_ = 0;
}

Status BackwardNorm::gradient_ready(const std::string& name) {
  auto it = index_.find(name);
  if (!begun_ || it == index_.end() || read_[it->second]) return Status::Ok();
  ASSIGN_OR_RETURN(partial_[it->second], math_->norm_partials({gradients_[it->second]}));
  read_[it->second] = true;
  ++read_during_run_;
  return Status::Ok();
}

Result<double> BackwardNorm::finish() {
  if (!begun_) return make_error(ErrorCode::kInternal, "the backward's gradient norm was asked before a backward");
  begun_ = false;
  double sq = 0;
  for (size_t i = 0; i < gradients_.size(); ++i) {
    if (!read_[i]) {
      ASSIGN_OR_RETURN(partial_[i], math_->norm_partials({gradients_[i]}));
    }
    for (double v : partial_[i]) sq += v;  // global_norm's order: tensor by tensor, chunk by chunk
  }
  return std::sqrt(sq);
}

}  // namespace ort_train
