// halox-halo2d logic without peers: mesh, neighbours, phase schedule, message
// content, options and tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "halox/common/error.hpp"
#include "halox_programs/halo2d/mesh.hpp"
#include "halox_programs/halo2d/message_content.hpp"
#include "halox_programs/halo2d/options.hpp"
#include "halox_programs/halo2d/report.hpp"

using namespace halox::halo2d;

namespace {

std::vector<mesh2d> small_meshes() {
  std::vector<mesh2d> meshes;
  for (bool periodic : {true, false})
    for (int px = 1; px <= 7; ++px)
      for (int py = 1; py <= 7; ++py) meshes.push_back({{px, py}, periodic});
  return meshes;
}

bool mesh_runs(const mesh2d& mesh, int k) {
  return mesh_requirement(mesh, k).empty();
}

}  // namespace

TEST(Halo2dMesh, DirectionsComeInOppositePairs) {
  for (int k : {2, 4, 8}) {
    auto dirs = directions(k);
    ASSERT_EQ(dirs.size(), static_cast<size_t>(k));
    for (int d = 0; d < k; ++d) {
      int o = opposite(d);
      ASSERT_LT(o, k) << "the stencil must contain the opposite of every direction";
      EXPECT_EQ(dirs[o].offset[0], -dirs[d].offset[0]);
      EXPECT_EQ(dirs[o].offset[1], -dirs[d].offset[1]);
      EXPECT_EQ(opposite(o), d);
    }
  }
  EXPECT_FALSE(is_neighbor_count(3));
  EXPECT_THROW(directions(6), std::invalid_argument);
}

TEST(Halo2dMesh, RanksAreRowMajorLikeMpiCartCreate) {
  mesh2d mesh{{3, 4}, true};
  EXPECT_EQ(rank_of(mesh, {0, 0}), 0);
  EXPECT_EQ(rank_of(mesh, {0, 1}), 1);  // dimension 1 runs fastest
  EXPECT_EQ(rank_of(mesh, {1, 0}), 4);
  for (int r = 0; r < mesh.size(); ++r) EXPECT_EQ(rank_of(mesh, coords_of(mesh, r)), r);
}

TEST(Halo2dMesh, NeighboursWrapOnlyWhenPeriodic) {
  mesh2d open{{3, 3}, false}, torus{{3, 3}, true};
  EXPECT_EQ(neighbor(torus, {0, 0}, 0), (coord2{2, 0}));  // -x
  EXPECT_EQ(neighbor(torus, {2, 2}, 7), (coord2{0, 0}));  // +x+y
  EXPECT_FALSE(neighbor(open, {0, 0}, 0));
  EXPECT_EQ(neighbor(open, {1, 1}, 4), (coord2{0, 0}));  // -x-y
  mesh2d line{{4, 1}, true};
  EXPECT_EQ(neighbor(line, {2, 0}, 2), (coord2{2, 0}));  // -y is the process itself
  mesh2d pair{{2, 1}, true};
  EXPECT_EQ(neighbor(pair, {0, 0}, 0), neighbor(pair, {0, 0}, 1));  // -x and +x: the same peer
}

TEST(Halo2dMesh, SingleSenderIsOneOneOrTheCentre) {
  EXPECT_EQ(single_sender({{4, 4}, true}), (coord2{1, 1}));
  EXPECT_EQ(single_sender({{2, 2}, true}), (coord2{1, 1}));
  EXPECT_EQ(single_sender({{5, 1}, true}), (coord2{1, 0}));
  EXPECT_EQ(single_sender({{1, 1}, true}), (coord2{0, 0}));
}

TEST(Halo2dMesh, OpenMeshesNeedAnInteriorProcess) {
  EXPECT_TRUE(mesh_runs({{2, 2}, true}, 8));
  EXPECT_TRUE(mesh_runs({{1, 1}, true}, 8));
  EXPECT_FALSE(mesh_runs({{2, 2}, false}, 2));
  EXPECT_TRUE(mesh_runs({{5, 1}, false}, 2));
  EXPECT_NE(mesh_requirement({{5, 1}, false}, 4).find("dimension y"), std::string::npos);
  EXPECT_TRUE(mesh_runs({{3, 3}, false}, 8));
}

TEST(Halo2dPhases, DimensionColouringIsProper) {
  for (bool periodic : {true, false})
    for (int n = 2; n <= 9; ++n) {
      int colours = dimension_colour_count(n, periodic);
      for (int c = 0; c < n; ++c) {
        int mine = dimension_colour(c, n, periodic);
        EXPECT_LT(mine, colours);
        if (c + 1 < n) {
          EXPECT_NE(mine, dimension_colour(c + 1, n, periodic)) << n << " " << c;
        }
      }
      if (periodic) {
        EXPECT_NE(dimension_colour(n - 1, n, true), dimension_colour(0, n, true)) << n;
      }
    }
}

TEST(Halo2dPhases, KnownPhaseCounts) {
  // {dims, periodic} -> phases for 2, 4, 8 neighbours
  std::vector<std::tuple<mesh2d, std::array<int, 3>>> cases{
      {{{4, 4}, true}, {2, 2, 4}},  {{{2, 2}, true}, {2, 2, 4}}, {{{3, 3}, true}, {3, 3, 9}},
      {{{5, 1}, true}, {3, 3, 3}},  {{{1, 1}, true}, {1, 1, 1}}, {{{3, 2}, true}, {3, 3, 6}},
      {{{3, 3}, false}, {2, 2, 4}}, {{{2, 1}, true}, {2, 2, 2}}};
  for (const auto& [mesh, expected] : cases) {
    EXPECT_EQ(phase_count(mesh, 2), expected[0]) << mesh_string(mesh);
    EXPECT_EQ(phase_count(mesh, 4), expected[1]) << mesh_string(mesh);
    EXPECT_EQ(phase_count(mesh, 8), expected[2]) << mesh_string(mesh);
  }
}

// The property the phased test relies on, for every small mesh: each message
// is received in the phase in which it is sent, and in a phase a process
// either sends or receives (messages to itself excepted).
TEST(Halo2dPhases, EveryMessageIsMatchedAndNoProcessSendsAndReceivesInOnePhase) {
  for (const auto& mesh : small_meshes())
    for (int k : {2, 4, 8}) {
      if (!mesh_runs(mesh, k)) continue;
      for (auto test : all_tests) {
        using key = std::tuple<int, int, int, int>;  // sender, receiver, tag, phase
        std::multiset<key> sent, received;
        int phases = 0;
        for (int r = 0; r < mesh.size(); ++r) {
          coord2 me = coords_of(mesh, r);
          auto plan = plan_messages(test, mesh, k, me);
          phases = plan.phases;
          std::map<int, std::pair<bool, bool>> role;  // phase -> (sends, receives)
          for (const auto& s : plan.sends) {
            ASSERT_GE(s.phase, 0);
            ASSERT_LT(s.phase, plan.phases);
            sent.insert({r, rank_of(mesh, s.peer), s.direction, s.phase});
            if (s.peer != me) role[s.phase].first = true;
          }
          for (const auto& m : plan.receives) {
            ASSERT_LT(m.phase, plan.phases);
            received.insert({rank_of(mesh, m.peer), r, m.direction, m.phase});
            if (m.peer != me) role[m.phase].second = true;
          }
          if (test != test_kind::phased) continue;
          for (const auto& [phase, sends_and_receives] : role) {
            EXPECT_FALSE(sends_and_receives.first && sends_and_receives.second)
                << mesh_string(mesh) << (mesh.periodic ? " periodic" : "") << " k=" << k << " rank "
                << r << " phase " << phase;
          }
        }
        EXPECT_EQ(sent, received) << mesh_string(mesh) << " k=" << k << " " << name_of(test);
        if (test == test_kind::phased) {
          std::set<int> used;
          for (const auto& s : sent) used.insert(std::get<3>(s));
          if (!sent.empty()) {
            EXPECT_EQ(static_cast<int>(used.size()), phases) << "an empty phase";
          }
        } else {
          EXPECT_EQ(phases, 1);
        }
      }
    }
}

TEST(Halo2dPlan, OnlyTheSingleSenderSends) {
  mesh2d mesh{{4, 4}, true};
  int senders = 0, received = 0;
  for (int r = 0; r < mesh.size(); ++r) {
    auto plan = plan_messages(test_kind::single, mesh, 8, coords_of(mesh, r));
    senders += plan.sends.empty() ? 0 : 1;
    received += static_cast<int>(plan.receives.size());
    if (!plan.sends.empty()) {
      EXPECT_EQ(coords_of(mesh, r), (coord2{1, 1}));
    }
  }
  EXPECT_EQ(senders, 1);
  EXPECT_EQ(received, 8);
}

TEST(Halo2dPlan, OpenBoundariesDropMessages) {
  mesh2d mesh{{3, 3}, false};
  EXPECT_EQ(plan_messages(test_kind::all, mesh, 8, {0, 0}).sends.size(), 3u);
  EXPECT_EQ(plan_messages(test_kind::all, mesh, 8, {1, 1}).sends.size(), 8u);
  EXPECT_EQ(plan_messages(test_kind::all, mesh, 4, {0, 1}).receives.size(), 3u);
}

TEST(Halo2dContent, RoundTripAndEveryFieldMatters) {
  for (size_t bytes : {1u, 7u, 8u, 9u, 64u, 4099u}) {
    message_id id{3, 5, bytes, 42};
    std::vector<std::byte> buffer(bytes);
    fill_content(buffer, id);
    EXPECT_FALSE(first_mismatch(buffer, id)) << bytes;
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(buffer[i], expected_byte(id, i));

    // The receive-side poison differs in every byte.
    std::vector<std::byte> poison(bytes);
    fill_complement(poison, id);
    for (size_t i = 0; i < bytes; ++i) ASSERT_NE(poison[i], buffer[i]);
    EXPECT_EQ(first_mismatch(poison, id), std::optional<size_t>(0));

    // The previous iteration differs in byte 0 at every size.
    message_id stale = id;
    stale.iteration = 41;
    EXPECT_EQ(first_mismatch(buffer, stale), std::optional<size_t>(0));

    buffer[bytes - 1] ^= std::byte{1};
    EXPECT_EQ(first_mismatch(buffer, id), std::optional<size_t>(bytes - 1));
  }
  std::vector<std::byte> buffer(64);
  message_id id{3, 5, 64, 42};
  fill_content(buffer, id);
  EXPECT_TRUE(first_mismatch(buffer, {4, 5, 64, 42}));
  EXPECT_TRUE(first_mismatch(buffer, {3, 4, 64, 42}));
  EXPECT_TRUE(first_mismatch(buffer, {3, 5, 65, 42}));
  EXPECT_FALSE(first_mismatch(std::span<const std::byte>{}, id));
}

TEST(Halo2dOptions, ByteSizes) {
  EXPECT_EQ(parse_byte_size("0", "--x"), 0u);
  EXPECT_EQ(parse_byte_size("4096", "--x"), 4096u);
  EXPECT_EQ(parse_byte_size("64k", "--x"), 65536u);
  EXPECT_EQ(parse_byte_size("64KiB", "--x"), 65536u);
  EXPECT_EQ(parse_byte_size("1MiB", "--x"), 1048576u);
  EXPECT_EQ(parse_byte_size("1 MB", "--x"), 1048576u);
  for (const char* bad : {"", "-1", "abc", "1.5", "12xb", "1e3", "99999999999999999999999"})
    EXPECT_THROW(parse_byte_size(bad, "--x"), halox::usage_error) << bad;
}

TEST(Halo2dOptions, PowerOfTwoRange) {
  auto seed = power_of_two_sizes(0, 1 << 20);
  ASSERT_EQ(seed.size(), 22u);  // 0, 1, 2, 4, ..., 1 MiB
  EXPECT_EQ(seed.front(), 0u);
  EXPECT_EQ(seed[1], 1u);
  EXPECT_EQ(seed.back(), 1u << 20);
  EXPECT_EQ(power_of_two_sizes(3, 20), (std::vector<size_t>{4, 8, 16}));
  EXPECT_TRUE(power_of_two_sizes(3, 3).empty());
}

TEST(Halo2dOptions, AutoRepetitionsStayInBounds) {
  EXPECT_EQ(auto_repetitions(0, 2), 1000);
  EXPECT_EQ(auto_repetitions(1 << 20, 8), 10);
  EXPECT_EQ(auto_repetitions(65536, 2), 128);
}

namespace {
config parse(std::vector<std::string> args, int ranks) {
  CLI::App app;
  options opts;
  add_options(app, opts);
  std::reverse(args.begin(), args.end());  // CLI11 takes argv reversed
  app.parse(args);
  return validate(opts, ranks);
}
}  // namespace

TEST(Halo2dOptions, Defaults) {
  auto cfg = parse({}, 4);
  EXPECT_EQ(cfg.mesh.dims, (coord2{2, 2}));
  EXPECT_TRUE(cfg.mesh.periodic);
  EXPECT_FALSE(cfg.reorder);
  EXPECT_EQ(cfg.tests.size(), all_tests.size());
  EXPECT_EQ(cfg.neighbor_counts, (std::vector<int>{2, 4, 8}));
  EXPECT_EQ(cfg.sizes.size(), 22u);
  EXPECT_TRUE(cfg.check);
  EXPECT_EQ(parse({}, 5).mesh.dims, (coord2{5, 1}));
}

TEST(Halo2dOptions, ExplicitChoices) {
  auto cfg = parse({"--mesh", "3", "3", "--tests", "phased,single,phased", "--neighbours", "8,2",
                    "--sizes", "8,1k,0,8", "--no-periodic", "--no-check", "--reorder"},
                   9);
  EXPECT_EQ(cfg.mesh.dims, (coord2{3, 3}));
  EXPECT_FALSE(cfg.mesh.periodic);
  EXPECT_FALSE(cfg.mesh_from_dims_create);
  EXPECT_EQ(cfg.tests, (std::vector<test_kind>{test_kind::phased, test_kind::single}));
  EXPECT_EQ(cfg.neighbor_counts, (std::vector<int>{8, 2}));
  EXPECT_EQ(cfg.sizes, (std::vector<size_t>{0, 8, 1024}));
  EXPECT_FALSE(cfg.check);
  EXPECT_TRUE(cfg.reorder);
  EXPECT_EQ(parse({"--mesh", "0", "2"}, 6).mesh.dims, (coord2{3, 2}));
}

TEST(Halo2dOptions, BadInputsAreUsageErrors) {
  auto message_of = [](std::vector<std::string> args, int ranks) -> std::string {
    try {
      parse(std::move(args), ranks);
    } catch (const halox::usage_error& e) {
      return e.what();
    } catch (const CLI::ParseError& e) {
      return std::string("cli: ") + e.what();
    }
    return "";
  };
  EXPECT_NE(message_of({"--mesh", "3", "2"}, 4).find("job has 4 ranks"), std::string::npos);
  EXPECT_NE(message_of({"--mesh", "3", "0"}, 4).find("cannot be split"), std::string::npos);
  EXPECT_NE(message_of({"--tests", "single,bogus"}, 4).find("unknown test 'bogus'"),
            std::string::npos);
  EXPECT_NE(message_of({"--tests", ","}, 4).find("no test"), std::string::npos);
  EXPECT_NE(message_of({"--neighbors", "3"}, 4).find("not a neighbour count"), std::string::npos);
  EXPECT_NE(message_of({"--max-size", "32MiB"}, 4).find("out of range"), std::string::npos);
  EXPECT_NE(message_of({"--min-size", "8", "--max-size", "4"}, 4).find("larger than"),
            std::string::npos);
  EXPECT_NE(message_of({"--sizes", "-4"}, 4).find("negative"), std::string::npos);
  EXPECT_NE(message_of({"--no-periodic"}, 4).find("need at least 3"), std::string::npos);
  EXPECT_NE(message_of({"--inject-fault", "x"}, 4).find("unknown fault"), std::string::npos);
  EXPECT_EQ(message_of({"--sizes", "4", "--max-size", "8"}, 4).rfind("cli: ", 0), 0u);
  EXPECT_EQ(message_of({"--no-periodic", "--neighbors", "2"}, 5), "");
}

TEST(Halo2dReport, SeedLayout) {
  table_layout layout{{test_kind::single, test_kind::all}, {2, 4}, {0, 1024}};
  std::vector<measurement> results;
  for (auto test : layout.tests)
    for (int k : layout.neighbor_counts)
      for (auto bytes : layout.sizes) {
        measurement m;
        m.test = test;
        m.neighbors = k;
        m.bytes = bytes;
        m.seconds_per_exchange = 0.000004 * k;  // 4 us per message
        results.push_back(m);
      }
  results.pop_back();  // all, 4 neighbours, 1024 B: not measured
  auto table = time_table(results, layout, 6);
  EXPECT_NE(table.find("     bytes"), std::string::npos);
  EXPECT_NE(table.find("single sender"), std::string::npos);
  EXPECT_NE(table.find("all send/receive"), std::string::npos);
  EXPECT_NE(table.find("\n         0        0.000004        0.000004"), std::string::npos) << table;
  EXPECT_NE(table.find("0.000004               -\n"), std::string::npos) << table;
  auto bandwidth = bandwidth_table(results, layout);
  EXPECT_NE(bandwidth.find("256.0"), std::string::npos) << bandwidth;  // 1024 B / 4 us
  EXPECT_NE(bandwidth.find("\n         0               -"), std::string::npos) << bandwidth;
}
