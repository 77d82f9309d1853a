// A model's own functions are expanded when the file loads
// (graph/function_inlining.h): attribute references take the call's value or
// the function's default, calls inside a body are expanded too, and the
// expanded model computes what the functions say.
#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

#include "test_util.h"

namespace ort_train::testing {
namespace {

void add_node(google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes, const std::string& op,
              std::vector<std::string> in, std::vector<std::string> out, const std::string& domain = "") {
  onnx::NodeProto* n = nodes->Add();
  n->set_op_type(op);
  n->set_domain(domain);
  n->set_name(op + "_" + out[0]);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
}

void tensor_type(onnx::ValueInfoProto* v, const std::string& name) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_value(3);
}

// custom.Scaled(X) = X * alpha (alpha an attribute reference, default 2);
// custom.Twice(X) = Scaled(Scaled(X)) with alpha given as 3 and left to the default.
std::string model_bytes() {
  onnx::ModelProto mp;
  mp.set_ir_version(10);
  mp.add_opset_import()->set_version(18);
  auto* custom = mp.add_opset_import();
  custom->set_domain("custom");
  custom->set_version(1);

  onnx::FunctionProto* scaled = mp.add_functions();
  scaled->set_name("Scaled");
  scaled->set_domain("custom");
  scaled->add_input("X");
  scaled->add_output("Y");
  scaled->add_opset_import()->set_version(18);
  add_node(scaled->mutable_node(), "Constant", {}, {"alpha_value"});
  onnx::AttributeProto* ref = scaled->mutable_node(0)->add_attribute();
  ref->set_name("value_float");
  ref->set_type(onnx::AttributeProto::FLOAT);
  ref->set_ref_attr_name("alpha");
  add_node(scaled->mutable_node(), "Mul", {"X", "alpha_value"}, {"Y"});
  onnx::AttributeProto alpha_default;  // attribute_proto (field 11): not in onnx 1.12's schema
  alpha_default.set_name("alpha");
  alpha_default.set_type(onnx::AttributeProto::FLOAT);
  alpha_default.set_f(2.f);
  scaled->GetReflection()->MutableUnknownFields(scaled)->AddLengthDelimited(11, alpha_default.SerializeAsString());

  onnx::FunctionProto* twice = mp.add_functions();
  twice->set_name("Twice");
  twice->set_domain("custom");
  twice->add_input("X");
  twice->add_output("Z");
  add_node(twice->mutable_node(), "Scaled", {"X"}, {"T"}, "custom");
  onnx::AttributeProto* three = twice->mutable_node(0)->add_attribute();
  three->set_name("alpha");
  three->set_type(onnx::AttributeProto::FLOAT);
  three->set_f(3.f);
  add_node(twice->mutable_node(), "Scaled", {"T"}, {"Z"}, "custom");

  onnx::GraphProto* g = mp.mutable_graph();
  g->set_name("calls");
  tensor_type(g->add_input(), "x");
  tensor_type(g->add_output(), "y");
  add_node(g->mutable_node(), "Twice", {"x"}, {"y"}, "custom");
  return mp.SerializeAsString();
}

}  // namespace

TEST_CASE("function_inlining.calls_become_their_bodies") {
  auto m = load_model_from_bytes(model_bytes(), "");
  INFO(m.status().message());
  REQUIRE(m.ok());
  for (const Node& n : m->graph.nodes) CHECK(n.domain.empty());  // Twice and both Scaled calls expanded
  CHECK(m->graph.nodes.size() == 4);  // two Constants, two Muls
  REQUIRE(infer_shapes(*m, {}).ok());
  auto ex = Executor::create(*m);
  INFO(ex.status().message());
  REQUIRE(ex.ok());
  auto out = (*ex)->run({{"x", make<float>({3}, {1, 2, 3})}}, {});
  REQUIRE(out.ok());
  require_close(out->at("y"), make<float>({3}, {6, 12, 18}), 0, 0);  // x * 3 (given) * 2 (default)
}

}  // namespace ort_train::testing
