// Summary statistics of repeated timings.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <span>
#include <vector>

namespace halox {

struct summary {
  size_t count = 0;
  double mean = 0, median = 0, min = 0, max = 0, stddev = 0;
  double p5 = 0, p25 = 0, p75 = 0, p95 = 0;
};

// Percentiles by linear interpolation between closest ranks; the median is
// halox::median (halox/common/median.hpp), the same as the 50th percentile.
summary summarize(std::vector<double> samples);
double percentile_of_sorted(const std::vector<double>& sorted, double fraction);

// Indices of `values` from the smallest value to the largest; equal values
// keep their order (the lower index first).
std::vector<size_t> ascending_order(std::span<const double> values);

void to_json(nlohmann::json& j, const summary& s);

}  // namespace halox
