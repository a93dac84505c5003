// What halox-bench prints: each configuration, the summary table, the breakdown.
#include "bench_program.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <unistd.h>

namespace halox::bench {

namespace {

// A reference over the exchange, round by round (both measured in the same
// minute of the machine), median over rounds.
double share_of(const std::vector<double>& references, const std::vector<double>& exchanges) {
  std::vector<double> ratios;
  for (size_t i = 0; i < exchanges.size() && i < references.size(); ++i)
    if (exchanges[i] > 0) ratios.push_back(references[i] / exchanges[i]);
  return ratios.empty() ? 0.0 : summarize(ratios).median;
}

}  // namespace

double efficiency(const result& r) {
  return share_of(r.round_line_floors, r.round_medians);
}

double memcpy_efficiency(const result& r) {
  return share_of(r.round_floors, r.round_medians);
}

double crossing_efficiency(const result& r) {
  std::vector<double> both;
  for (size_t i = 0; i < r.round_line_floors.size() && i < r.round_crossings.size(); ++i)
    both.push_back(r.round_line_floors[i] + r.round_crossings[i]);
  return share_of(both, r.round_medians);
}

// The self-copy reference over the exchange: 1 is what the layout allows
// without crossing ranks.
double reference_share(const result& r) {
  return share_of(r.round_references, r.round_medians);
}

std::optional<rank_spread> reference_spread(const result& r) {
  const auto& t = r.reference_by_rank;
  if (t.empty()) return std::nullopt;
  const auto order = ascending_order(t);
  return rank_spread{.fastest_s = t[order.front()],
                     .median_s = t[order[(order.size() - 1) / 2]],
                     .slowest_s = t[order.back()],
                     .fastest_rank = static_cast<int>(order.front()),
                     .slowest_rank = static_cast<int>(order.back())};
}

namespace {

std::string us(double seconds) { return fmt::format("{:.2f}", seconds * 1e6); }

// A line of output, broken at spaces before summary_width (stage lists of
// many stages, transport settings).
void print_wrapped(const std::string& text, const std::string& indent) {
  for (const auto& line : wrap(text, summary_width, indent)) fmt::print("{}\n", line);
}

// What the plain-MPI variants follow, so that a ratio over them says which program it stands for.
std::string baseline_text(const std::string& baseline) {
  if (baseline == "mpi-types/staged/sequence")
    return baseline + " (the algorithm of cartex mpi_comm --MPI-datatypes)";
  if (baseline == "mpi-cartex/staged/sequence")
    return baseline + " (the algorithm of cartex mpi_comm, the Betzy results' benchmark_mpi_comm)";
  return baseline;
}

}  // namespace

void print_result(const result& r, const summary& s) {
  double mean_per = r.loop_seconds / static_cast<double>(r.exchanges);
  double bytes = static_cast<double>(r.bytes_sent + r.bytes_copied);
  fmt::print("\n{}  [{}]  path {}, {} memory\n", r.cfg.variant(), r.cfg.shape(), r.path, r.memory);
  fmt::print("  per exchange: {} messages, {} B to other ranks, {} B local copies (rank 0); "
             "max over ranks {} B\n",
             r.messages, r.bytes_sent, r.bytes_copied, r.max_bytes_sent);
  fmt::print("  time per exchange [us], slowest rank, {} exchanges: median {}  mean {}  sd {}\n",
             r.exchanges, us(s.median), us(s.mean), us(s.stddev));
  fmt::print("    min {}  p5 {}  p25 {}  p75 {}  p95 {}  max {}\n", us(s.min), us(s.p5), us(s.p25),
             us(s.p75), us(s.p95), us(s.max));
  fmt::print("  seconds per 10000 exchanges: {:.4f}   throughput {:.2f} GB/s\n", mean_per * 1e4,
             bytes / s.median / 1e9);
  fmt::print("  floor of the lines (a copy of {} B: the plan reads {} B and writes {} B of lines) {} us "
             "-> efficiency {:.1f} %\n",
             r.lines.copy_bytes(), r.lines.read_bytes, r.lines.written_bytes,
             us(r.line_floor_seconds), 100.0 * efficiency(r));
  if (std::isnan(r.crossing_seconds))
    fmt::print("  crossing not measured: node-shared memory (/dev/shm) had no room for its buffers\n");
  else
    fmt::print("  crossing ({} B sent and {} B received between the node's cores) {} us; with the floor "
               "of the lines -> {:.1f} %\n",
               r.bytes_sent, r.bytes_received, us(r.crossing_seconds), 100.0 * crossing_efficiency(r));
  fmt::print("  memcpy of the halo's {} B {} us -> memcpy efficiency {:.1f} %\n",
             r.bytes_received + r.bytes_copied, us(r.memcpy_seconds), 100.0 * memcpy_efficiency(r));
  fmt::print("  self-copy reference {} us (each rank fills the same halos from its own cells, "
             "nothing crossing ranks) -> {:.1f} % of it\n",
             us(r.reference_seconds), 100.0 * reference_share(r));
  if (const auto spread = reference_spread(r); spread && r.reference_by_rank.size() > 1)
    fmt::print("    by rank: fastest {} us (rank {}), median {}, slowest {} (rank {})\n",
               us(spread->fastest_s), spread->fastest_rank, us(spread->median_s),
               us(spread->slowest_s), spread->slowest_rank);
  if (r.computed)
    fmt::print("  compute step between exchanges (untimed): {} us\n",
               us(r.compute_seconds / static_cast<double>(r.exchanges)));
  if (!r.settings.empty()) print_wrapped("  transport settings: " + r.settings, "      ");
  fmt::print("  setup {:.1f} ms (auto choices {:.1f}, plan {:.1f}, transports {:.1f}; slowest "
             "rank), {} neighbours at most\n",
             r.setup.slowest.total_s * 1e3, r.setup.slowest.measured_choice_s * 1e3,
             r.setup.slowest.plan_s * 1e3, r.setup.slowest.transports_s * 1e3, r.setup.neighbours);
  if (!r.breakdown.empty()) {
    print_wrapped("  per stage [us per exchange, middle half's mean of the recorded exchanges]: p "
                  "pack, c other copies, wp wait for peers, wr wait for readers, o other", "    ");
    print_wrapped("    slowest " + describe_split(slowest_rank(r.breakdown)), "      ");
    print_wrapped("    median  " + describe_split(median_rank(r.breakdown)), "      ");
    print_wrapped("    busiest " + describe_busiest(r.breakdown), "      ");
  }
  std::string sent;
  for (const auto& t : r.sent)
    sent += fmt::format("; {} {} B on node, {} B off node", t.transport, t.bytes_to_same_node,
                        t.bytes_to_other_nodes);
  print_wrapped(fmt::format("  all ranks per exchange: plan {} B within hosts, {} B across hosts{}",
                            r.plan_to_same_host, r.plan_to_other_hosts, sent),
                "    ");
  fmt::print("  verification: {}\n", r.verified ? "passed (first and last exchange of the first round)" : "skipped");
}

std::vector<cell_verdict> judge_cells(const std::vector<result>& results, const std::string& baseline) {
  std::vector<turn_probes> every_turn;
  for (const auto& r : results) every_turn.insert(every_turn.end(), r.round_probes.begin(), r.round_probes.end());
  const probe_spread launch = spread_of(every_turn);
  std::vector<cell_verdict> out(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const result& r = results[i];
    // The ratio depends on the baseline's turns as much as on the variant's.
    std::vector<turn_probes> turns = r.round_probes;
    for (const auto& b : results)
      if (b.cfg.variant() == baseline && b.cfg.shape() == r.cfg.shape() && b.cfg.halo == r.cfg.halo) {
        out[i].ratios = per_round_ratios(b.round_medians, r.round_medians);
        if (&b != &r) turns.insert(turns.end(), b.round_probes.begin(), b.round_probes.end());
      }
    out[i].stability = judge_cell(out[i].ratios ? out[i].ratios->per_round : r.round_medians, turns, launch);
  }
  return out;
}

namespace {

// A cell of the first table: the median time, * where the cell is unstable,
// and the median of the per-round ratios with their range.
std::string time_cell(double median, const cell_verdict& v) {
  std::string cell = us(median) + (v.stability.stable ? "" : "*");
  if (v.ratios) {
    cell += fmt::format(" (x{:.2f}", v.ratios->median);
    if (v.ratios->per_round.size() > 1) cell += fmt::format(" {:.2f}-{:.2f}", v.ratios->min, v.ratios->max);
    cell += ")";
  }
  return cell;
}

// A cell of the second table: the efficiency against the floor of the lines,
// and in brackets against the memcpy of the halo's bytes.
std::string efficiency_cell(const result& r, double median) {
  if (median <= 0) return "-";
  return fmt::format("{:.0f}% ({:.0f}%)", 100.0 * efficiency(r), 100.0 * memcpy_efficiency(r));
}

// Rows of variants, columns of shapes, in the order the results list them.
void print_table(const std::vector<result>& results, const std::vector<std::string>& cells) {
  std::vector<std::string> variants, shapes;
  std::map<std::pair<std::string, std::string>, std::string> by_key;
  size_t width = 12, name_width = 34;
  for (size_t i = 0; i < results.size(); ++i) {
    auto v = results[i].cfg.variant(), sh = results[i].cfg.shape();
    if (std::find(variants.begin(), variants.end(), v) == variants.end()) variants.push_back(v);
    if (std::find(shapes.begin(), shapes.end(), sh) == shapes.end()) shapes.push_back(sh);
    by_key[{v, sh}] = cells[i];
    width = std::max({width, sh.size() + 2, cells[i].size() + 2});
    name_width = std::max(name_width, v.size() + 2);
  }
  fmt::print("{:<{}}", "transport/algorithm/grouping", name_width);
  for (const auto& sh : shapes) fmt::print("{:>{}}", sh, width);
  fmt::print("\n");
  for (const auto& v : variants) {
    fmt::print("{:<{}}", v, name_width);
    for (const auto& sh : shapes) {
      auto it = by_key.find({v, sh});
      fmt::print("{:>{}}", it == by_key.end() ? std::string("-") : it->second, width);
    }
    fmt::print("\n");
  }
}

// Automatic choices against the fastest variant named in the same run on the
// same field memory (a choice can only take the transports that memory
// allows at their speed there), and, when faster, the fastest on any memory.
void print_choices(const std::vector<result>& results, const std::vector<summary>& stats) {
  for (size_t i = 0; i < results.size(); ++i) {
    const config& c = results[i].cfg;
    if (!c.automatic()) continue;
    const std::string shape = c.shape();
    size_t best = results.size(), best_any = results.size();
    for (size_t j = 0; j < results.size(); ++j) {
      const config& o = results[j].cfg;
      if (o.shape() != shape || o.automatic()) continue;
      if (best_any == results.size() || stats[j].median < stats[best_any].median) best_any = j;
      if (results[j].memory != results[i].memory) continue;
      if (best == results.size() || stats[j].median < stats[best].median) best = j;
    }
    if (best_any == results.size()) continue;
    // Time ratio, and the efficiency ratio, which divides out a machine whose
    // speed drifts between the variants' turns.
    auto versus = [&](size_t j) {
      const double e = efficiency(results[i]), ej = efficiency(results[j]);
      return fmt::format("{:.2f} us ({:.0f}%) of {} on {} memory: x{:.2f} in time, x{:.2f} in "
                         "efficiency",
                         stats[j].median * 1e6, 100 * ej, results[j].cfg.variant(),
                         results[j].memory, stats[i].median / stats[j].median,
                         e > 0 ? ej / e : 0.0);
    };
    std::string line = fmt::format("{} [{}]: {}; {:.2f} us ({:.0f}%)", c.variant(), shape,
                                   results[i].chosen, stats[i].median * 1e6,
                                   100 * efficiency(results[i]));
    if (results[i].rechecked)
      line += fmt::format(" (measured again in round 2, the probe having moved during its trials: "
                          "{})", results[i].rechosen);
    if (best != results.size()) line += " against the fastest named variant, " + versus(best);
    if (best_any != best)
      line += (best != results.size() ? "; on any memory " : " against ") + versus(best_any);
    for (const auto& part : wrap(line, summary_width, "    ")) fmt::print("{}\n", part);
  }
}

}  // namespace

void print_summary(const std::vector<result>& results, const std::vector<summary>& stats,
                   const std::vector<cell_verdict>& verdicts, const std::string& baseline) {
  bool have_baseline = false, several_rounds = false, any_unstable = false;
  std::vector<std::string> times, efficiencies;
  for (size_t i = 0; i < results.size(); ++i) {
    have_baseline = have_baseline || results[i].cfg.variant() == baseline;
    several_rounds = several_rounds || results[i].round_medians.size() > 1;
    any_unstable = any_unstable || !verdicts[i].stability.stable;
    times.push_back(time_cell(stats[i].median, verdicts[i]));
    efficiencies.push_back(efficiency_cell(results[i], stats[i].median));
  }
  std::string legend = "Summary: median time per exchange [us] of the slowest rank";
  if (have_baseline)
    legend += fmt::format("; (xN) = speed-up over {}{}", baseline_text(baseline),
                          several_rounds ? ", each round against the baseline of the same round: "
                                           "median and range over the rounds"
                                         : "");
  if (any_unstable) legend += "; * = unstable (docs/bench.md, Stability)";
  fmt::print("\n");
  for (const auto& line : wrap(legend, summary_width, "  ")) fmt::print("{}\n", line);
  print_table(results, times);
  fmt::print("\nEfficiency: the floor of the lines (every rank copying the bytes of the cache lines "
             "its exchange touches) over the time;\n  in brackets the memcpy efficiency, against a "
             "copy of the halo's bytes alone (docs/bench.md, Reading the output)\n");
  print_table(results, efficiencies);
  print_choices(results, stats);
}

// --breakdown: each configuration's stage splits, slowest and median rank,
// and its self-copy share (what the splits explain).
void print_breakdown(const std::vector<result>& results) {
  fmt::print("\n");
  print_wrapped("Where the time goes [us per exchange, the mean of each rank's middle half of the "
                "recorded exchanges (--stage-times)], per stage: p pack, c other copies, wp wait for "
                "peers, wr wait for readers, o other; self = self-copy reference over the median "
                "time; busiest = the rank with the most work (pack, copies, other), whom the "
                "others wait for", "  ");
  for (const auto& r : results) {
    if (r.breakdown.empty()) continue;
    fmt::print("{} [{}] self {:.2f}\n", r.cfg.variant(), r.cfg.shape(), reference_share(r));
    print_wrapped("  slowest " + describe_split(slowest_rank(r.breakdown)), "    ");
    print_wrapped("  median  " + describe_split(median_rank(r.breakdown)), "    ");
    print_wrapped("  busiest " + describe_busiest(r.breakdown), "    ");
  }
}

launch_stability judge_launch(const std::vector<result>& results, const std::vector<cell_verdict>& verdicts,
                              const launch_probes& launch) {
  std::vector<turn_probes> all;
  std::vector<named_cell> unstable;
  for (size_t i = 0; i < results.size(); ++i) {
    all.insert(all.end(), results[i].round_probes.begin(), results[i].round_probes.end());
    if (!verdicts[i].stability.stable)
      unstable.push_back({fmt::format("{} [{}]", results[i].cfg.variant(), results[i].cfg.shape()),
                          &verdicts[i].stability});
  }
  const int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  launch_stability out;
  out.summary = closing_summary(unstable, results.size(), spread_of(all), cpus);
  out.brief = closing_summary(unstable, results.size(), spread_of(all), cpus, true);
  out.ranked = ranked_causes(unstable);
  // The launch as a whole: its first and last probe bracket every turn.
  all.push_back({launch.start, launch.end});
  out.probes = spread_of(all);
  return out;
}

}  // namespace halox::bench
