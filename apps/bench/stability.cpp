#include "stability.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "halox_programs/stats.hpp"

namespace halox::bench {

std::optional<round_ratios> per_round_ratios(const std::vector<double>& baseline_round_medians,
                                             const std::vector<double>& round_medians) {
  round_ratios out;
  for (size_t k = 0; k < baseline_round_medians.size() && k < round_medians.size(); ++k)
    if (round_medians[k] > 0 && baseline_round_medians[k] > 0)
      out.per_round.push_back(baseline_round_medians[k] / round_medians[k]);
  if (out.per_round.empty()) return std::nullopt;
  const summary s = summarize(out.per_round);
  out.median = s.median;
  out.min = s.min;
  out.max = s.max;
  return out;
}

probe_spread spread_of(const std::vector<turn_probes>& turns) {
  probe_spread out;
  std::vector<const probe_sample*> all;
  for (const auto& t : turns) {
    all.push_back(&t.before);
    all.push_back(&t.after);
    // The after-probe's shares cover the turn itself.
    out.worst_run_wait = std::max(out.worst_run_wait, t.after.run_wait_share.value_or(0.0));
    out.worst_steal = std::max(out.worst_steal, t.after.steal_share.value_or(0.0));
  }
  if (all.empty()) return out;
  const size_t pairs = all.front()->round_trip_ns.size();
  for (size_t p = 0; p < pairs; ++p) {
    double low = 1e300, high = 0;
    for (const auto* s : all) {
      low = std::min(low, s->round_trip_ns[p]);
      high = std::max(high, s->round_trip_ns[p]);
    }
    if (low > 0 && high / low > out.round_trip_factor) {
      out.round_trip_factor = high / low;
      out.round_trip_low_ns = low;
      out.round_trip_high_ns = high;
    } else if (out.round_trip_high_ns == 0) {
      out.round_trip_low_ns = low;
      out.round_trip_high_ns = high;
    }
  }
  double low = 1e300, high = 0;
  for (const auto* s : all) {
    low = std::min(low, s->copy_GBps);
    high = std::max(high, s->copy_GBps);
  }
  if (low > 0) out.copy_factor = high / low;
  return out;
}

cell_stability judge_cell(const std::vector<double>& per_round, const std::vector<turn_probes>& turns) {
  cell_stability c;
  if (per_round.size() > 1) {
    const auto [low, high] = std::minmax_element(per_round.begin(), per_round.end());
    if (*low > 0) c.rounds_disagree = *high / *low - 1;
    if (c.rounds_disagree > rounds_disagree_above)
      c.reasons.push_back(fmt::format("rounds disagree by {:.0f} %", 100 * c.rounds_disagree));
  }
  const probe_spread s = spread_of(turns);
  if (s.round_trip_factor > mode_factor)
    c.reasons.push_back(fmt::format("round trip moved {:.0f}-{:.0f} ns", s.round_trip_low_ns,
                                    s.round_trip_high_ns));
  if (s.copy_factor > mode_factor)
    c.reasons.push_back(fmt::format("copy bandwidth moved x{:.1f}", s.copy_factor));
  if (s.worst_run_wait > run_wait_above)
    c.reasons.push_back(fmt::format("ranks waited {:.0f} % of a turn for their cores",
                                    100 * s.worst_run_wait));
  if (s.worst_steal > steal_above)
    c.reasons.push_back(fmt::format("{:.0f} % of a turn stolen", 100 * s.worst_steal));
  c.stable = c.reasons.empty();
  return c;
}

bool settled(const std::vector<double>& per_round) {
  if (static_cast<int>(per_round.size()) < settle_min_rounds) return false;
  std::vector<double> sorted = per_round;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.size() >= 5) sorted = std::vector<double>(sorted.begin() + 1, sorted.end() - 1);
  const double median = summarize(per_round).median;
  return sorted.front() >= median * (1 - settle_within) && sorted.back() <= median * (1 + settle_within);
}

}  // namespace halox::bench
