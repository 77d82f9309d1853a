// Shape rules: SoftmaxCrossEntropyLoss (loss, optional log_prob) and
// NegativeLogLikelihoodLoss. Scores are [N, C] or [N, C, d1, ...]; labels [N, d1, ...].
#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {
namespace {

Status loss_rule(InferContext& ctx) {
  const OptShape &scores = ctx.input_shape(0), &labels = ctx.input_shape(1);
  DType dt = ctx.input_dtype(0);
  std::string reduction = ctx.node().attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return invalid_argument("{}: reduction must be none, sum or mean, got '{}'", ctx.node().describe(), reduction);
  if (scores && scores->size() < 2) return shape_error("{}: scores must be [N, C, ...]", ctx.node().describe());
  if (scores && labels) {
    // The kernels read one label per score row: [N, d1, ...] exactly, dim by dim.
    bool fits = labels->size() + 1 == scores->size();
    for (size_t i = 0; fits && i < labels->size(); ++i) {
      const Dim &l = (*labels)[i], &s = (*scores)[i == 0 ? 0 : i + 1];
      fits = !l.known() || !s.known() || l.value == s.value;
    }
    if (!fits)
      return shape_error("{}: labels {} must be scores {} without the class axis", ctx.node().describe(),
                         shape_to_string(labels), shape_to_string(scores));
  }
  if (scores) RETURN_IF_ERROR(require_elements(ctx, 2, (*scores)[1], "the class weights"));
  if (reduction == "none") {
    OptShape out;
    if (scores) {
      Shape s{(*scores)[0]};
      s.insert(s.end(), scores->begin() + 2, scores->end());
      out = s;
    } else {
      out = labels;
    }
    ctx.set_output(0, dt, out);
  } else {
    ctx.set_output(0, dt, Shape{});
  }
  if (ctx.num_outputs() > 1) ctx.set_output(1, dt, scores);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "SoftmaxCrossEntropyLoss", 12, 1000, loss_rule, kPlainOp);
ORT_REGISTER_OP("", "NegativeLogLikelihoodLoss", 12, 1000, loss_rule, kPlainOp);

}  // namespace ort_train
