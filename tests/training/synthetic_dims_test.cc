// training/synthetic_dims.h: sizes for the dims synthetic data needs where the
// model makes one obvious, and none where it does not.
#include "training/synthetic_dims.h"

#include "graph/onnx_io.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

std::vector<TensorDecl> ids_and_labels(const std::string& batch, const std::string& seq) {
  Shape shape{Dim(batch), Dim(seq)};
  return {TensorDecl{"ids", DType::kInt64, shape, std::nullopt}, TensorDecl{"labels", DType::kInt64, shape, std::nullopt}};
}

}  // namespace

TEST_CASE("synthetic_dims: the batch and the position table's rows") {
  Model bert = load_model(source_dir() + "/tests/models/bert/model.onnx").value();
  SyntheticDims s = default_synthetic_dims(bert.graph, ids_and_labels("batch", "seq"), {}, std::nullopt);
  CHECK(s.dims == std::map<std::string, int64_t>{{"batch", kDefaultBatchSize}, {"seq", 64}});
  CHECK(s.defaulted.size() == 2);
  // The description's batch size, and a dim given stays as given.
  SyntheticDims given = default_synthetic_dims(bert.graph, ids_and_labels("batch", "seq"), {{"seq", 5}}, 3);
  CHECK(given.dims == std::map<std::string, int64_t>{{"batch", 3}, {"seq", 5}});
  // The batch under another name: the symbol every input starts with.
  SyntheticDims named = default_synthetic_dims(bert.graph, ids_and_labels("n", "s"), {}, std::nullopt);
  CHECK(named.dims == std::map<std::string, int64_t>{{"n", kDefaultBatchSize}, {"s", 64}});
}

TEST_CASE("synthetic_dims: no position table, no sequence length") {
  // The GRU LM reads its embedding at the token ids only: nothing says how long a sequence is.
  Model gru = load_model(source_dir() + "/tests/models/gru_lm/model.onnx").value();
  SyntheticDims s = default_synthetic_dims(gru.graph, ids_and_labels("batch", "seq"), {}, std::nullopt);
  CHECK(s.dims == std::map<std::string, int64_t>{{"batch", kDefaultBatchSize}});
}

}  // namespace ort_train::testing
