// The measured choice behind exchange_options' auto flags.
//
// Reference algorithm:
//   key = machine, MPI library, rank grid, sub-domain, halo widths, fields, type, auto flags
//         (JSON lines {"key": ..., "choice": ...}, src/exchange/choice_json.hpp)
//   if the wisdom file has key: take its choice
//   else candidates (transports x algorithms x field groupings the flags open), likeliest
//        first: cache-sized blocks, then field by field, then whole messages; staged, then
//        standard; the node's single copy from shared memory, the message transports; after
//        every other candidate the node's other single copies (their trials cost seconds),
//        then the routings. The first is the known-good default.
//        screening, until the candidates are done or the next one (costing what the median
//        one did) would pass 70 % of the budget (1.5 s):
//          build the exchange c on the caller's fields; 2 untimed exchanges;
//          t(c) = median of 3 exchanges, slowest rank (agreed by all)
//        finalists: the fastest few, within 1.5 x of the fastest, the default first
//          when it is one of them;
//          as many rounds as the rest of the budget holds (each costs what the finalists'
//          screening cost), at most 7; with 3 or more, each: every finalist built (with
//          the tuning its screening measured), 1 untimed + 2 timed exchanges,
//          freed (one at a time, as it will run: a live MPI window slows the progress of
//          every other exchange; rounds interleave the finalists, so that the machine's
//          slow and fast moments fall on all of them); the slowest rank's round times
//          decide as in choose_from_rounds (transport/trial.hpp): each round relative to
//          its fastest finalist, the least median wins, the first finalist unless beaten by
//          2 %; where the rounds cannot tell (choose_from_rounds' clear is false), the
//          default finalist. Without 3 rounds the screening decides, the default unless
//          beaten by 10 %.
//        append (key, choice) to the wisdom file; the choice is returned with the tuning its
//        screening measured (its transports' trials do not run again when it is built)
//   rank 0 says once per process what was chosen and how long it took (stderr).
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "common/yielding_mpi.hpp"
#include "exchange/choice_json.hpp"
#include "halox/common/error.hpp"
#include "halox/exchange.hpp"
#include "halox/extend/registry.hpp"
#include "halox/extend/topology.hpp"
#include "transport/core/trial.hpp"

namespace halox {

namespace {

constexpr int untimed_exchanges = 2, timed_exchanges = 3;
constexpr size_t most_finalists = 4;
constexpr int final_rounds = 7, fewest_final_rounds = 3, final_untimed = 1, final_timed = 2;
constexpr double finalist_margin = 1.5;
// What a first start may spend measuring (a 14-field exchange of 64^3 cells screened all of its
// 54 candidates in 5-20 s on a 2-vCPU VM, in a code's first halo call): the screening stops at
// 70 % of it, the final rounds take what the rest holds. A wisdom file (HALOX_WISDOM) makes the
// next start free.
constexpr double measure_budget_s = 1.5, screening_share = 0.7;
// Without final rounds, the screening (3 exchanges each) must beat the default by this much.
constexpr double screening_tie = 0.10;

std::string describe_choice(const exchange_options& o) {
  std::string fields = o.fields_per_message > 0 ? fmt::format("{}", o.fields_per_message)
                       : o.fields_per_message == fields_per_message_auto ? std::string("cache")
                                                                         : to_string(o.grouping);
  if (o.fields_per_block > 0) fields += fmt::format(" in blocks of {}", o.fields_per_block);
  return fmt::format("{}/{}/{}", o.transport.name(), to_string(o.alg), fields);
}

std::string broadcast(MPI_Comm comm, std::string text) {
  int length = static_cast<int>(text.size());
  yielding_bcast(&length, 1, MPI_INT, 0, comm);
  text.resize(static_cast<size_t>(length));
  yielding_bcast(text.data(), length, MPI_CHAR, 0, comm);
  return text;
}

// What a wisdom entry is valid for: the machine, the MPI library, the rank
// grid, the sub-domain, halo widths, fields, type, and what was left to measure.
nlohmann::json wisdom_key(const decomposition& decomp, const std::vector<field_layout>& layouts,
                          const exchange_options& o) {
  const local_grid& grid = layouts.front().grid;
  const size_t nfields = layouts.size();
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int length = 0;
  MPI_Get_library_version(library, &length);
  std::string mpi(library, static_cast<size_t>(std::min(length, 60)));
  std::erase(mpi, '\n');
  const auto& d = decomp.dims();
  const auto& n = grid.interior;
  const auto& h = grid.halo;
  nlohmann::json key = {{"host", host},
                        {"mpi", mpi},
                        {"ranks", decomp.size()},
                        {"rank_grid", {d[0], d[1], d[2]}},
                        {"interior", {n[0], n[1], n[2]}},
                        {"halo_lo", {h.lo[0], h.lo[1], h.lo[2]}},
                        {"halo_hi", {h.hi[0], h.hi[1], h.hi[2]}},
                        {"fields", nfields},
                        {"type", layouts.front().element_bytes == 4 ? "float" : "double"},
                        {"measured",
                         {{"transport", o.auto_transport},
                          {"algorithm", o.auto_algorithm},
                          {"grouping", o.auto_grouping}}}};
  // Fields of their own locations, halos or types: each one's, in order.
  if (std::ranges::any_of(layouts,
                          [&](const field_layout& l) { return !(l == layouts.front()); })) {
    nlohmann::json each = nlohmann::json::array();
    for (const auto& l : layouts)
      each.push_back({to_string(l.at), l.element_bytes, l.grid.halo.lo, l.grid.halo.hi});
    key["layouts"] = each;
  }
  if (!o.auto_transport) key["transport"] = o.transport;
  if (!o.auto_algorithm) key["algorithm"] = to_string(o.alg);
  return key;
}

// Rank 0's reading of the wisdom file: the last entry whose key matches, as
// text; empty when none. Lines that are not such entries are skipped.
std::string known_choice(const std::string& file, const nlohmann::json& key) {
  std::ifstream in(file);
  std::string known;
  for (std::string line; std::getline(in, line);) {
    const auto entry = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (entry.is_object() && entry.contains("key") && current_wisdom_key(entry["key"]) == key &&
        entry.contains("choice"))
      known = entry["choice"].dump();
  }
  return known;
}

// Collective: whether any rank has a neighbour on another node (a routing
// LOCAL+REMOTE differs from LOCAL alone only then).
bool neighbours_off_node(const decomposition& decomp, int ranks_per_node) {
  node_membership node = make_node_membership(decomp.comm(), ranks_per_node);
  int any = 0;
  for (int i = 0; i < direction_count; ++i)
    if (auto peer = decomp.neighbor(direction_of(i)); peer && !node.on_node(*peer)) any = 1;
  MPI_Comm_free(&node.comm);
  yielding_allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, decomp.comm());
  return any != 0;
}

std::vector<exchange_options> candidates(const decomposition& decomp,
                                         const exchange_options& requested, int nfields) {
  MPI_Comm comm = decomp.comm();
  std::vector<transport_choice> transports{requested.transport};
  if (requested.auto_transport) {
    transports = available_transport_choices(comm);
    // Routings only where some messages leave the node (collective on every rank).
    const bool off_node = neighbours_off_node(decomp, requested.ranks_per_node);
    std::vector<transport_choice> routings;
    const transport_entry& usual_remote = default_remote_transport();
    for (const auto& local : transports)
      if (off_node && local.local().reach == transport_reach::same_node)
        for (const auto& remote : transports)
          if (remote.local().reach == transport_reach::any_peer && &remote.local() != &usual_remote)
            routings.emplace_back(local.local(), remote.local());
    transports.insert(transports.end(), routings.begin(), routings.end());
  }
  std::vector<algorithm> algorithms{requested.alg};
  if (requested.auto_algorithm) algorithms = {algorithm::standard, algorithm::staged};
  struct grouping_candidate {
    field_grouping grouping;
    int per_message, per_block;
  };
  std::vector<grouping_candidate> groupings{
      {requested.grouping, requested.fields_per_message, requested.fields_per_block}};
  // Blocks sized to the cache (compact moves the same blocks), field by
  // field, and all fields in one message not cut into blocks.
  if (requested.auto_grouping)
    groupings = nfields > 1 ? std::vector<grouping_candidate>{{field_grouping::cache, 0, 0},
                                                              {field_grouping::sequence, 0, 0},
                                                              {field_grouping::compact, 0, nfields}}
                            : std::vector<grouping_candidate>{{field_grouping::cache, 0, 0}};
  std::vector<exchange_options> out;
  for (const auto& t : transports)
    for (auto a : algorithms)
      for (const auto& g : groupings) {
        exchange_options c = requested;
        c.auto_transport = c.auto_algorithm = c.auto_grouping = false;
        c.transport = t;
        c.alg = a;
        c.grouping = g.grouping;
        c.fields_per_message = g.per_message;
        c.fields_per_block = g.per_block;
        out.push_back(c);
      }
  return out;
}

// The likeliest candidates first (see the reference above): stable, so that the registry's
// order decides among equals. The first is the known-good default.
void likeliest_first(std::vector<exchange_options>& out) {
  const transport_entry& usual_remote = default_remote_transport();
  auto rank = [&](const exchange_options& c) {
    const auto& t = c.transport;
    // The node's single copy from shared memory (built in a fraction of a second), the message
    // transports, the node's other single copies (whose trials cost seconds: process_vm_readv
    // per box), the routings.
    const bool same_node = t.local().reach == transport_reach::same_node;
    const int transport = !same_node ? (t.routed() ? 3 : 1)
                          : &t.remote() != &usual_remote ? 3
                          : t.local().prefers_shared_fields ? 0
                                                            : 2;
    const int group_rank = c.grouping == field_grouping::cache      ? 0
                           : c.grouping == field_grouping::sequence ? 1
                                                                    : 2;
    // Those whose trials cost seconds and the routings come after every other candidate.
    return std::array<int, 4>{transport >= 2 ? transport : 0, group_rank,
                              c.alg == algorithm::staged ? 0 : 1, transport};
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
}

// Collective: the choice the wisdom file holds for `key`, usable on every
// rank; none when there is no file, no entry, or a transport some rank lacks.
std::optional<exchange_options> wisdom_choice(const decomposition& decomp, const std::string& file,
                                              const nlohmann::json& key,
                                              const exchange_options& requested) {
  if (file.empty()) return std::nullopt;
  MPI_Comm comm = decomp.comm();
  const std::string known = broadcast(comm, decomp.rank() == 0 ? known_choice(file, key) : "");
  exchange_options chosen = requested;
  chosen.auto_transport = chosen.auto_algorithm = chosen.auto_grouping = false;
  bool usable = !known.empty();
  try {
    if (usable) choice_from_json(nlohmann::json::parse(known), chosen);
  } catch (const std::exception&) {
    usable = false;  // written by another build (a transport it had): measure again
  }
  int everywhere = usable ? 1 : 0;  // a transport may be unavailable on some rank
  yielding_allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_MIN, comm);
  if (!everywhere) return std::nullopt;
  return chosen;
}

// A candidate and its screening.
struct scored {
  exchange_options options;
  transport_tuning tuning;  // what its transports measured when screened
  double seconds;
  double cost_s = 0;       // building it and its exchanges, slowest rank
  bool is_default = false;
};

// The median cost of the candidates screened so far.
double typical_cost(const std::vector<scored>& screened) {
  std::vector<double> costs;
  for (const auto& s : screened) costs.push_back(s.cost_s);
  return median(std::move(costs));
}

// cma's outbox rule, where the caller left it unset, is not measured while screening: cma
// measures its rules by process_vm_readv, one call per run, which took 1.4 s of a 14-field
// 64^3 exchange's first start on a 2-vCPU VM (0.2 s with the rule given) where every other
// candidate cost 10-60 ms. It screens with shm's rule where shm measured one (the two rules
// say the same: runs shorter than this go through the outbox), else with every run through
// the outbox (shm's way with fields in private memory); chosen, it keeps that rule.
exchange_options with_rules_measured(exchange_options candidate, const std::vector<scored>& screened) {
  if (candidate.tuning.cma.direct_min_run) return candidate;
  candidate.tuning.cma.direct_min_run = std::numeric_limits<size_t>::max();
  for (const auto& s : screened)
    if (s.tuning.shm.direct_min_run) {
      candidate.tuning.cma.direct_min_run = s.tuning.shm.direct_min_run;
      break;
    }
  return candidate;
}

// Collective: the candidates screened on their own, likeliest first, until they are done or
// the screening's share of the budget is spent (the slowest rank's clock decides for all).
template <class Build>
std::vector<scored> screen(MPI_Comm comm, const std::vector<exchange_options>& all, double begun,
                           Build&& build) {
  std::vector<scored> screened;
  for (size_t n = 0; n < all.size(); ++n) {
    const double t_build = MPI_Wtime();
    double figures[3] = {0, 0, 0};  // median, cost, elapsed
    bool ran = false;
    try {
      halo_exchange ex = build(with_rules_measured(all[n], screened));
      for (int i = 0; i < untimed_exchanges; ++i) ex.exchange();
      std::vector<double> times;
      for (int i = 0; i < timed_exchanges; ++i) {
        double t0 = MPI_Wtime();
        ex.exchange();
        times.push_back(MPI_Wtime() - t0);
      }
      figures[0] = median(std::move(times));
      figures[1] = MPI_Wtime() - t_build;
      screened.push_back({all[n], ex.tuning_as_built(), 0, 0, n == 0});
      ran = true;
    } catch (const usage_error&) {
      // Thrown on every rank alike (agreed): this candidate cannot run here.
    }
    figures[2] = MPI_Wtime() - begun;
    yielding_allreduce(MPI_IN_PLACE, figures, 3, MPI_DOUBLE, MPI_MAX, comm);
    if (ran) {
      screened.back().seconds = figures[0];
      screened.back().cost_s = figures[1];
    }
    // Stop where the next candidate, costing what the typical one so far did, would pass the
    // screening's share of the budget.
    if (!screened.empty() && figures[2] + typical_cost(screened) >= screening_share * measure_budget_s)
      break;
  }
  return screened;
}

// The finalists: the fastest few of `screened` (sorted), within the margin of the fastest, the
// default first when it is one of them.
size_t pick_finalists(std::vector<scored>& screened) {
  size_t finalists = 1;
  while (finalists < std::min(screened.size(), most_finalists) &&
         screened[finalists].seconds <= finalist_margin * screened.front().seconds)
    ++finalists;
  auto end = screened.begin() + static_cast<std::ptrdiff_t>(finalists);
  auto fallback = std::find_if(screened.begin(), end, [](const scored& s) { return s.is_default; });
  if (fallback != end) std::rotate(screened.begin(), fallback, fallback + 1);
  return finalists;
}

// Collective: the fastest `finalists` of `screened` (sorted) side by side, in
// interleaved rounds, each exchange made by `build(options)`; the best one's
// index and its median time.
template <class Build>
std::pair<size_t, double> final_choice(MPI_Comm comm, const std::vector<scored>& screened,
                                       size_t finalists, int rounds, Build&& build) {
  if (finalists < 2) return {0, screened.front().seconds};
  std::vector<double> round_time(static_cast<size_t>(rounds) * finalists, 0.0);  // [round][finalist]
  for (int round = 0; round < rounds; ++round)
    for (size_t i = 0; i < finalists; ++i) {
      // Rebuilt with the tuning its screening measured: the rounds compare
      // the candidates, not their transports' trials.
      exchange_options as_screened = screened[i].options;
      as_screened.tuning = screened[i].tuning;
      halo_exchange finalist = build(as_screened);
      for (int k = 0; k < final_untimed; ++k) finalist.exchange();
      start_together(comm);  // one rank's late start is not counted against the finalist
      const double t0 = MPI_Wtime();
      for (int k = 0; k < final_timed; ++k) finalist.exchange();
      round_time[static_cast<size_t>(round) * finalists + i] = (MPI_Wtime() - t0) / final_timed;
    }
  yielding_allreduce(MPI_IN_PLACE, round_time.data(), static_cast<int>(round_time.size()),
                     MPI_DOUBLE, MPI_MAX, comm);
  const trial_choice decided = choose_from_rounds(round_time, finalists);
  // Rounds that cannot tell the finalists apart keep the known-good default (the first
  // finalist when it is one).
  const size_t best = !decided.clear && screened.front().is_default ? 0 : decided.best;
  std::vector<double> of_best;
  for (int round = 0; round < rounds; ++round)
    of_best.push_back(round_time[static_cast<size_t>(round) * finalists + best]);
  return {best, median(std::move(of_best))};
}

// The rounds the rest of the budget holds, each as costly as the finalists' screening.
int affordable_rounds(const std::vector<scored>& screened, size_t finalists, double spent) {
  double round_cost = 0;
  for (size_t i = 0; i < finalists; ++i) round_cost += screened[i].cost_s;
  if (round_cost <= 0) return final_rounds;
  const double rounds = (measure_budget_s - spent) / round_cost;
  return rounds >= final_rounds ? final_rounds : std::max(0, static_cast<int>(rounds));
}

// Without final rounds: the screening's fastest, unless the default is within its tie.
size_t screening_decides(const std::vector<scored>& screened) {
  for (size_t i = 1; i < screened.size(); ++i)
    if (screened[i].is_default && screened[i].seconds <= (1 + screening_tie) * screened[0].seconds)
      return i;
  return 0;
}

// Rank 0 says once per process what the automatic choice took and what it cost.
void tell_once(const decomposition& decomp, const std::string& report, double seconds) {
  static bool told = false;
  if (told) return;
  told = true;
  if (decomp.rank() == 0)
    fmt::print(stderr, "halox: automatic choice: {} in {:.2f} s{}\n", report, seconds,
               report.find("wisdom file") == std::string::npos
                   ? " (a wisdom file, HALOX_WISDOM, keeps it for the next start)"
                   : "");
}

}  // namespace

exchange_options halo_exchange::measured_choice(const decomposition& decomp,
                                                const std::vector<field_layout>& layouts,
                                                const field_set& fields,
                                                const exchange_options& requested,
                                                std::string& report) {
  MPI_Comm comm = decomp.comm();
  const double begun = MPI_Wtime();
  const std::string& file = requested.wisdom_file;
  // Rank 0's key for all: hosts differ across nodes.
  const auto key =
      nlohmann::json::parse(broadcast(comm, wisdom_key(decomp, layouts, requested).dump()));
  if (auto known = wisdom_choice(decomp, file, key, requested)) {
    report = fmt::format("chose {} (from wisdom file {})", describe_choice(*known), file);
    tell_once(decomp, report, MPI_Wtime() - begun);
    return *known;
  }

  // Screening: every candidate on its own, likeliest first, within the budget.
  auto all = candidates(decomp, requested, static_cast<int>(fields.pointers.size()));
  likeliest_first(all);
  auto build = [&](const exchange_options& o) {
    return halo_exchange(decomp, layouts, {}, fields, o);
  };
  std::vector<scored> screened = screen(comm, all, begun, build);
  if (screened.empty()) throw usage_error("no candidate of the automatic choice can run here");
  std::stable_sort(screened.begin(), screened.end(),
                   [](const scored& a, const scored& b) { return a.seconds < b.seconds; });

  // Final: the fastest few side by side, in interleaved rounds, as many as the budget holds.
  const size_t finalists = pick_finalists(screened);
  double spent = MPI_Wtime() - begun;
  yielding_allreduce(MPI_IN_PLACE, &spent, 1, MPI_DOUBLE, MPI_MAX, comm);
  const int rounds = affordable_rounds(screened, finalists, spent);
  size_t best = 0;
  double best_time = screened.front().seconds;
  std::string how;
  if (finalists > 1 && rounds >= fewest_final_rounds) {
    std::tie(best, best_time) = final_choice(comm, screened, finalists, rounds, build);
    how = fmt::format("{} finalists in {} rounds", finalists, rounds);
  } else {
    std::stable_sort(screened.begin(), screened.end(),
                     [](const scored& a, const scored& b) { return a.seconds < b.seconds; });
    best = screening_decides(screened);
    best_time = screened[best].seconds;
    how = "by the screening";
  }
  const exchange_options chosen = screened[best].options;
  report = fmt::format("chose {} ({:.2f} us per exchange, measured; {} of {} candidates "
                       "screened, {})",
                       describe_choice(chosen), best_time * 1e6, screened.size(), all.size(), how);
  if (!file.empty() && decomp.rank() == 0) {
    std::ofstream out(file, std::ios::app);
    // One whole line per choice.
    out << nlohmann::json{{"key", key}, {"choice", choice_to_json(chosen)}}.dump() << '\n';
  }
  tell_once(decomp, report, MPI_Wtime() - begun);
  // Built with the tuning its screening measured on these fields: its transports' trials do not
  // run a second time.
  exchange_options as_measured = chosen;
  as_measured.tuning = screened[best].tuning;
  return as_measured;
}

}  // namespace halox
