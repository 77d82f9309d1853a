// Logging and exit codes: the two things only apps/ decides. Colours only
// where a person reads a terminal: under mpirun or srun the ranks' stdout is
// a pseudo-terminal the launcher forwards, often into a file, so `auto`
// treats a launched process as not on a terminal; NO_COLOR (no-color.org)
// turns colours off unless --color always.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>

#include "apps/commands.h"
#include "runtime/communicator.h"

namespace ort_train::app {

void set_up_logging(const std::string& level, const std::string& color) {
  bool on = color == "always";
  if (color == "auto") {
    const char* no_color = std::getenv("NO_COLOR");
    const char* term = std::getenv("TERM");
    on = ::isatty(STDOUT_FILENO) && !(no_color && *no_color) && !(term && std::string(term) == "dumb") &&
         launch_info_from_environment().launcher.empty();
  }
  auto sink = std::make_shared<spdlog::sinks::stdout_color_sink_mt>(on ? spdlog::color_mode::always
                                                                        : spdlog::color_mode::never);
  auto logger = std::make_shared<spdlog::logger>("ort_train", sink);
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
}

int exit_code_for(const Status& st) {
  switch (st.code()) {
    case ErrorCode::kOk: return 0;
    case ErrorCode::kShape: return 2;
    case ErrorCode::kUnsupported: return 3;
    case ErrorCode::kUnavailable: return 4;
    default: return 1;
  }
}

}  // namespace ort_train::app
