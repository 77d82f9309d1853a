// Which device a command runs on, decided in one place for `train`, `run`
// and `inspect`: "cpu", "cuda" or "cuda:i" as asked, or, when nothing was
// asked, a GPU when one is usable and has a kernel for every node of the
// graph that will run, else the CPU (with a warning that says why).
#pragma once
#include <memory>
#include <string>

#include "graph/graph.h"
#include "runtime/device.h"

namespace ort_train {

// `requested`: "", "cpu", "cuda" or "cuda:i" (the command line's --device,
// already checked for its form). `settings.index` is the GPU a bare "cuda"
// or "" takes (under a launcher, the rank's local GPU). A named GPU that
// lacks a kernel for a node of `model` is an error listing every such node.
Result<std::shared_ptr<Device>> choose_device(const std::string& requested, DeviceSettings settings,
                                              const Model& model);

}  // namespace ort_train
