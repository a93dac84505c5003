#include "stability.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

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

std::string to_string(cause why) {
  static const char* names[] = {"busy", "steal", "moved", "bandwidth", "launch_moved", "rounds"};
  return names[static_cast<size_t>(why)];
}

namespace {

// The CPU that waited most in the most disturbed turns (a rank that waited
// all of a turn ties with any other that did: the count decides).
int busiest_cpu(const std::vector<turn_probes>& turns) {
  std::map<int, int> disturbed;
  for (const auto& t : turns)
    if (t.after.run_wait_share.value_or(0.0) > run_wait_above && t.after.run_wait_cpu)
      ++disturbed[*t.after.run_wait_cpu];
  int cpu = -1, most = 0;
  for (const auto& [c, n] : disturbed)
    if (n > most) std::tie(cpu, most) = std::make_pair(c, n);
  return cpu;
}

}  // namespace

probe_spread spread_of(const std::vector<turn_probes>& turns) {
  probe_spread out;
  std::vector<const probe_sample*> all;
  for (const auto& t : turns) {
    all.push_back(&t.before);
    all.push_back(&t.after);
    // The after-probe's shares cover the turn itself (at most all of it: the
    // kernel books a wait when it ends, so a wait begun before the turn can exceed it).
    const double waited = std::min(1.0, t.after.run_wait_share.value_or(0.0));
    if (waited > out.worst_run_wait) {
      out.worst_run_wait = waited;
      out.worst_run_wait_cpu = t.after.run_wait_cpu.value_or(-1);
    }
    out.highest_load = std::max({out.highest_load, t.before.load1.value_or(0.0),
                                 t.after.load1.value_or(0.0)});
    out.worst_steal = std::max(out.worst_steal, std::min(1.0, t.after.steal_share.value_or(0.0)));
  }
  if (busiest_cpu(turns) >= 0) out.worst_run_wait_cpu = busiest_cpu(turns);
  if (all.empty()) return out;
  const size_t pairs = all.front()->round_trip_ns.size();
  for (size_t p = 0; p < pairs; ++p) {
    double low = 1e300, high = 0, answered = 0;
    for (const auto* s : all) {
      low = std::min(low, s->round_trip_ns[p]);
      high = std::max(high, s->round_trip_ns[p]);
      if (s->round_trip_ns[p] < ping_pong_cap_s * 1e9) answered = std::max(answered, s->round_trip_ns[p]);
    }
    const bool moved_most = low > 0 && high / low > out.round_trip_factor;
    if (moved_most) out.round_trip_factor = high / low;
    if (moved_most || out.round_trip_high_ns == 0) {
      out.round_trip_low_ns = low;
      out.round_trip_high_ns = high;
      out.round_trip_answered_high_ns = answered > 0 ? answered : high;
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

cell_stability judge_cell(const std::vector<double>& per_round, const std::vector<turn_probes>& turns,
                          const probe_spread& launch) {
  cell_stability c;
  auto add = [&](cause why, std::string text) {
    c.causes.push_back(why);
    c.reasons.push_back(std::move(text));
  };
  if (per_round.size() > 1) {
    const auto [low, high] = std::minmax_element(per_round.begin(), per_round.end());
    if (*low > 0) c.rounds_disagree = *high / *low - 1;
    if (c.rounds_disagree > rounds_disagree_above)
      // Past 2x, a factor reads better than thousands of percent.
      add(cause::rounds, c.rounds_disagree <= 1
                             ? fmt::format("rounds disagree by {:.0f} %", 100 * c.rounds_disagree)
                             : fmt::format("rounds disagree {:.0f}x", 1 + c.rounds_disagree));
  }
  const probe_spread s = spread_of(turns);
  // A round trip at the ping-pong's cap was a partner without its core: busy, not moved.
  if (s.round_trip_factor > mode_factor)
    add(s.round_trip_high_ns >= ping_pong_cap_s * 1e9 ? cause::busy : cause::moved,
        fmt::format("round trip moved {:.0f}-{:.0f} ns", s.round_trip_low_ns, s.round_trip_high_ns));
  if (s.copy_factor > mode_factor)
    add(cause::bandwidth, fmt::format("copy bandwidth moved x{:.1f}", s.copy_factor));
  if (s.worst_run_wait > run_wait_above)
    add(cause::busy, fmt::format("ranks waited {:.0f} % of a turn for their cores", 100 * s.worst_run_wait));
  if (s.worst_steal > steal_above)
    add(cause::steal, fmt::format("{:.0f} % of a turn stolen", 100 * s.worst_steal));
  if (launch.round_trip_factor > mode_factor && s.round_trip_factor <= mode_factor)
    add(cause::launch_moved,
        fmt::format("measured in one mode: the launch's round trip moved {:.0f}-{:.0f} ns outside its turns",
                    launch.round_trip_low_ns, launch.round_trip_high_ns));
  c.stable = c.reasons.empty();
  return c;
}

std::vector<std::string> wrap(const std::string& text, size_t width, const std::string& indent) {
  const size_t lead = text.find_first_not_of(' ');
  if (lead == std::string::npos) return {text};
  std::vector<std::string> lines{text.substr(0, lead)};
  size_t words_on_line = 0;
  for (size_t from = lead; from < text.size();) {
    size_t to = text.find(' ', from);
    if (to == std::string::npos) to = text.size();
    const std::string word = text.substr(from, to - from);
    if (words_on_line > 0 && lines.back().size() + 1 + word.size() > width) {
      lines.push_back(indent);
      words_on_line = 0;
    }
    lines.back() += (words_on_line > 0 ? " " : "") + word;
    ++words_on_line;
    from = to + 1;
  }
  return lines;
}

namespace {

// A round trip at the ping-pong's cap was a partner without its core.
std::string round_trip_text(double ns) {
  return ns >= ping_pong_cap_s * 1e9 ? fmt::format("more than {:.0f} ms (a rank had lost its core)",
                                                    ping_pong_cap_s * 1e3)
                                     : fmt::format("{:.0f} ns", ns);
}

// What a cause was on this launch, and what helps against it.
std::string cause_text(cause why, const probe_spread& s, double disagree, int cpus) {
  switch (why) {
    case cause::busy:
      return fmt::format(
          "the machine was busy: another process ran on {}, {} (load average up to {:.1f} on {} CPUs); "
          "rerun when the machine is quiet",
          s.worst_run_wait_cpu >= 0 ? fmt::format("CPU {}", s.worst_run_wait_cpu) : "the ranks' cores",
          s.worst_run_wait > run_wait_above
              ? fmt::format("the ranks waited up to {:.0f} % of a turn for their cores", 100 * s.worst_run_wait)
              : fmt::format("a rank did not answer the probe for {}", round_trip_text(s.round_trip_high_ns)),
          s.highest_load, cpus);
    case cause::steal:
      return fmt::format("the hypervisor stole up to {:.0f} % of a turn: the host is oversubscribed, "
                         "nothing inside the VM helps; rerun at a quieter time or on another host",
                         100 * s.worst_steal);
    case cause::moved:
    case cause::launch_moved:
      return fmt::format("the vCPUs moved between host cores (round trip {} to {}); rerun with "
                         "--rounds auto, or pin the VM's vCPUs to host cores",
                         fmt::format("{:.0f} ns", s.round_trip_low_ns),
                         round_trip_text(s.round_trip_answered_high_ns > 0 ? s.round_trip_answered_high_ns
                                                                           : s.round_trip_high_ns));
    case cause::bandwidth:
      return fmt::format("the copy bandwidth moved x{:.1f} (memory shared with other work); rerun "
                         "with --rounds auto, or when the machine is quiet", s.copy_factor);
    case cause::rounds:
      break;
  }
  return fmt::format("rounds disagreed by up to {:.0f} % while the probe stayed steady; rerun with "
                     "--rounds auto or a longer --time", 100 * disagree);
}

// A cause in a line, with what helps (cause_text says it at length).
std::string brief_cause_text(cause why, const probe_spread& s, double disagree, int cpus) {
  // A round trip at the ping-pong's cap: a rank had lost its core.
  auto ns_text = [](double ns) {
    return ns >= ping_pong_cap_s * 1e9 ? std::string("a lost core")
                                       : ns < 1e4 ? fmt::format("{:.0f} ns", ns) : fmt::format("{:.0f} µs", ns / 1e3);
  };
  switch (why) {
    case cause::busy:
      return fmt::format("the machine was busy ({} taken, {}, load {:.1f}{}): rerun when quiet",
                         s.worst_run_wait_cpu >= 0 ? fmt::format("CPU {}", s.worst_run_wait_cpu) : "a core",
                         s.worst_run_wait > run_wait_above
                             ? fmt::format("ranks waited {:.0f} % of a turn", 100 * s.worst_run_wait)
                             : "a rank stopped answering",
                         s.highest_load, cpus > 0 ? fmt::format(" on {} CPUs", cpus) : "");
    case cause::steal:
      return fmt::format("the hypervisor stole up to {:.0f} % of a turn: rerun at a quieter time or on "
                         "another host", 100 * s.worst_steal);
    case cause::moved:
    case cause::launch_moved:
      return fmt::format("the vCPUs moved between host cores (round trip {:.0f} ns to {}): --rounds auto, "
                         "or pin the VM's vCPUs", s.round_trip_low_ns,
                         ns_text(s.round_trip_answered_high_ns > 0 ? s.round_trip_answered_high_ns
                                                                   : s.round_trip_high_ns));
    case cause::bandwidth:
      return fmt::format("the copy bandwidth moved x{:.1f}: --rounds auto, or a quiet machine", s.copy_factor);
    case cause::rounds:
      break;
  }
  return fmt::format("rounds disagreed by up to {:.0f} % with the probe steady: --rounds auto or a "
                     "longer --time", 100 * disagree);
}

// Cells per cause, each cause once per cell; rounds that disagree are a cause
// of their own only where the probe saw nothing else. Also the most the rounds
// disagreed where that was the only cause.
std::pair<std::vector<size_t>, double> marked_cells(const std::vector<named_cell>& unstable) {
  std::vector<size_t> marked(cause_count, 0);
  double disagree = 0;
  for (const auto& c : unstable) {
    std::vector<bool> seen(cause_count, false);
    for (cause why : c.stability->causes)
      seen[static_cast<size_t>(why == cause::launch_moved ? cause::moved : why)] = true;
    const bool only_rounds = c.stability->causes == std::vector<cause>{cause::rounds};
    seen[static_cast<size_t>(cause::rounds)] = only_rounds;
    if (only_rounds) disagree = std::max(disagree, c.stability->rounds_disagree);
    for (size_t k = 0; k < seen.size(); ++k) marked[k] += seen[k] ? 1 : 0;
  }
  return {marked, disagree};
}

// The three worst cells, each with its first reason.
std::vector<std::string> worst_lines(const std::vector<named_cell>& unstable) {
  std::vector<const named_cell*> worst;
  for (const auto& c : unstable) worst.push_back(&c);
  std::stable_sort(worst.begin(), worst.end(), [](const named_cell* a, const named_cell* b) {
    return a->stability->causes.size() + a->stability->rounds_disagree >
           b->stability->causes.size() + b->stability->rounds_disagree;
  });
  worst.resize(std::min<size_t>(worst.size(), 3));
  std::string names;
  for (const auto* c : worst)
    names += fmt::format("{}{} ({})", names.empty() ? "" : "; ", c->name, c->stability->reasons.front());
  return wrap("  worst: " + names, summary_width, "    ");
}

}  // namespace

std::vector<cause> ranked_causes(const std::vector<named_cell>& unstable) {
  const std::vector<size_t> marked = marked_cells(unstable).first;
  std::vector<cause> order;
  for (int k = 0; k < cause_count; ++k)
    if (marked[static_cast<size_t>(k)] > 0) order.push_back(static_cast<cause>(k));
  std::stable_sort(order.begin(), order.end(), [&](cause a, cause b) {
    return marked[static_cast<size_t>(a)] > marked[static_cast<size_t>(b)];
  });
  return order;
}

std::optional<cause> leading_cause(const cell_stability& c, const std::vector<cause>& ranked) {
  if (c.causes.empty()) return std::nullopt;
  for (cause why : ranked)
    for (cause own : c.causes)
      if (own == why || (why == cause::moved && own == cause::launch_moved)) return why;
  return c.causes.front();
}

std::vector<std::string> closing_summary(const std::vector<named_cell>& unstable, size_t cells,
                                         const probe_spread& launch, int cpus, bool brief) {
  if (unstable.empty()) return {};
  const auto [marked, disagree] = marked_cells(unstable);
  std::vector<std::string> out{fmt::format("{} of {} cells unstable; the causes, most cells first:",
                                           unstable.size(), cells)};
  const std::vector<cause> order = ranked_causes(unstable);
  for (size_t i = 0; i < order.size(); ++i) {
    const auto text = fmt::format("  {}. {} cells: {}", i + 1, marked[static_cast<size_t>(order[i])],
                                  brief ? brief_cause_text(order[i], launch, disagree, cpus)
                                        : cause_text(order[i], launch, disagree, cpus));
    for (auto& line : wrap(text, brief ? brief_width : summary_width, "       ")) out.push_back(std::move(line));
  }
  if (brief) return out;
  for (auto& line : worst_lines(unstable)) out.push_back(std::move(line));
  out.push_back("  every cell's reasons: the records (stability.reasons) and the Markdown report of halox report");
  return out;
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
