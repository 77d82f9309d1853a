#include "graph/op_schema.h"

#include <algorithm>

namespace ort_train {

const OptShape& InferContext::input_shape(size_t i) const {
  static const OptShape kUnknown;
  return has_input(i) ? *inputs_[i].shape : kUnknown;
}

int64_t InferContext::input_rank(size_t i) const {
  const OptShape& s = input_shape(i);
  return s ? static_cast<int64_t>(s->size()) : -1;
}

void InferContext::set_output_value(size_t i, Tensor v) {
  if (i >= outputs_.size()) return;
  outputs_[i].dtype = v.dtype();
  outputs_[i].shape = shape_from_dims(v.dims());
  outputs_[i].value = std::move(v);
}

std::optional<std::vector<int64_t>> InferContext::ints_from_input_or_attr(size_t input,
                                                                          const std::string& attr) const {
  if (has_input(input)) {
    const Tensor* v = input_value(input);
    if (!v) return std::nullopt;
    return v->to_int64_vector();
  }
  if (const Attribute* a = node_.attr(attr)) return a->ints;
  return std::vector<int64_t>{};
}

OpRegistry& OpRegistry::instance() {
  static OpRegistry r;
  return r;
}

void OpRegistry::add(OpSchema schema) {
  if (schema.domain == "ai.onnx") schema.domain.clear();
  schemas_.push_back(std::make_unique<OpSchema>(std::move(schema)));
  const OpSchema& added = *schemas_.back();
  by_op_[key(added.domain, added.op_type)].push_back(&added);
}

// Every lookup goes through the (domain, op) index: shape inference and each
// graph pass ask per node, and a scan of every schema made a 100k-node model
// spend seconds here.
std::string OpRegistry::key(const std::string& domain, const std::string& op_type) {
  return (domain == "ai.onnx" ? std::string() : domain) + '\n' + op_type;
}

const std::vector<const OpSchema*>& OpRegistry::schemas_of(const std::string& domain, const std::string& op_type) const {
  static const std::vector<const OpSchema*> kNone;
  auto it = by_op_.find(key(domain, op_type));
  return it == by_op_.end() ? kNone : it->second;
}

const OpSchema* OpRegistry::find(const std::string& domain, const std::string& op_type, int64_t opset) const {
  for (const OpSchema* s : schemas_of(domain, op_type))
    if (opset >= s->min_opset && opset <= s->max_opset) return s;
  return nullptr;
}

bool OpRegistry::knows(const std::string& domain, const std::string& op_type) const {
  return !schemas_of(domain, op_type).empty();
}

std::vector<size_t> sixteen_bit_inputs(uint32_t traits, size_t num_inputs) {
  if (traits == kTraitsUndeclared) return {};
  std::vector<size_t> inputs;
  for (size_t i = 0; i < num_inputs; ++i)
    if ((traits & kSixteenBitEveryInput) || (i < 4 && (traits & kSixteenBitInput(i)))) inputs.push_back(i);
  return inputs;
}

uint32_t OpRegistry::traits(const std::string& domain, const std::string& op_type) const {
  uint32_t t = 0;
  for (const OpSchema* s : schemas_of(domain, op_type)) t |= s->traits;
  return t;
}

std::vector<std::pair<size_t, size_t>> OpRegistry::state_outputs(const std::string& domain,
                                                                 const std::string& op_type) const {
  for (const OpSchema* s : schemas_of(domain, op_type))
    if (!s->state_outputs.empty()) return s->state_outputs;
  return {};
}

std::vector<const OpSchema*> OpRegistry::all() const {
  std::vector<const OpSchema*> out;
  for (const auto& s : schemas_) out.push_back(s.get());
  return out;
}

Status same_as_input0(InferContext& ctx) {
  ctx.propagate(0, 0);
  return Status::Ok();
}

Result<int64_t> normalize_axis(int64_t axis, int64_t rank, const Node& node) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return shape_error("{}: axis {} is out of range for rank {}", node.describe(), axis, rank);
  return axis < 0 ? axis + rank : axis;
}

Result<Shape> broadcast_shapes(const std::vector<const Shape*>& shapes, const Node& node) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->size());
  Shape out(rank, Dim(1));
  for (size_t k = 0; k < rank; ++k) {
    Dim d(1);
    bool unknown = false;
    for (const Shape* s : shapes) {
      if (k + s->size() < rank) continue;
      const Dim& x = (*s)[k + s->size() - rank];
      if (x.known() && x.value == 1) continue;
      if (d.known() && d.value == 1) {
        d = x;
      } else if (x.known() && d.known()) {
        if (x.value != d.value)
          return shape_error("{}: shapes cannot broadcast: dimension {} vs {}", node.describe(), d.value,
                             x.value);
      } else if (!(x == d)) {
        // Two different symbols, or a symbol vs a number: the result is whichever is not 1 at run time.
        if (x.known()) d = x;
        else if (!d.known()) unknown = true;
      }
    }
    out[k] = unknown ? Dim() : d;
  }
  return out;
}

Status shape_from_value(InferContext& ctx, size_t dtype_input, size_t shape_input) {
  DType dt = ctx.input_dtype(dtype_input);
  if (const Tensor* v = ctx.input_value(shape_input)) {
    ctx.set_output(0, dt, shape_from_dims(v->to_int64_vector()));
    return Status::Ok();
  }
  const OptShape& s = ctx.input_shape(shape_input);
  if (s && s->size() == 1 && (*s)[0].known()) ctx.set_output(0, dt, Shape(static_cast<size_t>((*s)[0].value), Dim()));
  else ctx.set_output(0, dt, std::nullopt);
  return Status::Ok();
}

}  // namespace ort_train
