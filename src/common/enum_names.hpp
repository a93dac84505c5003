// An enumeration's names written once, in a table by enumerator order, and
// both directions read from it: parse (the programs' and the environment's
// text) and to_string (records, messages, reports).
#pragma once

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "halox/common/error.hpp"

namespace halox {

template <class Enum, size_t count>
struct enum_names {
  std::string_view kind;  // what the names are, as an error names it: "algorithm"
  std::array<std::string_view, count> names;  // names[i] is enumerator i's

  // Throws usage_error "unknown KIND 'NAME' (expected A, B, C)".
  Enum parse(std::string_view name) const {
    const auto at = std::ranges::find(names, name);
    if (at == names.end())
      throw usage_error(
          fmt::format("unknown {} '{}' (expected {})", kind, name, fmt::join(names, ", ")));
    return static_cast<Enum>(at - names.begin());
  }

  // "?" for a value outside the enumeration (one cast from an integer).
  std::string to_string(Enum value) const {
    const auto i = static_cast<size_t>(value);
    return i < count ? std::string(names[i]) : "?";
  }
};

// The table sized by its names: make_enum_names<algorithm>("algorithm", "standard", ...).
// It cannot see the enumeration, so a static_assert beside it checks its size
// against the enumeration's list of every value (all_algorithms).
template <class Enum, class... Names>
constexpr enum_names<Enum, sizeof...(Names)> make_enum_names(std::string_view kind,
                                                             Names... names) {
  return {kind, {std::string_view(names)...}};
}

}  // namespace halox
