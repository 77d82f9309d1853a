// --precision's 16-bit weight copies: the step graph (training/step_graph.h)
// takes each Cast of a trainable weight out of the graph the trainer runs and
// keeps the copy as an initializer, which the optimizer's update rounds from the float32 weight
// once per step; after any step it equals the weight rounded.
#include <filesystem>

#include "graph/onnx_io.h"
#include "training/trainer.h"
#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;

TEST_CASE("weight_copies.rounded_from_the_weights_once_per_step") {
  for (DType low : {DType::kBFloat16, DType::kFloat16})
    for (const char* optimizer : {"AdamW", "Lamb"}) {
      INFO(dtype_name(low) << ", " << optimizer);
      fs::path dir = fs::path(source_dir()) / "tests/models/bert";
      auto desc = load_description((dir / "training.yaml").string());
      REQUIRE(desc.ok());
      desc->precision = low;
      auto model = load_model((dir / "model.onnx").string());
      REQUIRE(model.ok());
      auto tg = build_training_graph(std::move(model).value(), *desc);
      REQUIRE(tg.ok());
      auto source = make_batch_source((dir / "train_batches").string(), *tg, *desc, 0);
      REQUIRE(source.ok());
      TrainerOptions options;
      options.optimizer.name = optimizer;
      options.optimizer.lr = 0.01;
      options.optimizer.weight_decay = 0.01;
      options.grad_accum = 2;  // two forwards per step, one copy
      auto trainer = Trainer::create(std::move(tg).value(), options, *source);
      INFO(trainer.status().message());
      REQUIRE(trainer.ok());
      const Graph& g = (*trainer)->executor().model().graph;  // the graph each step runs
      const auto& trainable = (*trainer)->graph().gradients.trainable;
      for (const Node& n : g.nodes)
        if (n.op_type == "Cast")
          CHECK(std::find(trainable.begin(), trainable.end(), n.inputs[0]) == trainable.end());
      for (int s = 0; s < 3; ++s) REQUIRE((*trainer)->step().ok());
      int copies = 0;
      for (const std::string& w : trainable) {
        auto it = g.initializers.find(w + (low == DType::kBFloat16 ? "/bf16" : "/fp16"));
        if (it == g.initializers.end()) continue;
        ++copies;
        const Tensor& weight = (*trainer)->parameters().find(w)->master;
        REQUIRE(it->second.numel() == weight.numel());
        bool equal = true;
        for (int64_t k = 0; k < weight.numel(); ++k) {
          float want = low == DType::kBFloat16 ? static_cast<float>(BFloat16(weight.data<float>()[k]))
                                               : static_cast<float>(Float16(weight.data<float>()[k]));
          float have = low == DType::kBFloat16 ? static_cast<float>(it->second.data<BFloat16>()[k])
                                               : static_cast<float>(it->second.data<Float16>()[k]);
          equal = equal && (want == have || (want != want && have != have));
        }
        INFO(w);
        CHECK(equal);
      }
      CHECK(copies > 0);
    }
}

}  // namespace ort_train::testing
