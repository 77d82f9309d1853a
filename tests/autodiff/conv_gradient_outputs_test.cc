// ConvGrad computes only the gradients the training graph wants
// (autodiff/rules/conv_pool.cc).
#include <map>

#include "autodiff/training_graph.h"
#include "graph/onnx_io.h"
#include "test_util.h"

namespace ort_train::testing {

// A convolution's gradient computes only what is wanted: the first layer's dX
// (its input is data) and a frozen filter's dW are left out of ConvGrad, so
// the kernels skip them.
TEST_CASE("conv gradient: the first layer's dX and a frozen filter's dW are not computed", "[autodiff]") {
  auto model = load_model(source_dir() + "/tests/models/lenet/model.onnx");
  REQUIRE(model.ok());
  std::vector<std::string> convs;  // each Conv's filter, in order
  for (const Node& n : model->graph.nodes)
    if (n.op_type == "Conv") convs.push_back(n.inputs[1]);
  REQUIRE(convs.size() >= 2);
  std::string text = read_file(source_dir() + "/tests/models/lenet/training.yaml").value();
  text += "trainable: {exclude: [\"" + convs[1] + "\"]}\n";
  auto desc = parse_description(text, "", "lenet.yaml");
  INFO(desc.status().message());
  REQUIRE(desc.ok());
  auto tg = build_training_graph(std::move(model).value(), *desc);
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  std::map<std::string, const Node*> grad_of;  // filter -> its ConvGrad
  for (const Node& n : tg->model.graph.nodes)
    if (n.op_type == "ConvGrad") grad_of[n.inputs[2]] = &n;
  REQUIRE(grad_of.count(convs[0]));
  REQUIRE(grad_of.count(convs[1]));
  CHECK(grad_of[convs[0]]->outputs[0].empty());   // the image needs no gradient
  CHECK(!grad_of[convs[0]]->outputs[1].empty());  // its filter trains
  CHECK(!grad_of[convs[1]]->outputs[0].empty());  // the gradient flows on to the first layer
  CHECK(grad_of[convs[1]]->outputs[1].empty());   // frozen
}

}  // namespace ort_train::testing
