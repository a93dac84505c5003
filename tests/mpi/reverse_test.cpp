// Reverse calls verified point by point: every holder's copy of a point
// combined into its owner (sum, min, max), or into every holder, for fields of
// every location at every depth and subset, open, periodic and mixed grids,
// 1..8 ranks (dimensions of 1 and 2 ranks, where a rank is its own neighbour
// or the same neighbour on both sides), halos as wide as the sub-domain.
//
// The checker is independent of the library: it enumerates, for every rank
// of the grid, every point that rank holds at the call's depth (from the
// conventions of halox/field.hpp as written there), maps it to its global
// point, and adds up (or takes the min or max of) the copies' values. The
// values are small integers, so every sum is exact whatever its order; the
// order itself is checked by bitwise identity across transports, algorithms
// and groupings on values whose sums round.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "halox/common/error.hpp"
#include "halox/exchange.hpp"
#include "halox/field_memory.hpp"
#include "test_world.hpp"

using namespace halox;
using halox::testing_support::staggered;
using halox::testing_support::world_size;

namespace {

bool reduced() { return world_size() > 2; }

struct field_spec {
  std::string name;
  location at;
  element_type type;
  halo_widths halo;
};

// Every location, floats and doubles, LULESH's node halo (0 below, 1 above)
// and halos of their own per side.
std::vector<field_spec> every_location() {
  return {{"rho", location::cell, element_type::f64, halo_widths::uniform(2)},
          {"fx", location::vertex, element_type::f64, {{0, 0, 0}, {1, 1, 1}}},
          {"xvel", location::vertex, element_type::f32, {{2, 2, 2}, {3, 3, 3}}},
          {"flux_x", location::x_face, element_type::f32, {{1, 2, 1}, {2, 1, 2}}},
          {"flux_y", location::y_face, element_type::f64, {{1, 1, 1}, {1, 2, 1}}},
          {"flux_z", location::z_face, element_type::f64, halo_widths::uniform(1)},
          {"ex", location::x_edge, element_type::f32, {{1, 1, 1}, {1, 2, 2}}},
          {"ey", location::y_edge, element_type::f64, {{1, 1, 1}, {2, 1, 2}}},
          {"ez", location::z_edge, element_type::f32, {{1, 1, 0}, {2, 2, 0}}}};
}

// One field on one rank (any rank of the grid, not only this one).
struct geometry {
  ivec3 points{}, offset{}, global_points{}, lo{}, hi{};
  size_t count() const {
    size_t n = 1;
    for (int k = 0; k < 3; ++k) n *= static_cast<size_t>(lo[k] + points[k] + hi[k]);
    return n;
  }
  size_t index(const ivec3& p) const {
    size_t i = 0;
    for (int k = 2; k >= 0; --k)
      i = i * static_cast<size_t>(lo[k] + points[k] + hi[k]) + static_cast<size_t>(p[k] + lo[k]);
    return i;
  }
};

geometry geometry_of(const decomposition& d, const ivec3& global, const ivec3& coords,
                     const field_spec& f) {
  geometry g;
  const ivec3 s = staggered(f.at);
  for (int k = 0; k < 3; ++k) {
    const bool open_staggered = s[k] && !d.periodic()[k];
    const auto [offset, size] = split_extent(global[k], d.dims()[k], coords[k]);
    g.global_points[k] = global[k] + (open_staggered ? 1 : 0);
    g.offset[k] = offset;
    g.points[k] = size + (open_staggered && coords[k] == d.dims()[k] - 1 ? 1 : 0);
    g.lo[k] = f.halo.lo[k];
    g.hi[k] = f.halo.hi[k];
  }
  return g;
}

// The global point a rank's local point p stands for, if any: inside the
// points a call at `depth` fills or owns, and not beyond an open boundary.
bool held_point(const geometry& g, const field_spec& f, const decomposition& d, int depth,
                const ivec3& p, ivec3& global) {
  const ivec3 s = staggered(f.at);
  for (int k = 0; k < 3; ++k) {
    const int lo = depth > 0 ? std::min(f.halo.lo[k], depth) : f.halo.lo[k];
    const int hi = depth > 0 ? std::min(f.halo.hi[k], depth + s[k]) : f.halo.hi[k];
    if (p[k] < -lo || p[k] >= g.points[k] + hi) return false;
    int gk = g.offset[k] + p[k];
    if (gk < 0 || gk >= g.global_points[k]) {
      if (!d.periodic()[k]) return false;
      gk = (gk + g.global_points[k]) % g.global_points[k];
    }
    global[k] = gk;
  }
  return true;
}

template <class Visit>
void for_each_allocated(const geometry& g, Visit&& visit) {
  for (int z = -g.lo[2]; z < g.points[2] + g.hi[2]; ++z)
    for (int y = -g.lo[1]; y < g.points[1] + g.hi[1]; ++y)
      for (int x = -g.lo[0]; x < g.points[0] + g.hi[0]; ++x) visit(ivec3{x, y, z});
}

bool owned(const geometry& g, const ivec3& p) {
  for (int k = 0; k < 3; ++k)
    if (p[k] < 0 || p[k] >= g.points[k]) return false;
  return true;
}

// The copy a rank holds at a local point before the call: a small integer
// from the rank, the point and the field (so sums are exact in float), or a
// value with a fractional part whose sums round (for the order checks).
double contribution(int rank, const ivec3& p, int field, int epoch, bool rounding) {
  const int v = 1 + (((rank * 7919 + (p[0] + 8) * 31 + (p[1] + 8) * 17 + (p[2] + 8) * 13 +
                       field * 5 + epoch * 3) %
                      50) +
                     50) %
                        50;
  return rounding ? v * 0.1 + 1.0 / (3.0 + rank + p[0] * 0.7) : v;
}

double combined(reduction op, double a, double b) {
  switch (op) {
    case reduction::sum: return a + b;
    case reduction::min: return std::min(a, b);
    case reduction::max: return std::max(a, b);
  }
  return a;
}

struct case_fields {
  const decomposition& d;
  ivec3 global;
  std::vector<field_spec> specs;
  std::vector<geometry> mine;
  std::vector<std::vector<std::byte>> memory;
  std::optional<shared_field_memory> shared;
  std::vector<field> fields;
  std::vector<std::vector<std::byte>> old;  // memory the fields left

  case_fields(const decomposition& dec, const ivec3& global_cells, std::vector<field_spec> s,
              bool in_shared)
      : d(dec), global(global_cells), specs(std::move(s)) {
    size_t largest = 0;
    for (const auto& f : specs) {
      mine.push_back(geometry_of(d, global, d.coords(), f));
      memory.emplace_back(mine.back().count() * element_size(f.type));
      largest = std::max(largest, memory.back().size());
    }
    MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_UNSIGNED_LONG, MPI_MAX, d.comm());
    if (in_shared) shared.emplace(d, largest, static_cast<int>(specs.size()));
    for (size_t i = 0; i < specs.size(); ++i)
      fields.push_back({shared ? shared->field(static_cast<int>(i)) : memory[i].data(),
                        specs[i].type, specs[i].at, specs[i].halo, specs[i].name});
  }

  template <class T>
  T* data(size_t i) {
    return reinterpret_cast<T*>(shared ? static_cast<std::byte*>(shared->field(static_cast<int>(i)))
                                       : memory[i].data());
  }

  void fill(int epoch, bool rounding) {
    for (size_t i = 0; i < specs.size(); ++i)
      for_each_allocated(mine[i], [&](const ivec3& p) {
        const double v = contribution(d.rank(), p, static_cast<int>(i), epoch, rounding);
        if (specs[i].type == element_type::f32)
          data<float>(i)[mine[i].index(p)] = static_cast<float>(v);
        else
          data<double>(i)[mine[i].index(p)] = v;
      });
  }

  double value(size_t i, const ivec3& p) {
    return specs[i].type == element_type::f32
               ? static_cast<double>(data<float>(i)[mine[i].index(p)])
               : data<double>(i)[mine[i].index(p)];
  }

  // Every field's bytes, for bitwise comparisons.
  std::vector<std::byte> bytes() {
    std::vector<std::byte> out;
    for (size_t i = 0; i < specs.size(); ++i) {
      const auto* b = specs[i].type == element_type::f32
                          ? reinterpret_cast<const std::byte*>(data<float>(i))
                          : reinterpret_cast<const std::byte*>(data<double>(i));
      out.insert(out.end(), b, b + memory[i].size());
    }
    return out;
  }

  // The combined value of every global point of field i, from every rank's copies.
  std::map<std::array<int, 3>, double> totals(size_t i, int depth, reduction op, int epoch) {
    std::map<std::array<int, 3>, double> total;
    for (int r = 0; r < d.size(); ++r) {
      const geometry g = geometry_of(d, global, coords_of(r, d.dims(), d.order()), specs[i]);
      for_each_allocated(g, [&](const ivec3& p) {
        ivec3 at{};
        if (!held_point(g, specs[i], d, depth, p, at)) return;
        double v = contribution(r, p, static_cast<int>(i), epoch, false);
        if (specs[i].type == element_type::f32) v = static_cast<float>(v);
        auto [it, fresh] = total.try_emplace(at, v);
        if (!fresh) it->second = combined(op, it->second, v);
      });
    }
    return total;
  }

  // After a call: owned points hold their totals; held halo points their
  // total (every holder) or their own copy (owner); the rest is untouched.
  // only_moved: the other fields moved otherwise (a forward call), unchecked.
  std::string check(const std::vector<int>& moved, int depth, reduction op, reverse_to to,
                    int epoch, bool only_moved = false) {
    for (size_t i = 0; i < specs.size(); ++i) {
      const bool is_moved = std::ranges::find(moved, static_cast<int>(i)) != moved.end();
      if (only_moved && !is_moved) continue;
      std::map<std::array<int, 3>, double> total;
      if (is_moved) total = totals(i, depth, op, epoch);
      size_t wrong = 0;
      std::string first;
      for_each_allocated(mine[i], [&](const ivec3& p) {
        double expected = contribution(d.rank(), p, static_cast<int>(i), epoch, false);
        if (specs[i].type == element_type::f32) expected = static_cast<float>(expected);
        ivec3 at{};
        if (is_moved && held_point(mine[i], specs[i], d, depth, p, at) &&
            (owned(mine[i], p) || to == reverse_to::every_holder))
          expected = total.at(at);
        const double found = value(i, p);
        if (found != expected && wrong++ == 0)
          first = fmt::format("rank {} field '{}' ({}) point ({},{},{}): expected {}, found {}",
                              d.rank(), specs[i].name, to_string(specs[i].at), p[0], p[1], p[2],
                              expected, found);
      });
      if (wrong) return fmt::format("{} wrong points, first: {}", wrong, first);
    }
    return {};
  }
};

std::vector<ivec3> rank_grids() {
  switch (world_size()) {
    case 1: return {{1, 1, 1}};
    case 2: return {{2, 1, 1}, {1, 1, 2}};
    case 3: return {{1, 3, 1}};
    case 4: return {{2, 2, 1}, {1, 2, 2}};
    case 8: return {{2, 2, 2}};
    default: return {{0, 0, 0}};
  }
}

std::vector<std::array<bool, 3>> periodicities() {
  if (reduced()) return {{true, true, true}, {false, true, false}};
  return {{true, true, true}, {false, false, false}, {true, false, true}};
}

// Uneven sub-domains of 4 and 5 cells (the node halo above is 3 deep).
ivec3 global_cells(const ivec3& dims) {
  ivec3 g;
  for (int k = 0; k < 3; ++k) g[k] = 4 * dims[k] + (dims[k] > 1 ? dims[k] - 1 : 1);
  return g;
}

struct call {
  std::vector<int> fields;  // empty: every field, whole halo
  int depth;
  reduction op;
  reverse_to to;
};

std::vector<call> calls() {
  std::vector<call> out{{{}, 0, reduction::sum, reverse_to::owner},
                        {{}, 0, reduction::sum, reverse_to::every_holder},
                        {{0, 2, 3}, 1, reduction::min, reverse_to::owner},
                        {{2, 4, 6}, 1, reduction::max, reverse_to::every_holder}};
  if (reduced()) return out;
  out.push_back({{2, 3}, 2, reduction::sum, reverse_to::owner});
  out.push_back({{0, 2, 3}, 2, reduction::sum, reverse_to::every_holder});
  out.push_back({{4, 5, 6, 7, 8}, 1, reduction::sum, reverse_to::owner});
  out.push_back({{0, 2, 3, 4, 5, 6, 7, 8}, 1, reduction::max, reverse_to::owner});
  out.push_back({{3, 7}, 0, reduction::min, reverse_to::every_holder});
  return out;
}

std::string run_case(const decomposition& d, const exchange_options& options, bool in_shared) {
  case_fields c(d, global_cells(d.dims()), every_location(), in_shared);
  std::optional<halo_exchange> ex;
  ex.emplace(d, c.mine[0].points, c.fields, options);
  std::vector<int> all(c.specs.size());
  for (size_t f = 0; f < all.size(); ++f) all[f] = static_cast<int>(f);
  int epoch = 0;
  for (const auto& cl : calls()) {
    c.fill(++epoch, false);
    if (cl.fields.empty())
      ex->reverse(cl.op, cl.to);
    else
      ex->reverse(cl.op, cl.fields, cl.depth, cl.to);
    const std::string error = c.check(cl.fields.empty() ? all : cl.fields, cl.depth, cl.op,
                                      cl.to, epoch);
    if (!error.empty())
      return fmt::format("{} {} of {} field(s) at depth {}: {}", to_string(cl.op),
                         cl.to == reverse_to::owner ? "into the owner" : "on every holder",
                         cl.fields.empty() ? all.size() : cl.fields.size(), cl.depth, error);
  }
  return {};
}

std::string dims_text(const decomposition& d, const std::array<bool, 3>& periodic) {
  return fmt::format("dims {}x{}x{} periodic {}{}{}", d.dims()[0], d.dims()[1], d.dims()[2],
                     periodic[0], periodic[1], periodic[2]);
}

struct variant {
  std::string transport;
  algorithm alg;
  field_grouping grouping;
  bool shared;
};

TEST(Reverse, EveryPointOfEveryLocationIsExact) {
  // The reverse path is the same whatever carries the forward exchange; the
  // variants check that nothing of the forward choice leaks into it.
  std::vector<variant> variants{{"mpi-p2p", algorithm::standard, field_grouping::cache, false},
                                {"shm", algorithm::staged, field_grouping::compact, true}};
  if (!reduced())
    variants.push_back({"mpi-types", algorithm::faces, field_grouping::sequence, false});
  int cases = 0;
  for (const auto& dims : rank_grids())
    for (const auto& periodic : periodicities()) {
      auto d = make_cart_decomposition(MPI_COMM_WORLD, dims, periodic, false);
      for (const auto& v : variants) {
        const exchange_options options{
            .alg = v.alg, .grouping = v.grouping, .transport = parse_transport_choice(v.transport)};
        const std::string agreed = agree_on_error(MPI_COMM_WORLD, run_case(d, options, v.shared));
        ASSERT_TRUE(agreed.empty()) << dims_text(d, periodic) << " " << v.transport << ": "
                                    << agreed;
        ++cases;
      }
    }
  EXPECT_GT(cases, 0);
}

// Halos as deep as the sub-domain: a point held on both sides of its owner
// (every holder then takes two rounds along that axis), a rank its own
// neighbour on both sides, and the same neighbour below and above.
TEST(Reverse, HalosAsWideAsTheSubdomain) {
  const std::vector<field_spec> wide{
      {"c", location::cell, element_type::f64, halo_widths::uniform(3)},
      {"n", location::vertex, element_type::f32, {{3, 3, 3}, {3, 3, 3}}}};
  for (const auto& dims : rank_grids())
    for (const auto& periodic : periodicities()) {
      auto d = make_cart_decomposition(MPI_COMM_WORLD, dims, periodic, false);
      const ivec3 global{3 * d.dims()[0], 3 * d.dims()[1], 3 * d.dims()[2]};
      case_fields c(d, global, wide, false);
      halo_exchange ex(d, c.mine[0].points, c.fields);
      std::string error;
      int epoch = 0;
      for (reverse_to to : {reverse_to::owner, reverse_to::every_holder})
        for (reduction op : all_reductions) {
          if (!error.empty()) break;
          c.fill(++epoch, false);
          ex.reverse(op, to);
          error = c.check({0, 1}, 0, op, to, epoch);
          if (!error.empty()) error = fmt::format("{}: {}", to_string(op), error);
        }
      const std::string agreed = agree_on_error(MPI_COMM_WORLD, error);
      ASSERT_TRUE(agreed.empty()) << dims_text(d, periodic) << ": " << agreed;
    }
}

// Values whose sums round: the very same bits whatever the transport,
// algorithm, grouping or block size, from call to call, and every holder's
// total equals a reverse call followed by a forward one.
TEST(Reverse, TheSameBitsWhateverCarriesTheExchange) {
  std::vector<exchange_options> choices{
      {.alg = algorithm::standard, .grouping = field_grouping::cache},
      {.alg = algorithm::staged,
       .grouping = field_grouping::sequence,
       .transport = parse_transport_choice("shm")},
      {.alg = algorithm::faces,
       .grouping = field_grouping::compact,
       .transport = parse_transport_choice("mpi-neighbor")},
      {.alg = algorithm::standard,
       .grouping = field_grouping::compact,
       .transport = parse_transport_choice("cma+mpi-types"),
       .fields_per_block = 1}};
  for (const auto& dims : rank_grids())
    for (const auto& periodic : periodicities()) {
      auto d = make_cart_decomposition(MPI_COMM_WORLD, dims, periodic, false);
      std::string error;
      std::vector<std::byte> first_owner, first_every;
      for (const auto& options : choices) {
        case_fields c(d, global_cells(d.dims()), every_location(), false);
        halo_exchange ex(d, c.mine[0].points, c.fields, options);
        c.fill(1, true);
        ex.reverse(reduction::sum);
        const std::vector<std::byte> owner = c.bytes();
        ex.exchange();  // the owners' totals to every holder
        const std::vector<std::byte> then_forward = c.bytes();
        c.fill(1, true);
        ex.reverse(reduction::sum, reverse_to::every_holder);
        const std::vector<std::byte> every = c.bytes();
        c.fill(1, true);
        ex.reverse(reduction::sum, reverse_to::every_holder);
        if (every != c.bytes() && error.empty()) error = "two calls differ";
        // A faces exchange fills no edges or corners: its forward call copies back less.
        if (options.alg != algorithm::faces && every != then_forward && error.empty())
          error = fmt::format("{}: every holder's totals differ from a reverse then a forward call",
                              ex.transport_name());
        if (first_owner.empty()) {
          first_owner = owner;
          first_every = every;
        } else if ((owner != first_owner || every != first_every) && error.empty()) {
          error = fmt::format("{} {} gives other bits than the first choice", ex.transport_name(),
                              to_string(options.alg));
        }
      }
      const std::string agreed = agree_on_error(MPI_COMM_WORLD, error);
      ASSERT_TRUE(agreed.empty()) << dims_text(d, periodic) << ": " << agreed;
    }
}

// Split phase: reverse and forward calls of two exchanges interleaved (and a
// reverse of some fields beside a forward of others on one exchange) do not
// wait on each other.
TEST(Reverse, InterleavedWithForwardCalls) {
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  case_fields a(d, global_cells(d.dims()), every_location(), false);
  case_fields b(d, global_cells(d.dims()), every_location(), false);
  halo_exchange ea(d, a.mine[0].points, a.fields);
  halo_exchange eb(d, b.mine[0].points, b.fields, {.alg = algorithm::staged});
  a.fill(2, false);
  b.fill(3, false);
  ea.start_reverse(reduction::sum, {"rho", "fx"});
  eb.start_reverse(reduction::max, reverse_to::every_holder);
  ea.start({"xvel"}, 1);  // other fields of the same exchange: allowed
  ea.wait();
  ea.wait_reverse();
  eb.wait_reverse();
  std::string error = a.check({0, 1}, 0, reduction::sum, reverse_to::owner, 2, true);
  std::vector<int> all(b.specs.size());
  for (size_t f = 0; f < all.size(); ++f) all[f] = static_cast<int>(f);
  if (error.empty()) error = b.check(all, 0, reduction::max, reverse_to::every_holder, 3);
  const std::string agreed = agree_on_error(MPI_COMM_WORLD, error);
  EXPECT_TRUE(agreed.empty()) << agreed;
}

// Bad calls fail on the calling rank before anything moves, naming the call.
TEST(Reverse, BadCallsAreRefusedBeforeAnythingMoves) {
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  case_fields c(d, global_cells(d.dims()), every_location(), false);
  halo_exchange ex(d, c.mine[0].points, c.fields);
  auto message_of = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const usage_error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message_of([&] { ex.reverse(reduction::sum, {"rho", "nope"}); })
                .find("no field named 'nope'"),
            std::string::npos);
  EXPECT_NE(message_of([&] { ex.reverse(reduction::sum, {0}, 3); }).find("depth 3 is deeper"),
            std::string::npos);
  EXPECT_NE(message_of([&] { ex.reverse(reduction::sum, std::vector<int>{}); })
                .find("halo_exchange::start_reverse: a subset call names no field"),
            std::string::npos);
  EXPECT_NE(message_of([&] { ex.reverse(reduction::min, {99}); }).find("field index 99"),
            std::string::npos);
  EXPECT_THROW(parse_reduction("prod"), usage_error);
  // A reverse call of fields a forward call has in flight, and the other way round.
  ex.start({"rho", "xvel"}, 1);
  EXPECT_NE(message_of([&] { ex.start_reverse(reduction::sum, {"xvel"}); })
                .find("field 'xvel' is in a forward exchange still in flight"),
            std::string::npos);
  ex.wait();
  ex.start_reverse(reduction::sum, {"rho"});
  EXPECT_NE(message_of([&] { ex.start(); }).find("field 'rho' is in a reverse call"),
            std::string::npos);
  EXPECT_THROW(ex.start_reverse(reduction::sum, {"fx"}), std::logic_error);
  ex.wait_reverse();
  EXPECT_THROW(ex.wait_reverse(), std::logic_error);
  // The same checks hold for calls made before (found among the latest calls, not checked anew).
  ex.reverse(reduction::sum, {"xvel"});
  ex.exchange({"rho", "xvel"}, 1);
  ex.start({"rho", "xvel"}, 1);
  EXPECT_NE(message_of([&] { ex.start_reverse(reduction::sum, {"xvel"}); })
                .find("field 'xvel' is in a forward exchange still in flight"),
            std::string::npos);
  ex.wait();
  ex.start_reverse(reduction::sum, {"xvel"});
  EXPECT_NE(message_of([&] { ex.start({"rho", "xvel"}, 1); })
                .find("field 'xvel' is in a reverse call"),
            std::string::npos);
  ex.wait_reverse();
  // Nothing was left in flight: a whole call still verifies.
  c.fill(5, false);
  ex.reverse(reduction::sum);
  std::vector<int> all(c.specs.size());
  for (size_t f = 0; f < all.size(); ++f) all[f] = static_cast<int>(f);
  const std::string agreed =
      agree_on_error(MPI_COMM_WORLD, c.check(all, 0, reduction::sum, reverse_to::owner, 5));
  EXPECT_TRUE(agreed.empty()) << agreed;
}

// A code that allocates its arrays anew (LULESH, every cycle): the calls after
// set_field_data use the new memory, forward and reverse, and leave the old alone.
TEST(Reverse, FieldsThatMoveBetweenCalls) {
  for (const char* transport : {"mpi-p2p", "shm"}) {
    auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, false, true}, false);
    case_fields c(d, global_cells(d.dims()), every_location(), false);
    halo_exchange ex(d, c.mine[0].points, c.fields,
                     {.transport = parse_transport_choice(transport)});
    std::vector<int> all(c.specs.size());
    for (size_t f = 0; f < all.size(); ++f) all[f] = static_cast<int>(f);
    std::string error;
    for (int cycle = 1; cycle <= 3 && error.empty(); ++cycle) {
      c.fill(cycle, false);
      ex.reverse(reduction::sum, reverse_to::every_holder);
      error = c.check(all, 0, reduction::sum, reverse_to::every_holder, cycle);
      // Into the owners, then forward: the same as every holder's totals (a
      // forward call still reading the old memory would leave the contributions).
      const std::vector<std::byte> every = c.bytes();
      c.fill(cycle, false);
      ex.reverse(reduction::sum);
      ex.exchange();
      if (error.empty() && c.bytes() != every) error = "reverse then forward differs";
      // Fields 0, 1 and 5 move; their old memory is poisoned.
      for (size_t f : {0u, 1u, 5u}) {
        std::vector<std::byte> fresh = c.memory[f];
        c.memory[f].swap(fresh);
        std::fill(fresh.begin(), fresh.end(), std::byte{0xff});
        ex.set_field_data(static_cast<int>(f), c.memory[f].data());
        c.old.push_back(std::move(fresh));  // still allocated: a stale read finds NaNs
      }
      if (!error.empty()) error = fmt::format("{} cycle {}: {}", transport, cycle, error);
    }
    EXPECT_THROW(ex.set_field_data(0, nullptr), usage_error);
    EXPECT_THROW(ex.set_field_data(42, c.memory[0].data()), usage_error);
    const std::string agreed = agree_on_error(MPI_COMM_WORLD, error);
    ASSERT_TRUE(agreed.empty()) << agreed;
  }
}

// Seeded random configurations, as the forward exchange's (staggered_test.cpp):
// grids, boundaries, field counts, locations, types, per-side halos up to the
// sub-domain, subsets, depths, operations, targets, transports and algorithms
// drawn; every point checked. HALOX_RANDOM_SEED and HALOX_RANDOM_DRAWS replay
// or widen a run.
TEST(Reverse, RandomConfigurations) {
  const char* seed_text = std::getenv("HALOX_RANDOM_SEED");
  const char* draws_text = std::getenv("HALOX_RANDOM_DRAWS");
  const unsigned seed = seed_text ? static_cast<unsigned>(std::stoul(seed_text)) : 20261202u;
  const int draws = draws_text ? std::stoi(draws_text) : (reduced() ? 4 : 10);
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::vector<std::string> transports{"mpi-p2p", "shm", "cma+mpi-types", "mpi-neighbor"};
  for (int draw = 0; draw < draws; ++draw) {
    // Every rank draws the same (same seed, same calls).
    std::array<bool, 3> periodic{pick(0, 1) == 1, pick(0, 1) == 1, pick(0, 1) == 1};
    const auto grids = rank_grids();
    auto d = make_cart_decomposition(
        MPI_COMM_WORLD, grids[static_cast<size_t>(pick(0, static_cast<int>(grids.size()) - 1))],
        periodic, false);
    ivec3 global;
    for (int k = 0; k < 3; ++k) global[k] = d.dims()[k] * pick(2, 5) + pick(0, d.dims()[k] - 1);
    int smallest = 1 << 30;
    for (int k = 0; k < 3; ++k) smallest = std::min(smallest, global[k] / d.dims()[k]);
    std::vector<field_spec> specs;
    const int nfields = pick(1, 5);
    for (int f = 0; f < nfields; ++f) {
      const location at = all_locations[pick(0, 7)];
      halo_widths h;
      for (int k = 0; k < 3; ++k) {
        h.lo[k] = pick(0, std::min(smallest, 3));
        h.hi[k] = std::min(pick(0, std::min(smallest, 3 + staggered(at)[k])), smallest);
      }
      specs.push_back({fmt::format("f{}", f), at, pick(0, 1) ? element_type::f32 : element_type::f64, h});
    }
    std::vector<int> subset;
    for (int f = 0; f < nfields; ++f)
      if (pick(0, 1)) subset.push_back(f);
    if (subset.empty()) subset.push_back(pick(0, nfields - 1));
    int deepest = 1 << 30;  // a depth every field of the subset reaches, in cells
    for (int f : subset) {
      const field_spec& fs = specs[static_cast<size_t>(f)];
      int own = 0;
      for (int k = 0; k < 3; ++k)
        own = std::max({own, fs.halo.lo[k], fs.halo.hi[k] - staggered(fs.at)[k]});
      deepest = std::min(deepest, own);
    }
    const int depth = deepest > 0 ? pick(0, deepest) : 0;
    const reduction op = all_reductions[pick(0, 2)];
    const reverse_to to = pick(0, 1) ? reverse_to::every_holder : reverse_to::owner;
    const algorithm alg = all_algorithms[pick(0, 2)];
    const std::string transport = transports[static_cast<size_t>(pick(0, 3))];
    const std::string what = fmt::format(
        "draw {} (seed {}): {} {} on {}x{}x{} periodic {}{}{} global {}x{}x{}, {} fields, {} "
        "of them at depth {}, {} {}",
        draw, seed, transport, to_string(alg), d.dims()[0], d.dims()[1], d.dims()[2], periodic[0],
        periodic[1], periodic[2], global[0], global[1], global[2], nfields, subset.size(), depth,
        to_string(op), to == reverse_to::owner ? "into the owner" : "on every holder");
    case_fields c(d, global, specs, false);
    // The rank's cells (the first field may be staggered: its points are not the cells).
    halo_exchange ex(d, subdomain_of_global(d, global).extent, c.fields,
                     {.alg = alg, .transport = parse_transport_choice(transport)});
    c.fill(draw, false);
    ex.reverse(op, subset, depth, to);
    const std::string agreed =
        agree_on_error(MPI_COMM_WORLD, c.check(subset, depth, op, to, draw));
    ASSERT_TRUE(agreed.empty()) << what << ": " << agreed;
  }
}

// Into the owners one round of a message per neighbour (26 on a periodic
// 2x2x2 grid) where the halos allow, three axis steps of two messages where a
// staged exchange asks for them or where a halo is deeper than the points it
// is filled from; on every holder the same one round where the halos allow
// (every holder's copies to every other holder: 26), else a round per axis
// (xvel's 2 + 3 points are more than a 4-cell sub-domain: three steps into
// the owners, two rounds on every axis on every holder).
TEST(Reverse, MessagesPerCallFollowTheRounds) {
  if (world_size() != 8) GTEST_SKIP() << "needs a 2x2x2 grid";
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {2, 2, 2}, {true, true, true}, false);
  case_fields c(d, global_cells(d.dims()), every_location(), false);
  std::vector<int> all(c.specs.size());
  for (size_t f = 0; f < all.size(); ++f) all[f] = static_cast<int>(f);
  const std::vector<int> shallow{0, 1, 3};
  halo_exchange standard(d, c.mine[0].points, c.fields, {.alg = algorithm::standard});
  EXPECT_EQ(standard.reverse_message_count(shallow), 26u);
  EXPECT_EQ(standard.reverse_message_count(shallow, 0, reverse_to::every_holder), 26u);
  EXPECT_EQ(standard.reverse_message_count(all), 6u);
  EXPECT_EQ(standard.reverse_message_count(all, 0, reverse_to::every_holder), 12u);
  halo_exchange staged(d, c.mine[0].points, c.fields, {.alg = algorithm::staged});
  EXPECT_EQ(staged.reverse_message_count(shallow), 6u);
  EXPECT_EQ(staged.reverse_message_count(shallow, 0, reverse_to::every_holder), 6u);
}

}  // namespace
