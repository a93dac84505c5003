// Exact byte counts by domain, and the closed form auto scores with.
#include "halox/programs/decomposition/traffic.hpp"

#include <gtest/gtest.h>

#include <functional>

#include "halox/common/error.hpp"
#include "halox/programs/decomposition/auto.hpp"
#include "betzy_topology.hpp"

namespace halox {
namespace {


exchange_shape shape_of(ivec3 domain, int halo, int fields, size_t element, algorithm a) {
  exchange_shape s;
  s.domain_per_rank = domain;
  s.halo = halo_widths::uniform(halo);
  s.nfields = fields;
  s.element_size = element;
  s.alg = a;
  return s;
}

long long bytes_toward(const std::vector<message_size>& ms, ivec3 dir) {
  long long sum = 0;
  for (const auto& m : ms)
    if (m.direction == dir) sum += m.bytes;
  return sum;
}

TEST(Traffic, MessagesPerRank) {
  auto standard = messages_per_rank(shape_of({4, 5, 6}, 1, 2, 8, algorithm::standard));
  EXPECT_EQ(standard.size(), 26u);
  EXPECT_EQ(bytes_toward(standard, {1, 0, 0}), 5 * 6 * 16);
  EXPECT_EQ(bytes_toward(standard, {1, -1, 0}), 6 * 16);
  EXPECT_EQ(bytes_toward(standard, {-1, 1, 1}), 16);
  auto staged = messages_per_rank(shape_of({4, 5, 6}, 1, 2, 8, algorithm::staged));
  EXPECT_EQ(staged.size(), 6u);
  EXPECT_EQ(bytes_toward(staged, {0, 1, 0}), 6 * 6 * 16);  // x halos travel along
  EXPECT_EQ(bytes_toward(staged, {0, 0, -1}), 6 * 7 * 16);
  EXPECT_EQ(messages_per_rank(shape_of({4, 5, 6}, 1, 1, 8, algorithm::faces)).size(), 6u);
}

TEST(Traffic, SharedDomainLadder) {
  auto topo = topology::load(betzy);
  auto at = [&](std::vector<int> pus, int rank, int node = 0) {
    auto p = topo.place(pus);
    p.rank = rank;
    p.node = node;
    return p;
  };
  auto a = at({0}, 0);
  EXPECT_EQ(crossed_boundary(a, a), boundary::none);
  EXPECT_EQ(crossed_boundary(a, at({1}, 1)), boundary::core);
  EXPECT_EQ(crossed_boundary(a, at({4}, 1)), boundary::l3);
  EXPECT_EQ(crossed_boundary(a, at({16}, 1)), boundary::numa);
  EXPECT_EQ(crossed_boundary(a, at({64}, 1)), boundary::socket);
  EXPECT_EQ(crossed_boundary(a, at({0}, 1, 1)), boundary::node);
  // A binding over two L3 caches shares only the NUMA node with a rank in either.
  EXPECT_EQ(crossed_boundary(at({2, 3, 4, 5}, 0), at({1}, 1)), boundary::l3);
  EXPECT_EQ(crossed_boundary(at({0, 1}, 0), at({2, 3}, 1)), boundary::core);
  // Hardware threads of one core.
  auto smt = topology::load("synthetic:core:2 pu:2");
  auto p = smt.place({0}), q = smt.place({1});
  q.rank = 1;
  EXPECT_EQ(crossed_boundary(p, q), boundary::none);
}

TEST(Traffic, TwoRanksOneL3) {
  auto ranks =
      assumed_placements(topology::load("synthetic:l3:1 core:2 pu:1"), binding_policy::core, 1, 2);
  auto s = shape_of({8, 8, 8}, 1, 1, 8, algorithm::standard);
  auto t = count_traffic({{0, 0, 0}, {1, 0, 0}}, {2, 1, 1}, {true, true, true}, ranks, s);
  long long along_x = 0, self = 0;
  for (const auto& m : messages_per_rank(s)) (m.direction[0] != 0 ? along_x : self) += m.bytes;
  EXPECT_EQ(t.total[static_cast<size_t>(boundary::core)], 2 * along_x);
  EXPECT_EQ(t.total[static_cast<size_t>(boundary::none)], 2 * self);
  EXPECT_EQ(t.max_per_rank[static_cast<size_t>(boundary::core)], along_x);
  EXPECT_EQ(t.messages[static_cast<size_t>(boundary::core)], 2 * 18);
  EXPECT_EQ(t.total_bytes(), t.total[0] + t.total[1]);
  // Open boundaries: nobody beyond them.
  auto open = count_traffic({{0, 0, 0}, {1, 0, 0}}, {2, 1, 1}, {false, false, false}, ranks, s);
  EXPECT_EQ(open.total_bytes(), 2 * bytes_toward(messages_per_rank(s), {1, 0, 0}));
}

// Every way to factor `counts` into 3-D grids, bottom-up.
void each_grid_set(const std::vector<std::pair<level, int>>& counts,
                   const std::function<void(const hw_grids&)>& f) {
  std::vector<level_grid> current(counts.size());
  std::function<void(size_t)> visit = [&](size_t i) {
    if (i == counts.size()) return f(hw_grids{current});
    int n = counts[i].second;
    for (int a = 1; a <= n; ++a)
      for (int b = 1; a * b <= n; ++b)
        if (n % (a * b) == 0) {
          current[i] = {counts[i].first, {a, b, n / (a * b)}};
          visit(i + 1);
        }
  };
  visit(0);
}

void expect_closed_form_exact(const std::string& source, binding_policy policy, int nodes,
                              int per_node) {
  auto ranks = assumed_placements(topology::load(source), policy, nodes, per_node);
  std::vector<rank_placement> node0(ranks.begin(), ranks.begin() + per_node);
  auto counts = shape_of_node(node0).levels;
  counts.push_back({level::node, nodes});
  int checked = 0;
  for (algorithm a : {algorithm::standard, algorithm::staged, algorithm::faces})
    for (bool periodic : {true, false}) {
      auto s = shape_of({4, 3, 5}, 1, 2, 4, a);
      std::array<bool, 3> p{periodic, true, periodic};
      auto messages = messages_per_rank(s);
      each_grid_set(counts, [&](const hw_grids& g) {
        auto coords = map_ranks(ranks, g, rank_order::parse("YZX"));
        auto exact = count_traffic(coords, g.dims(), p, ranks, s);
        EXPECT_EQ(predicted_traffic(g, messages, p), exact.total)
            << g.options(true) << " " << to_string(a) << " periodic " << periodic;
        ++checked;
      });
    }
  EXPECT_GT(checked, 100);
}

TEST(Traffic, ClosedFormIsExact) {
  expect_closed_form_exact("synthetic:pack:2 numa:2 l3:2 core:2 pu:1", binding_policy::core, 2, 16);
  // Ranks bound to two cores each (srun -c 2), and hardware threads.
  expect_closed_form_exact("synthetic:pack:2 l3:2 core:4 pu:1", binding_policy::spread, 3, 8);
  expect_closed_form_exact("synthetic:l3:2 core:2 pu:2", binding_policy::hwthread, 2, 8);
}

TEST(Traffic, FormatBytes) {
  EXPECT_EQ(format_bytes(0), "0");
  EXPECT_EQ(format_bytes(999), "999 B");
  EXPECT_EQ(format_bytes(16384), "16.4 kB");
  EXPECT_EQ(format_bytes(1'234'567), "1.23 MB");
  EXPECT_EQ(format_bytes(175'000'000'000LL), "175 GB");
}

}  // namespace
}  // namespace halox
