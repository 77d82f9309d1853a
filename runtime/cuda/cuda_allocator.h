#pragma once
#include <memory>

#include "runtime/allocator.h"

namespace ort_train::cuda {

// Size-binned caching allocator over cudaMalloc. Blocks freed by the executor
// return to their bin and are handed to the next request of that bin; since
// all work of a step is queued on one stream, a block may be reused as soon as
// it is freed (stream order keeps the old reader ahead of the new writer).
// When cudaMalloc fails the cache is emptied and the request retried once;
// if that fails too the storage has no memory (data() is null), which the
// kernel helpers turn into an out-of-memory error naming the node.
std::shared_ptr<Allocator> make_cuda_caching_allocator(int device);

}  // namespace ort_train::cuda
