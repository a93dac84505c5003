// How a reverse exchange combines the copies of a point (halox/exchange.hpp).
#pragma once

#include <string>

namespace halox {

enum class reduction { sum, min, max };
inline constexpr reduction all_reductions[] = {reduction::sum, reduction::min, reduction::max};
reduction parse_reduction(const std::string& name);  // "sum" | "min" | "max"; throws usage_error
std::string to_string(reduction op);

// Where a reverse call leaves the combined value: in the owner only (every
// other copy keeps its contribution), or in every rank that holds the point.
enum class reverse_to { owner, every_holder };

}  // namespace halox
