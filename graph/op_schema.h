// Per-op static knowledge: which opsets of which op the runtime understands and
// the op's shape/dtype rule. Each op registers itself in its own file under
// graph/ops/ with ORT_REGISTER_OP; there is no central table.
//
// A shape rule runs twice: at load time over symbolic shapes (values of
// constants and initializers known, others not), and at run time inside the
// executor over concrete shapes with every input value known. The kernel never
// recomputes output shapes, so the two cannot disagree.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <unordered_map>
#include <vector>

#include "graph/dim_values.h"
#include "graph/graph.h"
#include "graph/status.h"

namespace ort_train {

// Domain of the project's own ops (gradient ops, SumTo, ...), documented in docs/gradient_ops.md.
inline constexpr const char* kOrtTrainDomain = "com.ort_train";

class InferContext {
 public:
  struct Input {
    DType dtype = DType::kUndefined;
    const OptShape* shape = nullptr;  // never null for a present input
    const Tensor* value = nullptr;    // known value (constant, initializer, or run-time tensor)
    const DimValues* dim_values = nullptr;  // partial value of a shape tensor (graph/dim_values.h)
  };
  struct Output {
    DType dtype = DType::kUndefined;
    OptShape shape;
    std::optional<Tensor> value;  // set when the rule can compute the value itself (Shape, Constant)
  };

  InferContext(const Node& node, int64_t opset, std::vector<Input> inputs)
      : node_(node), opset_(opset), inputs_(std::move(inputs)), outputs_(node.outputs.size()) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].shape != nullptr; }
  DType input_dtype(size_t i) const { return has_input(i) ? inputs_[i].dtype : DType::kUndefined; }
  const OptShape& input_shape(size_t i) const;
  // Rank of input i, or -1 when unknown.
  int64_t input_rank(size_t i) const;
  const Tensor* input_value(size_t i) const {
    if (!has_input(i)) return nullptr;
    const uint64_t bit = i < 64 ? uint64_t{1} << i : ~uint64_t{0};
    values_wanted_ |= bit;
    if (inputs_[i].value) values_read_ |= bit;
    return inputs_[i].value;
  }
  // The partial value of a shape tensor input (known element by element), or nullptr.
  const DimValues* input_dim_values(size_t i) const { return has_input(i) ? inputs_[i].dim_values : nullptr; }
  // Which inputs' values the rule read (bit i; all bits past input 63): the
  // executor replays a rule's answer only when those values cannot change.
  uint64_t values_read() const { return values_read_; }
  // Which inputs' data the rule asked for, known or not: the executor checks
  // them against the op's declared kRuleReadsInput traits, which a GPU plan
  // relies on to copy exactly those inputs to the host.
  uint64_t values_wanted() const { return values_wanted_; }
  size_t num_outputs() const { return outputs_.size(); }
  bool has_output(size_t i) const { return i < node_.outputs.size() && !node_.outputs[i].empty(); }

  void set_output(size_t i, DType dtype, OptShape shape) {
    if (i < outputs_.size()) {
      outputs_[i].dtype = dtype;
      outputs_[i].shape = std::move(shape);
    }
  }
  void set_output_value(size_t i, Tensor v);
  const Output& output(size_t i) const { return outputs_[i]; }

  // Helpers most rules need.
  int64_t attr_int(const std::string& n, int64_t def) const { return node_.attr_int(n, def); }
  float attr_float(const std::string& n, float def) const { return node_.attr_float(n, def); }
  std::vector<int64_t> attr_ints(const std::string& n) const { return node_.attr_ints(n); }
  bool has_attr(const std::string& n) const { return node_.attr(n) != nullptr; }
  // Same dtype and shape as input `in` for output `out` (elementwise unary ops).
  void propagate(size_t in, size_t out) { set_output(out, input_dtype(in), input_shape(in)); }
  // Values of an integer input or ints attribute (e.g. "axes" moved to an input in later opsets).
  // Returns nullopt when the value is not known statically.
  std::optional<std::vector<int64_t>> ints_from_input_or_attr(size_t input, const std::string& attr) const;

 private:
  const Node& node_;
  int64_t opset_;
  std::vector<Input> inputs_;
  std::vector<Output> outputs_;
  mutable uint64_t values_read_ = 0;
  mutable uint64_t values_wanted_ = 0;
};

using ShapeRule = std::function<Status(InferContext&)>;

// What the passes, the memory planner and the executor must know about an op
// beyond its shape rule, stated once, where the op registers
// (ORT_REGISTER_OP's last argument; combined with |). Read through
// graph/passes/op_traits.h, never by listing op names.
enum OpTrait : uint32_t {
  kPlainOp = 0,           // a pure function of its inputs and attributes
  kViewOp = 1u << 0,      // output 0 is input 0's buffer with other dims: no bytes of its own
  kRandomOp = 1u << 1,    // draws from a random stream of its own (node, step): never folded or merged
  kReadsRunOptions = 1u << 2,  // behaves by the run (training flag, seed, step): never folded
  // Part of the training step rather than of the function it trains (ONNX's
  // optimizer and Gradient ops; a standard op only with training_mode set:
  // BatchNormalization's running statistics, which the trainer writes back).
  kTrainingStateOp = 1u << 3,
  // Its outputs' shapes are known only once it has run (If, Loop, Scan: they
  // depend on the branch taken or the trips made): the rule may leave them
  // unknown at run time, and the kernel sets every output itself.
  kShapedByKernel = 1u << 4,
  // The rule computes every output itself from shapes and attributes (Shape,
  // Size, Constant): no kernel runs, and on a GPU the outputs are host values.
  kValueFromRule = 1u << 5,
  kTraitsUndeclared = 1u << 31,  // an OpSchema made without ORT_REGISTER_OP's traits
};

// The shape rule reads the data of input `input` (a Reshape target, Slice
// starts, NonZero's count), declared with the op's other traits: a GPU plan
// copies that input to the host before the step when it lives on the device
// only, and the executor refuses a rule that reads an undeclared input's data.
// Inputs 0 to 15 (trait bits 8 to 23).
constexpr uint32_t kRuleReadsInput(size_t input) { return uint32_t{1} << (8 + input); }
// The inputs, as a bit mask (bit i: input i), whose data the rule may read.
constexpr uint64_t rule_data_inputs(uint32_t traits) { return (traits >> 8) & 0xffffu; }

// Runs in 16 bits: with --precision bf16|fp16, half_activations
// (graph/passes/half_activations.cc) keeps the op in bfloat16 or float16 when
// these inputs have 16-bit versions (the rest, a ratio or a mask, stay as
// they are), and both devices have bfloat16 and float16 kernels for it (each
// element widened to float32, computed and rounded once, or a view);
// tests/runtime/sixteen_bit_kernels_test.cc holds both kernel tables to it.
// Inputs 0 to 3 (trait bits 24 to 27), or every input (bit 28).
constexpr uint32_t kSixteenBitInput(size_t input) { return uint32_t{1} << (24 + input); }
inline constexpr uint32_t kSixteenBitEveryInput = uint32_t{1} << 28;
// The inputs a 16-bit run of an op with `traits` and `num_inputs` inputs
// reads in 16 bits; empty when it does not run in 16 bits.
std::vector<size_t> sixteen_bit_inputs(uint32_t traits, size_t num_inputs);

struct OpSchema {
  std::string domain;  // "" = ai.onnx
  std::string op_type;
  int64_t min_opset = 1;    // first opset of the domain this rule covers
  int64_t max_opset = 1000; // last
  ShapeRule infer;
  uint32_t traits = kTraitsUndeclared;  // OpTrait bits
  // {output, input} pairs: the output is the next value of that input, which
  // the trainer stores back into the input's initializer after each
  // micro-batch (BatchNormalization's running statistics). Declared with
  // ORT_REGISTER_STATEFUL_OP.
  std::vector<std::pair<size_t, size_t>> state_outputs = {};
  std::string source = {};  // the file that registered it (__FILE__): docs/op_files.md
};

class OpRegistry {
 public:
  static OpRegistry& instance();
  void add(OpSchema schema);
  // Schema for (domain, op) valid at the given opset, or nullptr.
  const OpSchema* find(const std::string& domain, const std::string& op_type, int64_t opset) const;
  // Whether the op exists at any opset (to word "unsupported opset" vs "unknown op").
  bool knows(const std::string& domain, const std::string& op_type) const;
  // The op's traits (OpTrait bits of every schema registered for it; 0 for an unknown op).
  uint32_t traits(const std::string& domain, const std::string& op_type) const;
  // The op's state outputs ({output, input} pairs of any schema registered for it).
  std::vector<std::pair<size_t, size_t>> state_outputs(const std::string& domain, const std::string& op_type) const;
  std::vector<const OpSchema*> all() const;

 private:
  static std::string key(const std::string& domain, const std::string& op_type);
  const std::vector<const OpSchema*>& schemas_of(const std::string& domain, const std::string& op_type) const;
  std::vector<std::unique_ptr<OpSchema>> schemas_;  // registration order
  std::unordered_map<std::string, std::vector<const OpSchema*>> by_op_;  // by domain and op, registration order
};

struct OpRegistrar {
  OpRegistrar(OpSchema s, const char* file) {
    s.source = file;
    OpRegistry::instance().add(std::move(s));
  }
};

// --- Shared shape helpers -------------------------------------------------
// The rule of every op whose output 0 has input 0's dtype and shape.
Status same_as_input0(InferContext& ctx);
// Output 0 takes input `dtype_input`'s dtype and the shape held in the value of
// 1-D int64 input `shape_input` (rank only when the value is unknown): the rule
// of gradient ops that rebuild a tensor of a forward input's shape.
Status shape_from_value(InferContext& ctx, size_t dtype_input, size_t shape_input);
// Normalizes a possibly negative axis against a rank; error if out of range.
Result<int64_t> normalize_axis(int64_t axis, int64_t rank, const Node& node);
// Numpy/ONNX multidirectional broadcast of shapes (symbolic dims allowed).
Result<Shape> broadcast_shapes(const std::vector<const Shape*>& shapes, const Node& node);

}  // namespace ort_train

// `traits`: the op's OpTrait bits (kPlainOp for none), stated with every registration.
#define ORT_REGISTER_OP(domain, op, min_opset, max_opset, rule, traits)                          \
  static ::ort_train::OpRegistrar ORT_CONCAT(_op_registrar_, __LINE__)(::ort_train::OpSchema{ \
      domain, op, min_opset, max_opset, rule, static_cast<uint32_t>(traits)}, __FILE__)
// An op some of whose outputs are the next values of its inputs: `...` lists
// the {output, input} pairs (OpSchema::state_outputs).
#define ORT_REGISTER_STATEFUL_OP(domain, op, min_opset, max_opset, rule, traits, ...)            \
  static ::ort_train::OpRegistrar ORT_CONCAT(_op_registrar_, __LINE__)(::ort_train::OpSchema{ \
      domain, op, min_opset, max_opset, rule, static_cast<uint32_t>(traits), {__VA_ARGS__}}, __FILE__)
