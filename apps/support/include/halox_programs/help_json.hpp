// --help-json: a program's options as JSON, read by `halox sweep` to check a
// sweep specification against the program itself.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace halox {

inline constexpr const char* help_json_flag = "--help-json";

// {"program": ..., "options": [...]}, one entry per option (help flags left out):
//   name      the long name ("--halo"); names: every name, negations: "--no-x" forms
//   flag      true when it takes no value; expected: values it takes (-1: any number)
//   type      CLI11's type name (INT, UINT, FLOAT, TEXT, SIZE, ...), absent for flags
//   delimiter the separator of a list given as one word (","), where it has one
//   default   the default as text, where the program states it
//   help      the description; hidden: true when --help does not list it
//   choices   the accepted values, where CLI11 checks them (IsMember)
//   range     [min, max], where CLI11 checks it (Range)
//   counts    true when a count is accepted besides the choices (declared_values)
//   all       the choices that "all" stands for (declared_values)
nlohmann::json option_schema(CLI::App& app);

// Declares the words an option takes, for --help-json (choices, counts, all)
// and --help, without checking them: the program checks its values itself,
// with its own messages. `counts`: a positive count is accepted too; `all`:
// what the word "all" stands for.
CLI::Validator declared_values(const std::vector<std::string>& words, bool counts = false,
                               const std::vector<std::string>& all = {});

}  // namespace halox
