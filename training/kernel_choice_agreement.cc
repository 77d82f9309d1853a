#include "training/kernel_choice_agreement.h"

#include <spdlog/spdlog.h>

#include "runtime/kernel_choice.h"
#include "training/rank_agreement.h"

namespace ort_train {

Status agree_kernel_choices(Executor& executor, const BatchSource& source, uint64_t seed, Communicator& comm) {
  KernelChoices& choices = KernelChoices::instance();
  if (comm.size() <= 1 || choices.deterministic()) return Status::Ok();
  if (comm.rank() == 0) {
    ASSIGN_OR_RETURN(auto feeds, source(0));
    RunOptions options;
    options.training = true;
    options.seed = seed;
    // Choices measured in situ would be made over the run's first steps, on
    // each rank apart: this run makes them all.
    choices.set_measure_at_once(true);
    Status ran = executor.run(feeds, options).status();
    choices.set_measure_at_once(false);
    RETURN_IF_ERROR(ran);
    RETURN_IF_ERROR(executor.device().synchronize());
  }
  ASSIGN_OR_RETURN(auto agreed, rank0_settings(comm, choices.all()));
  choices.clear();
  for (const auto& [key, candidate] : agreed) choices.keep(key, candidate);
  if (comm.rank() == 0 && !agreed.empty())
    spdlog::info("kernel choices: rank 0's {} hold on every rank", agreed.size());
  return Status::Ok();
}

}  // namespace ort_train
