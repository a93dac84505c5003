#include "halox_programs/cli.hpp"

#include <fmt/core.h>

#include "halox/common/error.hpp"
#include "halox_programs/help_json.hpp"
#include "halox_programs/program.hpp"

namespace halox {

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Like --help, --help-json wins over every other argument.
  bool help_json = false;
  app.add_flag(help_json_flag, help_json,
               "Print the options (names, type, values expected, default, help, choices) as "
               "JSON and exit");
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == help_json_flag) {
      if (rank == 0) fmt::print("{}\n", option_schema(app).dump(2));
      return exit_ok;
    }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (rank == 0) fmt::print("{}", app.help());
    return exit_ok;
  } catch (const CLI::CallForAllHelp&) {
    if (rank == 0) fmt::print("{}", app.help("", CLI::AppFormatMode::All));
    return exit_ok;
  } catch (const CLI::CallForVersion&) {
    if (rank == 0) fmt::print("{}\n", app.version());
    return exit_ok;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = e.get_name();
    throw usage_error(what);
  }
  return std::nullopt;
}

std::vector<std::string> split_list(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& value : values) {
    size_t start = 0;
    while (start <= value.size()) {
      size_t comma = value.find(',', start);
      if (comma == std::string::npos) comma = value.size();
      if (comma > start) out.push_back(value.substr(start, comma - start));
      start = comma + 1;
    }
  }
  return out;
}

}  // namespace halox
