// Initializers whose bytes stay in the model's external-data file until they
// are needed. A 16-bit fine-tune of a large export holds each frozen float32
// weight only as its 16-bit copy; reading the whole float32 file first made
// the start of the run the peak (1.06x the float32 weights for LoRA in bf16,
// where the copies need 0.5x). So load_model can map large float
// initializers instead of reading them: the tensor's storage is a private,
// read-only mapping of its range of the file, whose pages the kernel reads
// only if something touches them, and which leave the process's memory when
// the tensor is released. Constant folding reads a weight in just before it
// folds it (Cast to bf16, Transpose), and the training setup reads in every
// initializer still mapped once the graph is built, so nothing the trainer
// or a kernel sees is still backed by the file.
//
// Reading in replaces the mapping at the same address by anonymous memory and
// reads the range with pread, so every Tensor sharing the storage (and every
// weak reference to it) stays valid. The file must be the one the model was
// loaded from: reopened by path, its device, inode, size and modification
// and change times are compared with those seen at load; a file replaced or
// rewritten in between is an error naming the initializer, never other
// bytes. (Reading through the mapping itself instead would turn a file
// truncated meanwhile into SIGBUS.)
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "graph/graph.h"
#include "graph/regular_file.h"
#include "graph/status.h"
#include "graph/tensor.h"

namespace ort_train {

// The storage of initializer `name`: `length` bytes at `offset` of `f`,
// opened from `path`, mapped, not read. The caller has checked the range
// against the file. Fails (the caller then reads the bytes instead) when the
// mapping cannot be made.
Result<std::shared_ptr<Storage>> map_external_range(const RegularFile& f, const std::string& path, uint64_t offset,
                                                     uint64_t length, const std::string& name);

// Whether `t`'s bytes are still only mapped from their file.
bool is_mapped_external(const Tensor& t);

// Reads `t`'s bytes in, in place (nothing to do when they are not mapped).
Status read_in(const Tensor& t);

// `t` itself, or, while `t` is still mapped, a fresh copy of its bytes read
// from the file (checked as read_in checks it), for a reader that looks at
// every weight once before the passes (the trainable set's mask scan,
// `--export`'s hashes): read through the mapping, the pages would stay in
// memory until the weight is folded, and a file truncated meanwhile would
// end the run with SIGBUS.
Result<Tensor> readable(const Tensor& t);

// Reads in every initializer of `g` still mapped (subgraphs never map theirs).
Status read_in_initializers(const Graph& g);

// The bytes of initializers still mapped in this process, for tests and logs.
uint64_t mapped_external_bytes();

}  // namespace ort_train
