#include "halox_programs/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "halox/common/median.hpp"

namespace halox {

double percentile_of_sorted(const std::vector<double>& sorted, double fraction) {
  if (sorted.empty()) return 0.0;
  double position = fraction * static_cast<double>(sorted.size() - 1);
  size_t below = static_cast<size_t>(std::floor(position));
  size_t above = std::min(below + 1, sorted.size() - 1);
  double weight = position - static_cast<double>(below);
  return sorted[below] * (1.0 - weight) + sorted[above] * weight;
}

std::vector<size_t> ascending_order(std::span<const double> values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::ranges::stable_sort(order, [&](size_t a, size_t b) { return values[a] < values[b]; });
  return order;
}

summary summarize(std::vector<double> samples) {
  summary s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.count);
  double sum_sq = 0;
  for (double v : samples) sum_sq += (v - s.mean) * (v - s.mean);
  s.stddev = s.count > 1 ? std::sqrt(sum_sq / static_cast<double>(s.count - 1)) : 0.0;
  s.median = median(samples);
  s.p5 = percentile_of_sorted(samples, 0.05);
  s.p25 = percentile_of_sorted(samples, 0.25);
  s.p75 = percentile_of_sorted(samples, 0.75);
  s.p95 = percentile_of_sorted(samples, 0.95);
  return s;
}

void to_json(nlohmann::json& j, const summary& s) {
  j = {{"count", s.count}, {"mean", s.mean}, {"median", s.median}, {"min", s.min},
       {"max", s.max},     {"stddev", s.stddev}, {"p5", s.p5},     {"p25", s.p25},
       {"p75", s.p75},     {"p95", s.p95}};
}

}  // namespace halox
