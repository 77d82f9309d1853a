// training/stop_signals.h: the first stop signal is noted and the process goes
// on; a second one ends it at once, by that signal. Each case runs in a
// forked child, so the test process's own signal handling is untouched.
#include "training/stop_signals.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/communicator.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `body` in a child; its wait status.
template <typename F>
int in_child(F body) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("apps.stop_signals_the_first_is_noted_and_the_run_goes_on") {
  for (int sig : {SIGTERM, SIGINT, SIGUSR1}) {
    int status = in_child([sig] {
      catch_stop_signals();
      if (stop_signal() != 0) return 2;
      std::raise(sig);
      return stop_signal() == sig ? 0 : 3;
    });
    INFO(signal_name(sig));
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

// What the first signal's message promises is what the run will do: a
// checkpoint only where there is a --checkpoint-dir.
TEST_CASE("apps.stop_signals_say_whether_a_checkpoint_follows") {
  for (bool checkpoints : {true, false}) {
    Dir d("stop_signals_message");
    std::string log = d / "stderr";
    int status = in_child([&] {
      FILE* f = std::freopen(log.c_str(), "w", stderr);
      if (!f) return 5;
      catch_stop_signals(checkpoints);
      std::raise(SIGINT);
      return 0;
    });
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    std::string said = read_text(log);
    INFO(said);
    CHECK((said.find("with a checkpoint") != std::string::npos) == checkpoints);
    CHECK((said.find("nothing will be saved, as this run has no --checkpoint-dir") != std::string::npos) == !checkpoints);
  }
}

TEST_CASE("apps.stop_signals_a_second_ends_the_process_at_once") {
  int status = in_child([] {
    catch_stop_signals();
    std::raise(SIGTERM);
    std::raise(SIGUSR1);  // any second stop signal, not only the same one
    return 0;              // not reached
  });
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGUSR1);
}

TEST_CASE("apps.stop_signals_one_process_agrees_with_itself") {
  int status = in_child([] {
    auto comm = job_communicator();  // not under a launcher: the single-process one
    if (!comm.ok() || (*comm)->size() != 1) return 4;
    auto none = agreed_stop_signal(**comm);
    if (!none.ok() || *none != 0) return 2;
    catch_stop_signals();
    std::raise(SIGINT);
    auto stop = agreed_stop_signal(**comm);
    return stop.ok() && *stop == SIGINT ? 0 : 3;
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

}  // namespace ort_train::testing
