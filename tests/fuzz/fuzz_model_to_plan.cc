// The run and inspect commands' path from an ONNX file's bytes to a planned
// graph: parse, convert, check every op is known, infer shapes (with constant
// folding, which runs CPU kernels on the file's constants), estimate memory,
// check kernels, and, when the model names its own loss, build and optimize
// the training graph. Nothing is executed beyond constant folding.
#include "autodiff/training_graph.h"
#include "graph/onnx_io.h"
#include "graph/shape_inference.h"
#include "runtime/executor.h"
#include "tests/fuzz/fuzz_input.h"

using namespace ort_train;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A folder with nothing in it: external data must not resolve to real files.
  auto model = load_model_from_bytes(fuzz::bytes_of(data, size), "/nonexistent/ort_train_fuzz");
  if (!model.ok() || !check_ops_known(*model).ok()) return 0;
  Model forward = *model;
  ShapeInferenceOptions options;
  options.dim_values = {{"batch", 2}, {"batch_size", 2}, {"seq", 8}, {"sequence", 8}, {"sequence_length", 8}};
  if (!infer_shapes(forward, options).ok()) return 0;
  (void)estimate_memory(forward);
  (void)check_kernels(forward, DeviceKind::kCpu);
  ModelDescription desc;
  desc.dims = options.dim_values;
  auto training = build_training_graph(std::move(*model), desc);
  if (training.ok()) (void)estimate_memory(training->model);
  return 0;
}
