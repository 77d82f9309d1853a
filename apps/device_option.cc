// --device (train and run): cpu, cuda or cuda:i. One validator so both
// commands accept and refuse the same spellings.
#include <regex>

#include "apps/commands.h"

namespace ort_train::app {

void add_device_option(CLI::App* cmd, std::string& value, const std::string& description) {
  cmd->add_option("--device", value, description)
      ->check(CLI::Validator(
          [](std::string& d) -> std::string {
            static const std::regex form("cpu|cuda|cuda:[0-9]{1,3}");
            return std::regex_match(d, form) ? "" : "'" + d + "' is not cpu or cuda[:i]";
          },
          "DEVICE"));
}

}  // namespace ort_train::app
