// ForwardForExport: the model --export writes, kept without its weights. The
// tensors training still holds come back as training left them; the released
// ones are read again from the model file and checked against what was loaded.
#include "graph/onnx_io.h"
#include "graph/passes/pass_test_util.h"
#include "training/forward_for_export.h"

namespace ort_train::testing {
namespace {

Model two_weights() {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 3});
  add_initializer(g, "held", random_tensor({3, 3}, 1));
  add_initializer(g, "released", random_tensor({3, 3}, 2));
  g.nodes.push_back(node("m1", "MatMul", {"x", "held"}, {"h"}));
  g.nodes.push_back(node("m2", "MatMul", {"h", "released"}, {"y"}));
  add_output(g, "y");
  return m;
}

}  // namespace

TEST_CASE("forward for export: live tensors as training left them, released ones read again", "[export]") {
  Dir dir("ort_train_forward_for_export");
  const std::string path = (dir.p / "model.onnx").string();
  REQUIRE(save_model(two_weights(), path).ok());
  auto loaded = load_model(path);
  REQUIRE(loaded.ok());
  const Tensor want_released = loaded->graph.initializers.at("released").clone();
  ForwardForExport kept(*loaded, path);
  Tensor held = loaded->graph.initializers.at("held");  // what "training" still holds
  held.data<float>()[0] = 42.f;                            // trained in place
  loaded = Model();                                        // "released" has no owner left

  Model out = kept.with_live_initializers();
  REQUIRE(out.graph.is_initializer("held"));
  REQUIRE_FALSE(out.graph.is_initializer("released"));
  REQUIRE(out.graph.initializers.at("held").raw() == held.raw());
  REQUIRE(kept.read_released(out).ok());
  require_close(out.graph.initializers.at("released"), want_released, 0, 0);
  REQUIRE(out.graph.initializers.at("held").data<float>()[0] == 42.f);
  REQUIRE(out.graph.nodes.size() == 2);

  SECTION("a model file replaced during the run is refused, naming the initializer") {
    Model other = two_weights();
    other.graph.initializers["released"] = random_tensor({3, 3}, 3);
    REQUIRE(save_model(other, path).ok());
    Model again = kept.with_live_initializers();
    auto st = kept.read_released(again);
    REQUIRE_FALSE(st.ok());
    REQUIRE_THAT(st.message(), Catch::Contains("changed during the run") && Catch::Contains("'released'"));
  }
}

TEST_CASE("forward for export: the content hash sees dtype, dims and every byte", "[export]") {
  Tensor a = random_tensor({4, 5}, 1);
  REQUIRE(tensor_content_hash(a) == tensor_content_hash(a.clone()));
  REQUIRE(tensor_content_hash(a) != tensor_content_hash(a.reshaped({5, 4})));
  Tensor b = a.clone();
  b.data<float>()[19] = std::nextafter(b.data<float>()[19], 10.f);  // the last word
  REQUIRE(tensor_content_hash(a) != tensor_content_hash(b));
  Tensor odd = make<uint8_t>({3}, {1, 2, 3}), odd2 = make<uint8_t>({3}, {1, 2, 4});  // a tail shorter than a word
  REQUIRE(tensor_content_hash(odd) != tensor_content_hash(odd2));
}

}  // namespace ort_train::testing
