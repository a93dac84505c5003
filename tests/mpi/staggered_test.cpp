// Fields as codes hold them, verified point by point: cell, face, edge and node
// locations with halos and element types of their own in one exchange, subset
// calls at smaller depths, open and periodic boundaries (the same halos from
// every algorithm), every host transport, 1..8 ranks, and a code's own rank
// order honoured or refused.
//
// The checker is independent of the library: it derives each field's points
// per rank, which halo points a call fills, and the value of every point from
// its global index, from the conventions of halox/field.hpp as written there.
#include "halox/exchange.hpp"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <cstring>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "halox/common/error.hpp"
#include "halox/field_memory.hpp"
#include "test_world.hpp"
#include "halox/extend/registry.hpp"

using namespace halox;
using halox::testing_support::staggered;
using halox::testing_support::world_size;

namespace {

// Oversubscribed runs (more ranks than the 2 cores) take fewer cases.
bool reduced() { return world_size() > 2; }

// One field as the test declares it: location, type and allocated halo.
struct field_spec {
  std::string name;
  location at;
  element_type type;
  halo_widths halo;  // as exchanged
  // CloverLeaf's extents: the same array bounds on every rank, so the rank at
  // the high end of an open staggered axis, one point longer, has one less above.
  bool cloverleaf = false;
  shared_points shared = shared_points::from_owner;
};

// Cell, node (CloverLeaf's extents), faces and edges (DMStag's and per-side),
// floats and doubles, a field without a z halo.
std::vector<field_spec> mixed_fields() {
  return {{"density", location::cell, element_type::f64, halo_widths::uniform(2)},
          {"xvel", location::vertex, element_type::f64, {{2, 2, 2}, {3, 3, 3}}, true},
          {"vol_flux_x", location::x_face, element_type::f32, {{1, 2, 1}, {2, 1, 2}}},
          {"edge_y", location::y_edge, element_type::f32, {{1, 1, 1}, {2, 1, 2}}},
          {"w", location::z_face, element_type::f64, halo_widths::uniform(2)},
          {"tracer", location::cell, element_type::f32, {{1, 1, 0}, {1, 1, 0}}},
          // Shared faces kept (computed alike on both sides, as CloverLeaf's are).
          {"yvel_kept", location::vertex, element_type::f64, {{2, 2, 2}, {3, 3, 3}}, true,
           shared_points::kept},
          {"flux_kept", location::y_face, element_type::f32, {{1, 1, 2}, {2, 2, 1}}, false,
           shared_points::kept}};
}

// The points of one field on one rank, and the whole grid's.
struct field_geometry {
  // `held`: the points the rank holds as its own, the kept shared faces above included.
  ivec3 points, held, offset, global_points;
  ivec3 alloc_lo, alloc_hi;
  size_t count() const {
    size_t n = 1;
    for (int k = 0; k < 3; ++k) n *= static_cast<size_t>(alloc_lo[k] + points[k] + alloc_hi[k]);
    return n;
  }
  size_t index(const ivec3& p) const {
    size_t i = 0;
    for (int k = 2; k >= 0; --k)
      i = i * static_cast<size_t>(alloc_lo[k] + points[k] + alloc_hi[k]) +
          static_cast<size_t>(p[k] + alloc_lo[k]);
    return i;
  }
};

field_geometry geometry_of(const decomposition& d, const subdomain& sub, const field_spec& f) {
  field_geometry g;
  const ivec3 s = staggered(f.at);
  for (int k = 0; k < 3; ++k) {
    const bool open_staggered = s[k] && !d.periodic()[k];
    g.global_points[k] = sub.global[k] + (open_staggered ? 1 : 0);
    g.offset[k] = sub.offset[k];
    g.points[k] = sub.extent[k] + (open_staggered && d.coords()[k] == d.dims()[k] - 1 ? 1 : 0);
    g.alloc_lo[k] = f.halo.lo[k];
    g.alloc_hi[k] = f.halo.hi[k] - (f.cloverleaf && g.points[k] > sub.extent[k] ? 1 : 0);
    const bool above = d.periodic()[k] || d.coords()[k] < d.dims()[k] - 1;
    g.held[k] = g.points[k] + (f.shared == shared_points::kept && s[k] && above ? 1 : 0);
  }
  return g;
}

// A point's value: its field, its global index and the epoch, exact in float.
double point_value(int field, const ivec3& g, int epoch) {
  return 1 + field * 9000 + g[0] + 21 * g[1] + 441 * g[2] + epoch * 70000;
}
// What a rank leaves in its halo: its own mark, so a neighbour's halo copied
// into it shows.
double unfilled_mark(int rank) { return -1.0 - rank; }

// Whether a call at `depth` (0: whole halo) of `alg` writes local point p,
// and from which global point.
bool filled_from(const field_geometry& g, const field_spec& f, const decomposition& d,
                 algorithm alg, int depth, const ivec3& p, ivec3& global) {
  const ivec3 s = staggered(f.at);
  int outside = 0;
  for (int k = 0; k < 3; ++k) {
    // A kept shared face is held, not filled: the halo above starts beyond it.
    const int kept = g.held[k] - g.points[k];
    const int lo = depth > 0 ? std::min(f.halo.lo[k], depth) : f.halo.lo[k];
    const int hi = depth > 0 ? std::min(f.halo.hi[k] - kept, depth + s[k] - kept)
                             : f.halo.hi[k] - kept;
    if (p[k] < -lo || p[k] >= g.held[k] + hi) return false;
    if (p[k] < 0 || p[k] >= g.held[k]) ++outside;
    int gk = g.offset[k] + p[k];
    if (gk < 0 || gk >= g.global_points[k]) {
      if (!d.periodic()[k]) return false;  // beyond an open boundary: nobody owns it
      gk = (gk + g.global_points[k]) % g.global_points[k];
    }
    global[k] = gk;
  }
  if (alg == algorithm::faces && outside > 1) return false;
  return outside > 0;
}

// Every allocated point of a field, and whether it is one the rank holds.
template <class Visit>
void for_each_point(const field_geometry& g, Visit&& visit) {
  for (int z = -g.alloc_lo[2]; z < g.points[2] + g.alloc_hi[2]; ++z)
    for (int y = -g.alloc_lo[1]; y < g.points[1] + g.alloc_hi[1]; ++y)
      for (int x = -g.alloc_lo[0]; x < g.points[0] + g.alloc_hi[0]; ++x) {
        const ivec3 p{x, y, z};
        bool inside = true;
        for (int k = 0; k < 3; ++k) inside = inside && p[k] >= 0 && p[k] < g.held[k];
        // (a kept face held at the top of a periodic axis is the wrapped point 0)
        ivec3 global{g.offset[0] + x, g.offset[1] + y, g.offset[2] + z};
        for (int k = 0; k < 3; ++k)
          if (inside) global[k] %= g.global_points[k];
        visit(p, global, inside);
      }
}

template <class T>
void fill(std::vector<std::byte>& memory, const field_geometry& g, int field, int epoch, int rank) {
  T* data = reinterpret_cast<T*>(memory.data());
  for_each_point(g, [&](const ivec3& p, const ivec3& gi, bool inside) {
    data[g.index(p)] = static_cast<T>(inside ? point_value(field, gi, epoch) : unfilled_mark(rank));
  });
}

template <class T>
std::string check(const std::vector<std::byte>& memory, const field_geometry& g,
                  const field_spec& f, int field, const decomposition& d, algorithm alg,
                  int depth, bool moved, int epoch) {
  const T* data = reinterpret_cast<const T*>(memory.data());
  size_t wrong = 0;
  std::string first;
  for_each_point(g, [&](const ivec3& p, const ivec3& gi, bool inside) {
    ivec3 from{0, 0, 0};
    const double expected =
        inside ? point_value(field, gi, epoch)
        : moved && filled_from(g, f, d, alg, depth, p, from) ? point_value(field, from, epoch)
                                                             : unfilled_mark(d.rank());
    const double found = static_cast<double>(data[g.index(p)]);
    if (found != expected && wrong++ == 0)
      first = fmt::format("rank {} field '{}' ({}) local point ({},{},{}): expected {}, found {}",
                          d.rank(), f.name, to_string(f.at), p[0], p[1], p[2], expected, found);
  });
  return wrong ? fmt::format("{} wrong points, first: {}", wrong, first) : std::string{};
}

// One rank's fields of a case, in heap or node-shared memory.
struct case_fields {
  std::vector<field_spec> specs;
  std::vector<field_geometry> geometry;
  std::vector<std::vector<std::byte>> memory;
  std::optional<shared_field_memory> shared;
  std::vector<field> fields;

  case_fields(const decomposition& d, const subdomain& sub, std::vector<field_spec> s, bool in_shared)
      : specs(std::move(s)) {
    size_t largest = 0;
    for (const auto& f : specs) {
      geometry.push_back(geometry_of(d, sub, f));
      memory.emplace_back(geometry.back().count() * element_size(f.type));
      largest = std::max(largest, memory.back().size());
    }
    // Collective: the largest field of any rank.
    MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_UNSIGNED_LONG, MPI_MAX, d.comm());
    if (in_shared) shared.emplace(d, largest, static_cast<int>(specs.size()));
    for (size_t i = 0; i < specs.size(); ++i)
      fields.push_back({shared ? shared->field(static_cast<int>(i)) : memory[i].data(),
                        specs[i].type, specs[i].at,
                        halo_widths{geometry[i].alloc_lo, geometry[i].alloc_hi}, specs[i].name,
                        specs[i].shared});
  }

  // The shared window's bytes mirror `memory` (the checks read `memory`).
  void to_fields() {
    if (!shared) return;
    for (size_t i = 0; i < memory.size(); ++i)
      std::memcpy(shared->field(static_cast<int>(i)), memory[i].data(), memory[i].size());
  }
  void from_fields() {
    if (!shared) return;
    for (size_t i = 0; i < memory.size(); ++i)
      std::memcpy(memory[i].data(), shared->field(static_cast<int>(i)), memory[i].size());
  }

  void fill_all(int epoch, int rank) {
    for (size_t i = 0; i < specs.size(); ++i)
      if (specs[i].type == element_type::f32)
        fill<float>(memory[i], geometry[i], static_cast<int>(i), epoch, rank);
      else
        fill<double>(memory[i], geometry[i], static_cast<int>(i), epoch, rank);
    to_fields();
  }

  std::string check_all(const decomposition& d, algorithm alg, int depth,
                        const std::vector<int>& moved, int epoch) {
    from_fields();
    for (size_t i = 0; i < specs.size(); ++i) {
      const bool is_moved = moved.empty() || std::ranges::find(moved, static_cast<int>(i)) != moved.end();
      const std::string error =
          specs[i].type == element_type::f32
              ? check<float>(memory[i], geometry[i], specs[i], static_cast<int>(i), d, alg, depth,
                             is_moved, epoch)
              : check<double>(memory[i], geometry[i], specs[i], static_cast<int>(i), d, alg, depth,
                              is_moved, epoch);
      if (!error.empty()) return error;
    }
    return {};
  }
};

std::vector<ivec3> rank_grids() {
  switch (world_size()) {
    case 1: return {{1, 1, 1}};
    case 2: return {{2, 1, 1}, {1, 2, 1}, {1, 1, 2}};
    case 3: return {{1, 3, 1}};
    case 4: return {{2, 2, 1}, {1, 2, 2}};
    case 8: return {{2, 2, 2}};
    default: return {{0, 0, 0}};
  }
}

std::vector<std::array<bool, 3>> periodicities() {
  if (reduced()) return {{false, false, false}, {true, false, true}};
  return {{true, true, true}, {false, false, false}, {true, false, true}};
}

// Global extents with a remainder in every split dimension, sub-domains of at
// least 3 cells (the node halo above is 3 points deep).
ivec3 global_cells(const ivec3& dims) {
  ivec3 g;
  for (int k = 0; k < 3; ++k) g[k] = 4 * dims[k] + (dims[k] > 1 ? dims[k] - 1 : 1);
  return g;
}

// Whole exchange, then subsets at smaller depths, two epochs each.
std::string run_case(const decomposition& d, const exchange_options& options, bool in_shared) {
  const subdomain sub = subdomain_of_global(d, global_cells(d.dims()));
  case_fields c(d, sub, mixed_fields(), in_shared);
  std::optional<halo_exchange> ex;
  ex.emplace(d, sub, c.fields, options);
  struct call {
    std::vector<int> fields;  // empty: every field
    int depth;
  };
  const std::vector<call> calls{
      {{}, 0}, {{0, 1, 4}, 1}, {{1, 2, 4}, 2}, {{3, 5}, 1}, {{2}, 1}, {{0, 1, 4}, 1},
      {{1, 6}, 1}, {{6, 7}, 2}, {{0, 7}, 1}};
  for (const auto& cl : calls)
    for (int epoch = 0; epoch < 2; ++epoch) {
      c.fill_all(epoch, d.rank());
      if (cl.fields.empty())
        ex->exchange();
      else
        ex->exchange(cl.fields, cl.depth);
      std::string error = c.check_all(d, options.alg, cl.depth, cl.fields, epoch);
      if (!error.empty())
        return fmt::format("{} fields at depth {}: {}",
                           cl.fields.empty() ? "all" : fmt::format("{} of the", cl.fields.size()),
                           cl.depth, error);
    }
  // The repeated subset reused its schedule: whole + seven subsets.
  if (ex->schedules_built() != 8)
    return fmt::format("{} schedules built for 7 distinct subset calls", ex->schedules_built());
  return {};
}

struct transport_param {
  std::string choice;
  bool shared = false;
};

void PrintTo(const transport_param& t, std::ostream* os) {
  *os << t.choice << (t.shared ? " (node-shared fields)" : "");
}

// With node groups (HALOX_RANKS_PER_NODE) the on-node transports, each routed
// with every message transport for the other nodes; without, every transport.
std::vector<transport_param> transport_params() {
  std::vector<transport_param> out;
  const char* groups = std::getenv("HALOX_RANKS_PER_NODE");
  if (groups && *groups && std::string(groups) != "0") {
    for (const transport_entry* local : transport_registry())
      if (local->available() && local->moves_host_memory() &&
          local->reach == transport_reach::same_node) {
        out.push_back({local->name, true});
        for (const transport_entry* remote : transport_registry())
          if (remote->reach == transport_reach::any_peer && remote->available() &&
              remote->name != std::string("mpi-cartex"))
            out.push_back({fmt::format("{}+{}", local->name, remote->name), false});
      }
    return out;
  }
  for (const transport_entry* t : transport_registry()) {
    if (!t->available() || !t->moves_host_memory()) continue;
    if (t->name == std::string("mpi-cartex")) continue;  // refuses mixed fields: tested below
    out.push_back({t->name, false});
    if (t->reach == transport_reach::same_node) out.push_back({t->name, true});
  }
  return out;
}

std::string param_name(const testing::TestParamInfo<std::tuple<transport_param, algorithm>>& info) {
  auto [t, a] = info.param;
  std::string name = t.choice + (t.shared ? "_shared" : "") + "_" + to_string(a);
  for (auto& ch : name)
    if (ch == '-' || ch == '+') ch = '_';
  return name;
}

class StaggeredMatrix
    : public testing::TestWithParam<std::tuple<transport_param, algorithm>> {};

TEST_P(StaggeredMatrix, EveryPointIsExact) {
  auto [transport, alg] = GetParam();
  const bool routed = transport.choice.find('+') != std::string::npos;
  if (reduced() && !routed && transport.choice != "mpi-p2p" && transport.choice != "shm" &&
      transport.choice != "mpi-types")
    GTEST_SKIP() << "oversubscribed: mpi-p2p, mpi-types and shm only";
  exchange_options options{.alg = alg,
                           .grouping = field_grouping::compact,
                           .transport = parse_transport_choice(transport.choice)};
  int cases = 0;
  for (const auto& dims : rank_grids())
    for (const auto& periodic : periodicities()) {
      auto d = make_cart_decomposition(MPI_COMM_WORLD, dims, periodic, false);
      for (field_grouping grouping : {field_grouping::compact, field_grouping::sequence}) {
        if (reduced() && grouping == field_grouping::sequence) continue;
        options.grouping = grouping;
        const std::string agreed =
            agree_on_error(MPI_COMM_WORLD, run_case(d, options, transport.shared));
        ASSERT_TRUE(agreed.empty()) << fmt::format(
            "dims {}x{}x{} periodic {}{}{} {}: {}", d.dims()[0], d.dims()[1], d.dims()[2],
            periodic[0], periodic[1], periodic[2], to_string(grouping), agreed);
        ++cases;
      }
    }
  EXPECT_GT(cases, 0);
}

INSTANTIATE_TEST_SUITE_P(
    AllTransports, StaggeredMatrix,
    testing::Combine(testing::ValuesIn(transport_params()),
                     testing::Values(algorithm::standard, algorithm::staged, algorithm::faces)),
    param_name);

// One exchange, an algorithm per call: a call that asks for faces (or staged)
// leaves what an exchange built with it leaves, and the exchange's own
// algorithm still serves the calls that name none.
TEST(Staggered, AnAlgorithmPerCall) {
  for (const auto& dims : rank_grids())
    for (const auto& periodic : periodicities()) {
      auto d = make_cart_decomposition(MPI_COMM_WORLD, dims, periodic, false);
      const subdomain sub = subdomain_of_global(d, global_cells(d.dims()));
      case_fields c(d, sub, mixed_fields(), false);
      halo_exchange ex(d, sub, c.fields, {.alg = algorithm::standard});
      std::string error;
      int epoch = 0;
      for (algorithm alg : {algorithm::faces, algorithm::staged, algorithm::standard})
        for (const std::vector<int>& moved : {std::vector<int>{0, 1, 4}, std::vector<int>{}}) {
          if (!error.empty()) break;
          c.fill_all(++epoch, d.rank());
          std::vector<int> all(c.fields.size());
          for (size_t f = 0; f < all.size(); ++f) all[f] = static_cast<int>(f);
          ex.exchange(moved.empty() ? all : moved, moved.empty() ? 0 : 1, alg);
          error = c.check_all(d, alg, moved.empty() ? 0 : 1, moved, epoch);
          if (!error.empty()) error = to_string(alg) + ": " + error;
        }
      // The whole exchange as built, faces and staged of all fields, and faces,
      // staged and standard of the subset: 1 + 2 + 3 schedules.
      if (error.empty() && ex.schedules_built() != 6)
        error = fmt::format("{} schedules built, expected 6", ex.schedules_built());
      const std::string agreed = agree_on_error(MPI_COMM_WORLD, error);
      ASSERT_TRUE(agreed.empty()) << agreed;
    }
}

// A kept shared face is never written, whoever owns it: each holder's own
// value stays (the matrix fills it with the owner's, as a code computing it
// alike would, and cannot tell).
TEST(Staggered, KeptSharedFacesKeepEachHoldersValue) {
  for (const auto& dims : rank_grids())
    for (algorithm alg : {algorithm::standard, algorithm::staged}) {
      auto d = make_cart_decomposition(MPI_COMM_WORLD, dims, {true, false, true}, false);
      const subdomain sub = subdomain_of_global(d, global_cells(d.dims()));
      case_fields c(d, sub, mixed_fields(), false);
      halo_exchange ex(d, sub, c.fields, {.alg = alg});
      c.fill_all(0, d.rank());
      // Every held copy of a shared face above, of either kept field: (field, index).
      auto for_each_held_face = [&](auto&& visit) {
        for (size_t i : {size_t{6}, size_t{7}}) {
          const field_geometry& g = c.geometry[i];
          for_each_point(g, [&](const ivec3& p, const ivec3&, bool inside) {
            bool held_face = false;
            for (int k = 0; k < 3; ++k) held_face = held_face || (inside && p[k] == g.points[k]);
            if (held_face) visit(i, g.index(p));
          });
        }
      };
      auto value = [&](size_t i, size_t at) {
        return c.specs[i].type == element_type::f32
                   ? static_cast<double>(reinterpret_cast<float*>(c.memory[i].data())[at])
                   : reinterpret_cast<double*>(c.memory[i].data())[at];
      };
      // Each marked by its holder.
      const double mark = 0.5 + d.rank();
      for_each_held_face([&](size_t i, size_t at) {
        if (c.specs[i].type == element_type::f32)
          reinterpret_cast<float*>(c.memory[i].data())[at] = static_cast<float>(mark);
        else
          reinterpret_cast<double*>(c.memory[i].data())[at] = mark;
      });
      ex.exchange({6, 7}, 1);
      size_t held = 0, kept = 0;
      for_each_held_face([&](size_t i, size_t at) {
        ++held;
        kept += value(i, at) == mark;
      });
      const std::string error =
          kept == held ? std::string{}
                       : fmt::format("rank {}: {} of {} held shared points overwritten", d.rank(),
                                     held - kept, held);
      const std::string agreed = agree_on_error(MPI_COMM_WORLD, error);
      ASSERT_TRUE(agreed.empty()) << to_string(alg) << ": " << agreed;
      // Where a neighbour lies above (y is open), some copy was held.
      int any = held > 0;
      MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      EXPECT_EQ(any, 1);
    }
}

// Cell fields of one halo on an open grid: standard and staged leave the very
// same halos, edges and corners beside the open boundaries untouched.
TEST(Staggered, StandardAndStagedLeaveTheSameHalosOnOpenGrids) {
  for (const auto& dims : rank_grids())
  for (const auto& periodic : periodicities()) {
    auto d = make_cart_decomposition(MPI_COMM_WORLD, dims, periodic, false);
    const subdomain sub = subdomain_of_global(d, global_cells(d.dims()));
    std::vector<std::vector<std::byte>> after;
    for (algorithm alg : {algorithm::standard, algorithm::staged}) {
      case_fields c(d, sub, {{"u", location::cell, element_type::f64, halo_widths::uniform(2)}},
                    false);
      halo_exchange ex(d, sub.extent, c.fields, {.alg = alg});
      c.fill_all(0, d.rank());
      ex.exchange();
      after.push_back(c.memory[0]);
    }
    const int same = after[0] == after[1] ? 1 : 0;
    int all_same = 0;
    MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    EXPECT_EQ(all_same, 1) << "periodic " << periodic[0] << periodic[1] << periodic[2];
  }
}

// The automatic choice on mixed fields: it measures among candidates that
// leave identical halos, and what it picks fills every point as specified.
TEST(Staggered, AutomaticChoiceOnMixedFields) {
  if (reduced()) GTEST_SKIP() << "measures many candidates: up to 2 ranks";
  auto d = make_cart_decomposition(MPI_COMM_WORLD, rank_grids().back(), {true, false, true}, false);
  exchange_options options{.auto_transport = true, .auto_algorithm = true};
  EXPECT_EQ(agree_on_error(MPI_COMM_WORLD, run_case(d, options, false)), "");
}

// A code that numbers its ranks x fastest, handing halox sub-domains computed
// that way: refused on a z-fastest decomposition, exact once adopted.
TEST(Staggered, CodeRankOrderIsHonouredOrRefused) {
  if (world_size() != 4) GTEST_SKIP() << "a 1x2x2 grid takes 4 ranks";
  const ivec3 dims{1, 2, 2};
  const std::array<bool, 3> periodic{false, false, false};
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // The code's own x-fastest numbering and its sub-domain.
  const ivec3 code_coords = coords_of(rank, dims, rank_order::parse("XYZ"));
  subdomain mine;
  mine.global = {6, 8, 8};
  for (int k = 0; k < 3; ++k) {
    auto [offset, extent] = split_extent(mine.global[k], dims[k], code_coords[k]);
    mine.offset[k] = offset;
    mine.extent[k] = extent;
  }
  auto run = [&](const decomposition& d) {
    case_fields c(d, mine, mixed_fields(), false);
    halo_exchange ex(d, mine, c.fields, {.alg = algorithm::staged});
    c.fill_all(0, d.rank());
    ex.exchange();
    return agree_on_error(MPI_COMM_WORLD, c.check_all(d, algorithm::staged, 0, {}, 0));
  };
  auto refused = [&](auto&& make, const char* what) {
    try {
      make();
      ADD_FAILURE() << what << ": a sub-domain layout in another rank order was accepted";
    } catch (const usage_error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("numbered ZYX"), std::string::npos) << what << ": " << message;
      EXPECT_NE(message.find("rank_order::parse(\"XYZ\"), mine)"), std::string::npos)
          << what << ": " << message;
    }
  };
  // halox's own numbering (z fastest) would swap the y and z neighbours: refused when adopted
  // in that order, and by an exchange handed the sub-domain on halox's own grid.
  refused([&] { adopt_decomposition(MPI_COMM_WORLD, dims, periodic, rank_order::mpi_cart(), mine); },
          "adopted z fastest");
  auto cart = make_cart_decomposition(MPI_COMM_WORLD, dims, periodic, false);
  refused([&] { run(cart); }, "halox's own grid");
  // Adopted in the code's order, by name and from the code's coordinates.
  EXPECT_EQ(run(adopt_decomposition(MPI_COMM_WORLD, dims, periodic, rank_order::parse("XYZ"), mine)),
            "");
  auto from_coords = adopt_decomposition(MPI_COMM_WORLD, dims, periodic, code_coords, mine);
  EXPECT_EQ(from_coords.order().name(), "XYZ");
  EXPECT_EQ(run(from_coords), "");
}

// Seeded random configurations: field counts, locations, types, per-side halos
// (up to the smallest sub-domain), periodicity, algorithm, transport, subsets
// and depths drawn at random; every point checked. HALOX_RANDOM_SEED and
// HALOX_RANDOM_DRAWS widen the search.
TEST(Staggered, RandomConfigurations) {
  const char* seed_text = std::getenv("HALOX_RANDOM_SEED");
  const char* draws_text = std::getenv("HALOX_RANDOM_DRAWS");
  const unsigned seed = seed_text ? static_cast<unsigned>(std::stoul(seed_text)) : 20261128u;
  const int draws = draws_text ? std::stoi(draws_text) : (reduced() ? 4 : 12);
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<std::string> transports;
  for (const auto& t : transport_params())
    if (!t.shared) transports.push_back(t.choice);
  for (int draw = 0; draw < draws; ++draw) {
    // Every rank draws the same (same seed, same calls).
    std::array<bool, 3> periodic{pick(0, 1) == 1, pick(0, 1) == 1, pick(0, 1) == 1};
    const auto grids = rank_grids();
    auto d = make_cart_decomposition(MPI_COMM_WORLD, grids[static_cast<size_t>(pick(0, static_cast<int>(grids.size()) - 1))], periodic, false);
    ivec3 global;
    for (int k = 0; k < 3; ++k) global[k] = d.dims()[k] * pick(2, 5) + pick(0, d.dims()[k] - 1);
    const subdomain sub = subdomain_of_global(d, global);
    int smallest = 1 << 30;
    for (int k = 0; k < 3; ++k) smallest = std::min(smallest, global[k] / d.dims()[k]);
    std::vector<field_spec> specs;
    const int nfields = pick(1, 5);
    for (int f = 0; f < nfields; ++f) {
      const location at = all_locations[pick(0, 7)];
      const ivec3 st = staggered(at);
      halo_widths h;
      for (int k = 0; k < 3; ++k) {
        h.lo[k] = pick(0, std::min(smallest, 3));
        h.hi[k] = pick(0, std::min(smallest, 3 + st[k]) );
        h.hi[k] = std::min(h.hi[k], smallest);  // a neighbour holds at least `smallest` points
      }
      specs.push_back({fmt::format("f{}", f), at, pick(0, 1) ? element_type::f32 : element_type::f64, h});
    }
    const algorithm alg = all_algorithms[pick(0, 2)];
    const std::string transport = transports[static_cast<size_t>(pick(0, static_cast<int>(transports.size()) - 1))];
    std::vector<int> subset;
    for (int f = 0; f < nfields; ++f)
      if (pick(0, 1)) subset.push_back(f);
    if (subset.empty()) subset.push_back(pick(0, nfields - 1));
    // A depth every field of the subset reaches (each field's deepest side, in cells).
    int deepest = 1 << 30;
    for (int f : subset) {
      const field_spec& fs = specs[static_cast<size_t>(f)];
      int own = 0;
      for (int k = 0; k < 3; ++k)
        own = std::max({own, fs.halo.lo[k], fs.halo.hi[k] - staggered(fs.at)[k]});
      deepest = std::min(deepest, own);
    }
    const int depth = deepest > 0 ? pick(1, deepest) : 0;
    const std::string what = fmt::format(
        "draw {} (seed {}): {} on {}x{}x{} periodic {}{}{} global {}x{}x{}, {} fields, subset of {} at depth {}",
        draw, seed, transport, d.dims()[0], d.dims()[1], d.dims()[2], periodic[0], periodic[1],
        periodic[2], global[0], global[1], global[2], nfields, subset.size(), depth);
    case_fields c(d, sub, specs, false);
    std::string error;
    try {
      halo_exchange ex(d, sub.extent, c.fields,
                       {.alg = alg, .transport = parse_transport_choice(transport)});
      c.fill_all(0, d.rank());
      ex.exchange();
      error = c.check_all(d, alg, 0, {}, 0);
      if (error.empty()) {
        c.fill_all(1, d.rank());
        ex.exchange(subset, depth);
        error = c.check_all(d, alg, depth, subset, 1);
      }
    } catch (const usage_error& e) {
      error = std::string("refused: ") + e.what();
    }
    const std::string agreed = agree_on_error(MPI_COMM_WORLD, error);
    ASSERT_EQ(agreed, "") << what;
  }
}

// Bad input: one clear error on every rank, before anything moves.
TEST(Staggered, BadInputIsRefusedOnEveryRank) {
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  const subdomain sub = subdomain_of_global(d, global_cells(d.dims()));
  case_fields c(d, sub, mixed_fields(), false);
  halo_exchange ex(d, sub.extent, c.fields);
  auto refused = [&](auto&& call, const std::string& words) {
    try {
      call();
      return std::string("accepted");
    } catch (const usage_error& e) {
      const std::string what = e.what();
      return what.find(words) != std::string::npos ? std::string{} : what;
    }
  };
  EXPECT_EQ(refused([&] { ex.exchange({"density", "pressure"}, 1); }, "no field named 'pressure'"), "");
  EXPECT_EQ(refused([&] { ex.exchange({0, 9}, 1); }, "field index 9"), "");
  EXPECT_EQ(refused([&] { ex.exchange({0, 0}, 1); }, "named twice"), "");
  EXPECT_EQ(refused([&] { ex.exchange({"tracer"}, 2); }, "deeper than the halo of field 'tracer'"), "");
  EXPECT_EQ(refused([&] { ex.exchange({0}, -1); }, "negative"), "");
  // The exchange still works after refused calls.
  c.fill_all(0, d.rank());
  ex.exchange({"density"}, 2);
  EXPECT_EQ(agree_on_error(MPI_COMM_WORLD, c.check_all(d, algorithm::standard, 2, {0}, 0)), "");
  // Two fields of one name, a shape wider than its neighbour, cartex's replica.
  auto twice = mixed_fields();
  twice[1].name = "density";
  case_fields t(d, sub, twice, false);
  EXPECT_EQ(refused([&] { halo_exchange bad(d, sub.extent, t.fields); }, "two fields are named"), "");
  auto deep = mixed_fields();
  deep[0].halo = halo_widths::uniform(40);
  case_fields w(d, sub, deep, false);
  EXPECT_EQ(refused([&] { halo_exchange bad(d, sub.extent, w.fields); }, "wider than"), "");
  // A kept shared face needs a halo above to be held in.
  auto no_room = mixed_fields();
  no_room[6].halo = {{2, 2, 2}, {0, 3, 3}};
  no_room[6].cloverleaf = false;
  case_fields k(d, sub, no_room, false);
  EXPECT_EQ(refused([&] { halo_exchange bad(d, sub.extent, k.fields); },
                    "field 'yvel_kept' keeps its shared points (shared_points::kept) but has no "
                    "halo above in x"),
            "");
  // Ranks that keep a field's shared points and ranks that do not.
  if (world_size() > 1) {
    auto half = mixed_fields();
    if (d.rank() == 0) half[6].shared = shared_points::from_owner;
    case_fields h(d, sub, half, false);
    EXPECT_EQ(refused([&] { halo_exchange bad(d, sub.extent, h.fields); }, "ranks disagree"), "");
  }
  // A halo that differs between ranks on a side where both have a neighbour.
  if (world_size() > 1) {
    auto differ = mixed_fields();
    if (d.rank() == 0) differ[0].halo = halo_widths::uniform(1);
    case_fields u(d, sub, differ, false);
    EXPECT_EQ(refused([&] { halo_exchange bad(d, sub.extent, u.fields); },
                      "ranks disagree on the halo of field 'density'"),
              "");
  }
  EXPECT_EQ(refused(
                [&] {
                  halo_exchange bad(d, sub.extent, c.fields,
                                    {.transport = parse_transport_choice("mpi-cartex")});
                },
                "cartex"),
            "");
}

}  // namespace
