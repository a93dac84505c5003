// Command-line parsing under MPI: every rank parses the same argv; only rank 0
// speaks.
#pragma once

#include <CLI/CLI.hpp>
#include <mpi.h>

#include <optional>
#include <string>

namespace halox {

// Parses argv into app. Returns an exit code when the program should stop now
// (--help: 0 after rank 0 printed help; --help-json: 0 after rank 0 printed
// the options as JSON, see help_json.hpp), throws usage_error for a bad option.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, MPI_Comm comm);

// Splits "a,b,c" style values as well as repeated options into one list.
std::vector<std::string> split_list(const std::vector<std::string>& values);

}  // namespace halox
