// Whether a cell (variant x shape of one launch) can be trusted: ratios taken
// round by round against the baseline of the same round, and the rules that
// mark a cell unstable (docs/bench.md, "Stability"). The records carry every
// verdict and the closing summaries: halox report prints what they say.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "machine_probe.hpp"
#include "stability_thresholds.hpp"

namespace halox::bench {

// The thresholds (stability_thresholds.hpp, generated from
// python/halox/stability.json, which the report reads too):
//   rounds_disagree_above  rounds disagree when their largest ratio (or median,
//                          without a baseline) is more than this much above
//                          their smallest;
//   mode_factor            the probe changed mode when a pair's round trip, or
//                          the copy bandwidth, of two probes differ by more
//                          than this factor;
//   run_wait_above, steal_above  a turn was disturbed when the ranks waited
//                          this share of it for their cores, or the hypervisor
//                          stole this share of their CPUs' time;
//   settle_min_rounds, settle_within  --rounds auto: a cell has settled when,
//                          after at least this many rounds, its per-round
//                          ratios (the lowest and highest left out from 5
//                          rounds on) lie within this share of their median;
//   settle_min_span_s      ... and after the shape's rounds have spanned this
//                          many seconds: a VM's vCPUs move every few seconds,
//                          and rounds that all fall in one state agree.

struct round_ratios {
  std::vector<double> per_round;  // baseline / variant, each round against its own baseline
  double median = 0, min = 0, max = 0;
};

// Per round k: baseline[k] / variant[k] (rounds missing on either side are skipped).
std::optional<round_ratios> per_round_ratios(const std::vector<double>& baseline_round_medians,
                                             const std::vector<double>& round_medians);

// The probes around one turn (a variant's timed exchanges in one round).
struct turn_probes {
  probe_sample before, after;
};

// How far apart a list of probes is: the largest max/min of any pair's round
// trip and of the copy bandwidth, and the worst disturbance of the turns.
struct probe_spread {
  double round_trip_factor = 1, copy_factor = 1;
  double round_trip_low_ns = 0, round_trip_high_ns = 0;  // of the pair that moved most
  // Its highest below the ping-pong's cap: a round trip at the cap was a rank
  // without its core (busy), not a move of the vCPUs.
  double round_trip_answered_high_ns = 0;
  double worst_run_wait = 0, worst_steal = 0;
  int worst_run_wait_cpu = -1;  // the CPU that waited most in the most turns, where known
  double highest_load = 0;      // load average, the highest of the probes
  bool moved_mode() const { return round_trip_factor > mode_factor || copy_factor > mode_factor; }
  bool disturbed() const { return worst_run_wait > run_wait_above || worst_steal > steal_above; }
};
probe_spread spread_of(const std::vector<turn_probes>& turns);

// What made a cell unstable, in the order the closing summary prefers
// between causes of as many cells.
enum class cause { busy, steal, moved, bandwidth, launch_moved, rounds };
inline constexpr int cause_count = 6;
// The name records give a cause ("busy", "launch_moved", ...).
std::string to_string(cause why);

struct cell_stability {
  bool stable = true;
  double rounds_disagree = 0;  // max/min - 1 of the per-round ratios (or medians)
  std::vector<std::string> reasons;
  std::vector<cause> causes;   // one per reason
};

// `turns`: the probes around the cell's turns and its baseline's (its ratio
// depends on both). `launch`: the spread of every probe of the launch; when
// the launch changed mode and these turns did not, the cell was measured in
// one of the machine's modes only.
cell_stability judge_cell(const std::vector<double>& per_round, const std::vector<turn_probes>& turns,
                          const probe_spread& launch = {});

// The closing summary when cells are unstable: the causes ranked by the cells
// they marked, each with what helps against it, and the few worst cells; no
// line longer than summary_width. `brief`: a line per cause, shorter texts,
// no line longer than brief_width (the screen halox report --summary ends with).
inline constexpr size_t summary_width = 150;
inline constexpr size_t brief_width = 118;
struct named_cell {
  std::string name;
  const cell_stability* stability = nullptr;
};
std::vector<std::string> closing_summary(const std::vector<named_cell>& unstable, size_t cells,
                                         const probe_spread& launch, int cpus, bool brief = false);
// The causes by the cells they marked, most first (ties in the order of
// `cause`); a cell marked by other causes too does not count for `rounds`.
std::vector<cause> ranked_causes(const std::vector<named_cell>& unstable);
// Of a cell's causes the first in `ranked` (launch_moved counting as moved),
// else its first; nullopt for a stable cell.
std::optional<cause> leading_cause(const cell_stability& c, const std::vector<cause>& ranked);
// Lines of at most `width` characters, broken at spaces; later ones indented.
std::vector<std::string> wrap(const std::string& text, size_t width, const std::string& indent);

// --rounds auto: the ratios lie within settle_within of their median.
bool settled(const std::vector<double>& per_round);

}  // namespace halox::bench
