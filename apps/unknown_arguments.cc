// Unknown command-line options, each with the nearest known name: a typo
// should cost one glance, not a trip to --help.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "apps/commands.h"

namespace ort_train::app {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

namespace {

std::vector<std::string> long_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
  return names;
}

}  // namespace

std::string unknown_arguments(const CLI::App& app, const std::string& subcommand, const std::vector<std::string>& args,
                              const std::string& fallback) {
  std::vector<std::string> known = long_names(app);
  for (const std::string& n : long_names(*app.get_subcommand(subcommand))) known.push_back(n);
  std::vector<std::string> said;
  for (const std::string& a : args) {
    if (a.size() < 2 || a[0] != '-' || a == "--" || a == "-h") continue;
    std::string name = a.substr(0, a.find('='));
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string nearest;
    size_t best = std::string::npos;
    for (const std::string& k : known) {
      size_t d = edit_distance(name, k);
      if (d < best) best = d, nearest = k;
    }
    // Close: a couple of letters off, or a quarter of a long name.
    bool close = best <= std::max<size_t>(2, name.size() / 4);
    said.push_back(close ? fmt::format("unknown option {} (did you mean {}?)", name, nearest)
                         : fmt::format("unknown option {}", name));
  }
  if (said.empty()) return fallback;
  std::string out = said[0];
  for (size_t i = 1; i < said.size(); ++i) out += "; " + said[i];
  return out;
}

}  // namespace ort_train::app
