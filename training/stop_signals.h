// A scheduler's stop (Slurm's SIGTERM at a time limit, on preemption or
// scancel, or its earlier --signal=USR1@T; Ctrl-C) ends a training run
// cleanly: the first SIGTERM, SIGINT or SIGUSR1 only sets a flag, which the
// loop reads before each step (every rank agrees on the step through one
// collective), then it checkpoints and exits with kExitStoppedResumable. A
// second signal ends the process at once, as the signal's default would.
#pragma once
#include <csignal>

#include "graph/status.h"

namespace ort_train {

class Communicator;

// Exit status of a run that a signal stopped after writing its checkpoint:
// sysexits' EX_TEMPFAIL, "try again" (run it again with --resume). A run with
// no --checkpoint-dir saved nothing and exits 128 + the signal, as the shell
// reports a process the signal killed.
inline constexpr int kExitStoppedResumable = 75;

// From now on the first of those signals is noted, not fatal. What the
// handler says depends on whether the run will write a checkpoint.
void catch_stop_signals(bool checkpoints = true);
// The signal noted (SIGTERM, SIGINT, SIGUSR1), or 0.
int stop_signal();
// Whether any rank noted a stop signal: a collective every rank calls after
// the same step, so all stop after it (a scheduler may signal ranks apart).
// Every rank returns the same signal, one that some rank noted (the first of
// SIGTERM, SIGINT, SIGUSR1 that any did); 0 when none was.
Result<int> agreed_stop_signal(Communicator& comm);
// "SIGTERM" for a signal number.
const char* signal_name(int sig);

}  // namespace ort_train
