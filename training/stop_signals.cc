#include "training/stop_signals.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

#include "runtime/communicator.h"

namespace ort_train {
namespace {

std::atomic<int> g_signal{0};
bool g_checkpoints = true;  // set before the handlers are installed
constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGUSR1};

void say(const char* text) {
  // write(2) is what a signal handler may call; the message is built from constants.
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void on_stop_signal(int sig) {
  int none = 0;
  if (!g_signal.compare_exchange_strong(none, sig)) {
    // The second signal: the default action (termination), at once.
    say("ort_train: a second stop signal: exiting now, without a checkpoint\n");
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  if (g_checkpoints)
    say("ort_train: stop signal received: stopping after the step in flight, with a checkpoint "
        "(a second signal exits at once)\n");
  else
    say("ort_train: stop signal received: stopping after the step in flight; nothing will be saved, as this run "
        "has no --checkpoint-dir (a second signal exits at once)\n");
}

}  // namespace

void catch_stop_signals(bool checkpoints) {
  g_checkpoints = checkpoints;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // Interrupted system calls restart: the step in flight (reads, MPI waits) goes on.
  sa.sa_flags = SA_RESTART;
  for (int sig : kStopSignals) sigaction(sig, &sa, nullptr);
}

int stop_signal() { return g_signal.load(); }

Result<int> agreed_stop_signal(Communicator& comm) {
  int mine = stop_signal();
  if (comm.size() <= 1) return mine;
  // One slot per stop signal, summed over the ranks: every rank names the
  // same signal, one some rank received. (A rank the signal had not reached
  // yet used to name SIGTERM: rank 0 logged "stopped by SIGTERM" for Slurm's
  // SIGUSR1 that had reached rank 1 first.)
  constexpr size_t kCount = sizeof(kStopSignals) / sizeof(kStopSignals[0]);
  Tensor noted = Tensor::host(DType::kFloat, {static_cast<int64_t>(kCount)});
  for (size_t i = 0; i < kCount; ++i) noted.data<float>()[i] = mine == kStopSignals[i] ? 1.f : 0.f;
  RETURN_IF_ERROR(comm.allreduce_sum(noted));
  for (size_t i = 0; i < kCount; ++i)
    if (noted.data<float>()[i] >= 0.5f) return kStopSignals[i];
  return 0;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
  }
}


}  // namespace ort_train
