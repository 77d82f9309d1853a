// Reading and writing ONNX files. The protobuf is parsed directly (no onnx
// checker), so IR versions and opsets newer than the installed onnx library
// load; unknown fields survive a round trip through the retained proto.
#pragma once
#include <string>

#include "graph/atomic_file.h"
#include "graph/graph.h"
#include "graph/status.h"

namespace onnx {
class TensorProto;
}

namespace ort_train {

struct LoadOptions {
  // The main graph's external-data float initializers of this many bytes or
  // more are mapped from their file, not read (graph/mapped_external_data.h:
  // whoever loads so reads them in before training); 0 reads every one now.
  uint64_t map_external_from_bytes = 0;
};

// Loads a model: parses, reads external-data initializers relative to the
// model's folder, converts Constant nodes' values, and sorts nodes topologically.
// Shape inference is a separate step (graph/shape_inference.h).
Result<Model> load_model(const std::string& path, const LoadOptions& options = {});
Result<Model> load_model_from_bytes(const std::string& bytes, const std::string& base_dir);

// Writes the model atomically (temporary file, then rename).
Status save_model(const Model& model, const std::string& path);

// TensorProto <-> Tensor. `base_dir` resolves external data.
Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir);
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* proto);

// A single TensorProto file (ONNX test-data style input_N.pb / <name>.pb).
struct NamedTensor {
  std::string name;
  Tensor tensor;
};
Result<NamedTensor> read_tensor_file(const std::string& path);
// The same from the file's bytes; external data resolves against `base_dir`,
// `path` names the file in errors.
Result<NamedTensor> parse_tensor_file(const std::string& bytes, const std::string& base_dir, const std::string& path);
Status write_tensor_file(const Tensor& t, const std::string& name, const std::string& path);
// File name for a tensor name ("<escaped>.pb"): every byte outside [A-Za-z0-9._-]
// becomes %XX (uppercase hex), '%' included, and a leading '.' becomes %2E, so
// any name maps to one safe file name and back ("onnx::MatMul_1" -> "onnx%3A%3AMatMul_1.pb").
std::string tensor_file_name(const std::string& tensor_name);

// Writes bytes to path atomically: a temporary sibling, flushed, then renamed.
Status write_file_atomic(const std::string& path, const std::string& bytes,
                         OutputName name = OutputName::kUserNamed);
// Whether write_file_atomic could write `path` now: its folder is made when
// missing, and the temporary sibling is created and removed again (a device
// or FIFO is opened for writing without waiting); a folder at `path` is
// refused. For what a run writes only at its end (--export), so that an
// unwritable place stops it before the training, not after.
Status check_can_write(const std::string& path);
// A regular file's bytes. FIFOs, devices, sockets and directories are refused
// (a FIFO would block, /dev/zero never ends), as is a file larger than
// `max_bytes` when it is not 0; every read is checked.
Result<std::string> read_file(const std::string& path, uint64_t max_bytes = 0);
// Whether anything is at `path`, without throwing: a link that loops counts
// (reading it then says why it fails).
bool path_present(const std::string& path);
// What protobuf parses in one message: models and tensor files larger than
// this (their weights belong in external data) are refused before reading.
inline constexpr uint64_t kMaxProtobufBytes = uint64_t{2} << 30;

}  // namespace ort_train
