// `ort_train --bash-completion`: a bash completion script made from the
// command line's own definition (CLI11 2.1 prints none), so it never falls
// behind the options: subcommands, each subcommand's flags, and the values
// of the flags that take a fixed set of them.
#include <map>
#include <set>
#include <string>

#include "apps/commands.h"

namespace ort_train::app {

namespace {

std::string flags_of(const CLI::App& app) {
  std::string out;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& name : o->get_lnames()) out += " --" + name;
    for (const std::string& name : o->get_snames()) out += " -" + name;
  }
  return out;
}

// Each word once, in first-seen order (subcommands repeat the app's help flags).
std::string unique_words(const std::string& words) {
  std::set<std::string> seen;
  std::string out, w;
  for (size_t i = 0; i <= words.size(); ++i) {
    if (i < words.size() && words[i] != ' ') {
      w += words[i];
      continue;
    }
    if (!w.empty() && seen.insert(w).second) out += " " + w;
    w.clear();
  }
  return out;
}

}  // namespace

std::string bash_completion(const CLI::App& app) {
  // Values of the flags that take a fixed set (kept with the flags in main.cc and the commands).
  const std::map<std::string, std::string> values = {{"--optimizer", "Sgd Adam AdamW Lamb"},
                                                     {"--device", "cpu cuda cuda:0 cuda:1"},
                                                     {"--color", "auto always never"},
                                                     {"--log-level", "trace debug info warn error"},
                                                     {"--passes", "none"},
                                                     {"--data", "synthetic"}};
  std::string names, alternatives, cases, top = flags_of(app);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names += " " + sub->get_name();
    alternatives += (alternatives.empty() ? "" : "|") + sub->get_name();
    cases += "    " + sub->get_name() + ") opts=\"" + unique_words(flags_of(*sub) + top) + "\" ;;\n";
  }
  std::string defaults = unique_words(names + top + flags_of(*app.get_subcommand("train")));  // train: the default
  std::string value_cases;
  for (const auto& [flag, v] : values)
    value_cases += "    " + flag + ") COMPREPLY=($(compgen -W \"" + v + "\" -- \"$cur\")); return ;;\n";
  return "# bash completion for ort_train: ort_train --bash-completion > /etc/bash_completion.d/ort_train\n"
         "_ort_train() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} sub= opts w\n"
         "  case $prev in\n" +
         value_cases +
         "  esac\n"
         "  for w in \"${COMP_WORDS[@]:1:COMP_CWORD-1}\"; do\n"
         "    case $w in " +
         alternatives +
         ") sub=$w ;; esac\n"
         "  done\n"
         "  case $sub in\n" +
         cases + "    *) opts=\"" + defaults +
         "\" ;;\n"
         "  esac\n"
         "  if [[ $cur == -* || ( -z $sub && $COMP_CWORD -eq 1 ) ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
         "  else\n"
         "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         "  fi\n"
         "}\n"
         "complete -o filenames -F _ort_train ort_train\n";
}

}  // namespace ort_train::app
