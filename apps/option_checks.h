// Checks on command-line values. A bad value is one line naming the flag, the
// value and what is allowed ("--batch-size: '0' is not a whole number of 1 or
// more"), exit 64, before anything loads. CLI11's own checks printed their
// range as 0 to 1.8e308 written out in 300 digits.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ort_train::app {

CLI::Validator whole_number_at_least(long long least);       // --batch-size, --steps: integers
CLI::Validator whole_number_in(long long least, long long most);  // --threads, --zero
CLI::Validator number_at_least(double least);                // --comm-timeout: any number
CLI::Validator one_of(std::vector<std::string> names);        // --precision, --recompute
CLI::Validator byte_size();        // --max-memory: 2G, 512M, 1073741824
CLI::Validator dim_assignment();   // --dim NAME=SIZE
CLI::Validator graph_pass_names(); // --passes a,b (or none), --disable-pass, --enable-pass

// A value CLI11 could not convert to the option's type ("Could not convert:
// --lr = abc"), said as the checks above say it.
std::string conversion_error_message(const CLI::App& app, const CLI::ConversionError& e);

// The first word of a command line when it is no option and no subcommand:
// "unknown command 'trian' (did you mean train?)". Empty when `word` is a
// subcommand, an option, or a path (train is the default subcommand, and a
// word with '/' or '.' is no command anyone meant).
std::string unknown_subcommand(const CLI::App& app, const std::string& word);

}  // namespace ort_train::app
