#include "apps/option_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "apps/commands.h"
#include "graph/passes/pass.h"

namespace ort_train::app {
namespace {

bool parse_whole(const std::string& v, long long& out) {
  if (v.empty()) return false;
  errno = 0;
  char* end = nullptr;
  out = std::strtoll(v.c_str(), &end, 10);
  return errno == 0 && end && *end == '\0';
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

CLI::Validator whole_number_at_least(long long least) {
  return CLI::Validator(
      [least](std::string& v) -> std::string {
        long long n = 0;
        if (parse_whole(v, n) && n >= least) return "";
        return fmt::format("'{}' is not a whole number of {} or more", v, least);
      },
      fmt::format("INT>={}", least));
}

CLI::Validator whole_number_in(long long least, long long most) {
  return CLI::Validator(
      [least, most](std::string& v) -> std::string {
        long long n = 0;
        if (parse_whole(v, n) && n >= least && n <= most) return "";
        return fmt::format("'{}' is not a whole number from {} to {}", v, least, most);
      },
      fmt::format("INT in [{}, {}]", least, most));
}

CLI::Validator number_at_least(double least) {
  return CLI::Validator(
      [least](std::string& v) -> std::string {
        char* end = nullptr;
        double x = v.empty() ? NAN : std::strtod(v.c_str(), &end);
        if (end && *end == '\0' && std::isfinite(x) && x >= least) return "";
        return fmt::format("'{}' is not a number of {} or more", v, least);
      },
      fmt::format("NUMBER>={}", least));
}

CLI::Validator one_of(std::vector<std::string> names) {
  std::string desc = "{" + joined(names) + "}";
  return CLI::Validator(
      [names = std::move(names)](std::string& v) -> std::string {
        for (const std::string& n : names)
          if (v == n) return "";
        return fmt::format("'{}' is not one of: {}", v, joined(names));
      },
      desc);
}

CLI::Validator byte_size() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        return parse_byte_size(v).ok() ? "" : fmt::format("'{}' is not a size such as 2G, 512M or 1073741824 (bytes)", v);
      },
      "SIZE");
}

CLI::Validator dim_assignment() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        size_t eq = v.find('=');
        long long size = 0;
        if (eq != 0 && eq != std::string::npos && parse_whole(v.substr(eq + 1), size) && size > 0) return "";
        return fmt::format("'{}' is not NAME=SIZE with a positive size, e.g. --dim seq=128", v);
      },
      "NAME=SIZE");
}

CLI::Validator graph_pass_names() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        if (v == "none") return "";
        std::vector<std::string> known = PassRegistry::instance().names();
        size_t start = 0;
        while (start <= v.size()) {
          size_t comma = std::min(v.find(',', start), v.size());
          std::string name = v.substr(start, comma - start);
          if (!name.empty() && std::find(known.begin(), known.end(), name) == known.end())
            return fmt::format("'{}' is not a graph pass (the passes: {})", name, joined(known));
          start = comma + 1;
        }
        return "";
      },
      "PASS[,PASS...]");
}

std::string conversion_error_message(const CLI::App& app, const CLI::ConversionError& e) {
  // CLI11 says "Could not convert: NAME = VALUE".
  std::string what = e.what();
  const std::string prefix = "Could not convert: ";
  size_t eq = what.find(" = ");
  if (what.rfind(prefix, 0) != 0 || eq == std::string::npos) return what;
  std::string name = what.substr(prefix.size(), eq - prefix.size()), value = what.substr(eq + 3);
  std::string kind = "a value of this option's type";
  std::vector<const CLI::App*> apps{&app};
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) apps.push_back(sub);
  for (const CLI::App* a : apps) {
    for (const CLI::Option* o : a->get_options()) {
      if (!o->check_name(name)) continue;
      std::string type = o->get_type_name();
      if (type.find("FLOAT") != std::string::npos) kind = "a number";
      else if (type.find("INT") != std::string::npos) kind = "a whole number";
    }
  }
  return fmt::format("{}: '{}' is not {}", name, value, kind);
}

std::string unknown_subcommand(const CLI::App& app, const std::string& word) {
  if (word.empty() || word[0] == '-' || word.find_first_of("/.=") != std::string::npos) return "";
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == word) return "";
    names.push_back(sub->get_name());
  }
  std::string nearest;
  size_t best = std::string::npos;
  for (const std::string& n : names) {
    size_t d = edit_distance(word, n);
    if (d < best) best = d, nearest = n;
  }
  if (best <= 2) return fmt::format("unknown command '{}' (did you mean {}?)", word, nearest);
  return fmt::format("unknown command '{}' (commands: {}; train is the default)", word, joined(names));
}

}  // namespace ort_train::app
