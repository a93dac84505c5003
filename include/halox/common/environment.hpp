// The one reader of the HALOX_* environment variables and its parsers. Each
// variable is an optional override of an option (exchange_options, or a
// program's flag): an option set explicitly wins. The table of them all is
// halox::environment_variables() (halox/exchange.hpp); docs/library.md lists
// the same table.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace halox {

struct environment_variable {
  std::string_view name;
  std::string_view overrides;  // the option it stands for
  std::string_view meaning;
};

// The variable's value, or nullopt when it is unset or empty. Throws
// std::logic_error for a name that is not a HALOX_* variable.
std::optional<std::string> environment_value(std::string_view name);

// The variable as a value of its kind, or nullopt when it is unset or empty.
// A malformed value throws usage_error "NAME='text' is not ...".
std::optional<size_t> environment_count(std::string_view name);    // 0, 1, 2, ...
std::optional<bool> environment_switch(std::string_view name);     // 0 or 1
std::optional<double> environment_seconds(std::string_view name);  // > 0

}  // namespace halox
