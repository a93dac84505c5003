// Every environment variable halox reads, in one table, and the one function
// through which the library reads them. Each is an optional override of an
// option (exchange_options, or a program's flag): an option set explicitly
// wins. docs/library.md lists the same table.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace halox {

struct environment_variable {
  std::string_view name;
  std::string_view overrides;  // the option it stands for
  std::string_view meaning;
};

std::span<const environment_variable> environment_variables();

// The variable's value, or nullopt when it is unset or empty. Throws
// std::logic_error for a name that is not in the table.
std::optional<std::string> environment_value(std::string_view name);

}  // namespace halox
