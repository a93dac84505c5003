#include "halox/programs/decomposition/auto.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "common/yielding_mpi.hpp"
#include "halox/common/error.hpp"

namespace halox {

namespace {

constexpr long long max_candidates = 5'000'000;
constexpr size_t kept_candidates = 5;

// The boundary crossed between two objects of level l under one parent.
boundary boundary_of(level l) {
  switch (l) {
    case level::core:
    case level::l1:
    case level::l2:
      return boundary::core;
    case level::l3:
      return boundary::l3;
    case level::numa:
      return boundary::numa;
    case level::socket:
      return boundary::socket;
    case level::node:
      return boundary::node;
    default:
      return boundary::none;  // slots, hardware threads: one core
  }
}

std::vector<ivec3> factorizations(int n) {
  std::vector<ivec3> out;
  for (int a = 1; a <= n; ++a) {
    if (n % a) continue;
    for (int b = 1; b <= n / a; ++b)
      if ((n / a) % b == 0) out.push_back({a, b, n / a / b});
  }
  return out;
}

node_shape by_slot(int ranks, std::string why) {
  node_shape s;
  if (ranks > 1) s.levels.push_back({level::slot, ranks});
  s.notes.push_back(std::move(why));
  return s;
}

}  // namespace

node_shape shape_of_node(const std::vector<rank_placement>& ranks) {
  const int n = static_cast<int>(ranks.size());
  if (n <= 1) return {};
  for (const auto& p : ranks)
    if (p.unbound)
      return by_slot(n,
                     "ranks are not bound, so the hardware levels are unknown: the ranks of a "
                     "node are laid out by their rank on the node");
  std::set<int> seen;
  for (const auto& p : ranks)
    for (int pu : p.pus)
      if (!seen.insert(pu).second)
        return by_slot(n,
                       "ranks share hardware threads, so the hardware levels are unknown: the "
                       "ranks of a node are laid out by their rank on the node");

  node_shape shape;
  std::vector<level> kept;  // top-down
  for (level l : {level::socket, level::numa, level::l3, level::l2, level::l1, level::core,
                  level::hwthread}) {
    if (std::any_of(ranks.begin(), ranks.end(),
                    [&](const rank_placement& p) { return p.object[index_of(l)] < 0; }))
      continue;  // not in this topology
    if (l == level::l1 || l == level::l2) {
      // A cache holding one used core is that core: leave it to the core level.
      std::map<int, std::set<int>> cores_of;
      for (const auto& p : ranks)
        cores_of[p.object[index_of(l)]].insert(p.object[index_of(level::core)]);
      if (std::all_of(cores_of.begin(), cores_of.end(),
                      [](const auto& entry) { return entry.second.size() == 1; }))
        continue;
    }
    auto parent_key = [&](const rank_placement& p) {
      std::vector<int> key;
      for (level k : kept) key.push_back(p.object[index_of(k)]);
      return key;
    };
    std::map<std::vector<int>, std::set<int>> children;
    std::map<int, std::vector<int>> parent_of;
    bool nested = true;
    for (const auto& p : ranks) {
      auto key = parent_key(p);
      int object = p.object[index_of(l)];
      children[key].insert(object);
      auto [it, fresh] = parent_of.emplace(object, key);
      if (!fresh && it->second != key) nested = false;
    }
    size_t lo = SIZE_MAX, hi = 0;
    for (const auto& [key, objects] : children) {
      lo = std::min(lo, objects.size());
      hi = std::max(hi, objects.size());
    }
    if (!nested) {
      shape.notes.push_back(
          fmt::format("{}: not nested in the levels above; left out", objects_name(l)));
    } else if (lo != hi) {
      shape.notes.push_back(fmt::format("{}: ranks use {} to {} per parent (uneven); left out",
                                        objects_name(l), lo, hi));
    } else {
      kept.push_back(l);
      shape.levels.insert(shape.levels.begin(), {l, static_cast<int>(lo)});
    }
  }
  long long product = 1;
  for (const auto& [l, count] : shape.levels) product *= count;
  if (product != n) {
    auto notes = shape.notes;
    shape = by_slot(n,
                    "ranks are spread unevenly over the hardware: the ranks of a node are "
                    "laid out by their rank on the node");
    shape.notes.insert(shape.notes.begin(), notes.begin(), notes.end());
  }
  return shape;
}

node_shape gather_node_shape(MPI_Comm world, const node_view& view) {
  node_shape mine = shape_of_node(view.ranks);
  // Counts per level (0: not used) and the ranks per node, agreed over all nodes.
  std::array<int, level_count + 1> lo{}, hi{};
  for (const auto& [l, count] : mine.levels) lo[static_cast<size_t>(index_of(l))] = count;
  lo[level_count] = view.node.local_size;
  hi = lo;
  yielding_allreduce(MPI_IN_PLACE, lo.data(), level_count + 1, MPI_INT, MPI_MIN, world);
  yielding_allreduce(MPI_IN_PLACE, hi.data(), level_count + 1, MPI_INT, MPI_MAX, world);
  if (lo[level_count] != hi[level_count])
    throw usage_error(fmt::format(
        "nodes hold different numbers of ranks ({} to {}); auto needs the same on every node",
        lo[level_count], hi[level_count]));
  if (lo != hi)
    return by_slot(view.node.local_size,
                   "nodes differ in how their ranks sit on the hardware: the ranks of a node are "
                   "laid out by their rank on the node");
  return mine;
}

std::array<long long, boundary_count> predicted_traffic(const hw_grids& grids,
                                                        const std::vector<message_size>& messages,
                                                        const std::array<bool, 3>& periodic) {
  const ivec3 D = grids.dims();
  ivec3 valid;
  for (int d = 0; d < 3; ++d) valid[d] = periodic[static_cast<size_t>(d)] ? D[d] : D[d] - 1;
  // Bytes of messages that leave blocks of E ranks.
  auto leaving = [&](const ivec3& E) {
    long long bytes = 0;
    for (const auto& m : messages) {
      long long all = 1, inside = 1;
      for (int d = 0; d < 3; ++d) {
        if (m.direction[d] == 0) {
          all *= D[d];
          inside *= D[d];
        } else {
          all *= valid[d];
          inside *= E[d] == D[d] ? valid[d] : D[d] - D[d] / E[d];
        }
      }
      bytes += (all - inside) * m.bytes;
    }
    return bytes;
  };
  long long everything = 0;
  for (const auto& m : messages) {
    long long all = 1;
    for (int d = 0; d < 3; ++d) all *= m.direction[d] == 0 ? D[d] : valid[d];
    everything += all * m.bytes;
  }
  std::array<long long, boundary_count> out{};
  ivec3 E{1, 1, 1};
  long long left_below = leaving(E);
  out[static_cast<size_t>(boundary::none)] += everything - left_below;  // to itself
  for (size_t i = 0; i < grids.levels.size(); ++i) {
    // E: blocks of level i objects; E * g_i: of level i+1 (everything, above the node).
    for (int d = 0; d < 3; ++d) E[d] *= grids.levels[i].dims[d];
    long long left = i + 1 < grids.levels.size() ? leaving(E) : 0;
    out[static_cast<size_t>(boundary_of(grids.levels[i].where))] += left_below - left;
    left_below = left;
  }
  return out;
}

long long weighted_score(const std::array<long long, boundary_count>& bytes) {
  long long score = 0;
  for (int k = 0; k < boundary_count; ++k)
    score += boundary_weight[static_cast<size_t>(k)] * bytes[static_cast<size_t>(k)];
  return score;
}

auto_choice choose_auto(const node_shape& shape, int nodes, const ivec3& global,
                        const exchange_shape& exchange, const std::array<bool, 3>& periodic,
                        const rank_order& order) {
  std::vector<std::pair<level, int>> levels = shape.levels;
  levels.push_back({level::node, nodes});
  long long ranks = 1;
  for (const auto& [l, count] : levels) ranks *= count;
  if (ranks != static_cast<long long>(global[0]) * global[1] * global[2])
    throw usage_error(
        fmt::format("auto: {} nodes x {} ranks per node do not fill the {}x{}x{} grid", nodes,
                    ranks / nodes, global[0], global[1], global[2]));
  std::vector<std::vector<ivec3>> choices;
  for (const auto& [l, count] : levels) choices.push_back(factorizations(count));
  const auto messages = messages_per_rank(exchange);

  auto_choice result;
  result.order = order;
  result.shape = shape;
  result.nodes = nodes;
  result.global = global;
  auto better = [](const auto_candidate& a, const auto_candidate& b) {
    if (a.score != b.score) return a.score < b.score;
    return a.grids.options(true) < b.grids.options(true);
  };
  std::vector<level_grid> current(levels.size());
  long long visited = 0;
  // Bottom-up; the blocks so far must divide the global grid.
  std::function<void(size_t, const ivec3&)> visit = [&](size_t i, const ivec3& block) {
    if (++visited > max_candidates)
      throw usage_error(
          fmt::format("auto: more than {} candidate layouts to score; give the level grids instead "
                      "(hw_grids)",
                      max_candidates));
    if (i == levels.size()) {
      auto_candidate c;
      c.grids.levels = current;
      c.bytes = predicted_traffic(c.grids, messages, periodic);
      c.score = weighted_score(c.bytes);
      ++result.candidates;
      auto& best = result.best;
      if (best.size() == kept_candidates && !better(c, best.back())) return;
      best.insert(std::upper_bound(best.begin(), best.end(), c, better), c);
      if (best.size() > kept_candidates) best.pop_back();
      return;
    }
    for (const ivec3& g : choices[i]) {
      ivec3 next{block[0] * g[0], block[1] * g[1], block[2] * g[2]};
      if (global[0] % next[0] || global[1] % next[1] || global[2] % next[2]) continue;
      current[i] = {levels[i].first, g};
      visit(i + 1, next);
    }
  };
  visit(0, {1, 1, 1});
  if (result.best.empty()) {
    std::string counts;
    for (const auto& [l, count] : levels)
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", to_string(l), count);
    throw usage_error(
        fmt::format("auto: the levels ({}) cannot tile the {}x{}x{} rank grid; give another grid "
                    "(make_cart_decomposition) or the level grids (hw_grids)",
                    counts, global[0], global[1], global[2]));
  }
  result.grids = result.best.front().grids;
  return result;
}

std::string auto_choice::explain() const {
  std::string out = "auto: occupied objects per parent, bottom-up: ";
  std::string counts;
  for (const auto& [l, count] : shape.levels)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", to_string(l), count);
  out += counts.empty() ? "one rank per node" : counts;
  out += fmt::format("; {} node{}; global rank grid {}x{}x{}\n", nodes, nodes == 1 ? "" : "s",
                     global[0], global[1], global[2]);
  for (const auto& note : shape.notes) out += fmt::format("auto: note: {}\n", note);
  out +=
      fmt::format("auto: scored {} layouts by the exact bytes per exchange, weighted", candidates);
  for (int k = 0; k < boundary_count; ++k)
    out += fmt::format(" {} x{}", to_string(static_cast<boundary>(k)),
                       boundary_weight[static_cast<size_t>(k)]);
  out += "\n";
  out += fmt::format("auto: {:>3} {:>14} {:>12} {:>12}  {}\n", "#", "score", "cross-node",
                     "cross-socket", "grids");
  for (size_t i = 0; i < best.size(); ++i) {
    const auto& c = best[i];
    out += fmt::format("auto: {:>3} {:>14} {:>12} {:>12}  {}\n", i + 1, c.score,
                       format_bytes(c.bytes[static_cast<size_t>(boundary::node)]),
                       format_bytes(c.bytes[static_cast<size_t>(boundary::socket)]),
                       c.grids.options());
  }
  out += fmt::format(
      "auto: chosen {} --order {} (the order numbers the ranks, it does not change the bytes)\n",
      grids.options(), order.name());
  return out;
}

}  // namespace halox
