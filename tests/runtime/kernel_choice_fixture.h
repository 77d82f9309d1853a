// A made-up node and a context to call kernel choices on (the kernel choice
// tests: runtime/kernel_choice.h, at once and in situ).
#pragma once
#include <chrono>
#include <memory>
#include <vector>

#include "runtime/kernel_choice.h"
#include "test_util.h"

namespace ort_train::testing {

// Spins for `ms` (a sleep could oversleep on a loaded machine by more than the gap).
inline void spin(double ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (std::chrono::steady_clock::now() < end) {
  }
}

struct Fixture {
  Node node;
  std::unique_ptr<InferContext> shapes;
  std::shared_ptr<Allocator> alloc = make_cpu_caching_allocator();
  RunOptions options;
  Fixture() {
    node.op_type = "MadeUp";
    node.name = "made_up_0";
    shapes = std::make_unique<InferContext>(node, 17, std::vector<InferContext::Input>{});
    KernelChoices::instance().clear();
    KernelChoices::instance().set_deterministic(false);
  }
  ~Fixture() {
    KernelChoices::instance().clear();
    KernelChoices::instance().set_deterministic(false);
  }
  Status run(const KernelFn& fn) {
    KernelContext ctx(node, 17, {}, *shapes, *alloc, options, 0);
    return fn(ctx);
  }
  // One call's outputs.
  Result<std::vector<Tensor>> outputs_of(const KernelFn& fn) {
    KernelContext ctx(node, 17, {}, *shapes, *alloc, options, 0);
    RETURN_IF_ERROR(fn(ctx));
    return ctx.outputs();
  }
};

}  // namespace ort_train::testing
