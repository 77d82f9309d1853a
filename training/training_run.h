// The training loop, from a built Trainer to the last step: resume, the
// steps, logging and progress, --metrics and --tensorboard, held-out
// evaluation, checkpoint timing (synchronous or in the background), kernel
// choices kept after the first step, and the stop signals a scheduler sends.
// apps/train_command.cc parses the command line and builds the Trainer;
// this is what it calls. Every rank of a job calls it alike: the stop check
// and ZeRO's checkpoint gather are collectives.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "configs/model_description.h"
#include "graph/status.h"
#include "runtime/communicator.h"
#include "training/trainer.h"

namespace ort_train {

struct RunSettings {
  int64_t steps = 0;  // the step to stop after (a resumed run continues to it)
  std::map<std::string, std::string> fingerprint;  // written into checkpoints, checked on resume
  // Checkpoints: written into `checkpoint_dir` every `save_every` steps (0:
  // only at the end) and when a stop signal ends the run; the newest `keep`
  // kept; `background`: written by a thread while training goes on.
  std::string checkpoint_dir;
  int64_t save_every = 0;
  int keep = 3;
  bool background_checkpoints = false;
  bool resume = false;  // continue from the newest complete checkpoint in checkpoint_dir
  bool zero = false;    // ZeRO: every rank takes part in gathering a checkpoint's optimizer state
  std::string kernel_choices;  // the measured kernel choices, written after the first step (rank 0)
  std::string metrics;         // --metrics: one JSON line per step
  std::string tensorboard;     // --tensorboard: event files
  std::string command_line;    // shown by TensorBoard as text
  int64_t log_every = 0;       // 0: about ten lines per run
  // Held-out data (--eval-data): read and checked before step 1, evaluated
  // every `eval_every` steps (0: none between) and after the last one.
  std::string eval_data;
  int64_t eval_every = 0;
  ModelDescription description;  // the data settings the held-out batches are read with
  uint64_t seed = 0;
};

struct RunOutcome {
  int stopped_by = 0;          // the stop signal that ended the run before its last step, or 0
  bool resumable = false;      // the stop left a checkpoint that --resume continues from
  std::string metrics_file;    // complete, regular and not empty: what `plot` can draw; "" otherwise
  // The evaluation after the last step: its failure leaves the trained model
  // to be exported before the run reports it.
  Status last_evaluation;
};

Result<RunOutcome> run_training(Trainer& trainer, Communicator& comm, const RunSettings& settings);

// Steps that make `epochs` passes over `per_epoch` micro-batches, with
// `grad_accum` micro-batches per step on each of `ranks` ranks (at least 1).
Result<int64_t> steps_for_epochs(int64_t epochs, int64_t per_epoch, int64_t grad_accum, int ranks);

}  // namespace ort_train
