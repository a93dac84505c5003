// The verification matrix every transport passes: 1..8 ranks, periodic and
// open boundaries, dimensions of 1 and 2 ranks, halo widths up to the
// sub-domain size (and per-side widths), float and double, several fields,
// per-rank and unevenly split global domains.
#include "halox/exchange.hpp"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "halox/common/error.hpp"
#include "halox/extend/plan.hpp"
#include "halox/extend/registry.hpp"
#include "halox/field_memory.hpp"
#include "halox_programs/decomposition/options.hpp"
#include "halox_programs/self_copy_reference.hpp"
#include "halox_programs/verify.hpp"
#include "cell_fields.hpp"
#include "scoped_environment.hpp"
#include "test_world.hpp"

using namespace halox;

namespace {

using testing_support::world_size;

// Oversubscribed runs take a representative subset, set by CMake as
// HALOX_TEST_MATRIX: "reduced" (Open MPI, whose waits yield) or "minimal"
// (MPICH, which busy-polls in every collective of an exchange's set-up, so each
// costs time slices of every rank). Every other run takes the full matrix.
enum class matrix_size { full, reduced, minimal };

matrix_size test_matrix() {
  const char* value = std::getenv("HALOX_TEST_MATRIX");
  const std::string v = value ? value : "";
  return v == "minimal"   ? matrix_size::minimal
         : v == "reduced" ? matrix_size::reduced
                          : matrix_size::full;
}

bool reduced_matrix() {
  return test_matrix() != matrix_size::full;
}
bool minimal_matrix() {
  return test_matrix() == matrix_size::minimal;
}

// Rank grids to try for the current number of ranks (0 = MPI_Dims_create).
std::vector<ivec3> rank_grids() {
  switch (world_size()) {
    case 1:
      return {{1, 1, 1}};
    case 2:
      return {{2, 1, 1}, {1, 2, 1}, {1, 1, 2}};
    case 3:
      if (minimal_matrix()) return {{1, 3, 1}};
      return {{3, 1, 1}, {1, 1, 3}};
    case 4:
      if (minimal_matrix()) return {{2, 2, 1}};
      return {{4, 1, 1}, {2, 2, 1}, {1, 2, 2}};
    // Oversubscribed 4x: 2 ranks in every dimension (each neighbour in two
    // directions); the line of 4 is covered by 4 ranks.
    case 8:
      if (reduced_matrix()) return {{2, 2, 2}};
      return {{2, 2, 2}, {1, 4, 2}};
    default:
      return {{0, 0, 0}};
  }
}

struct domain_case {
  bool global = false;
  ivec3 cells;  // per rank, or global (split unevenly)
};

std::vector<domain_case> domains(const ivec3& dims) {
  // Global extents leave a remainder in every split dimension.
  ivec3 global;
  for (int d = 0; d < 3; ++d) global[d] = 3 * dims[d] + (dims[d] > 1 ? dims[d] - 1 : 1);
  // Minimal: the unevenly split global domain only (remainders in every split dimension).
  if (minimal_matrix()) return {{true, global}};
  return {{false, {5, 4, 3}}, {true, global}};
}

std::vector<halo_widths> halos_for(const ivec3& smallest) {
  int full = std::min({smallest[0], smallest[1], smallest[2]});
  halo_widths widest_asymmetric{{smallest[0], 1, 0}, {0, smallest[1], smallest[2]}};
  if (reduced_matrix()) return {halo_widths::uniform(full), widest_asymmetric};
  return {halo_widths::uniform(1), halo_widths::uniform(2), halo_widths::uniform(full),
          halo_widths{{1, 0, 2}, {0, 2, 1}}, widest_asymmetric};
}

std::vector<std::array<bool, 3>> periodicities() {
  if (minimal_matrix()) return {{true, false, true}};
  if (reduced_matrix()) return {{true, true, true}, {true, false, true}};
  return {{true, true, true}, {false, false, false}, {true, false, true}};
}

std::vector<int> field_counts() {
  if (reduced_matrix()) return {3};
  return {1, 3};
}

// Where the fields live: node-shared memory (single-copy transports read it in
// place) or the caller's own heap memory (they pack it into their outbox).
struct field_store {
  shared_field_memory* shared = nullptr;  // holds at least nfields fields when set
  std::vector<std::vector<std::byte>>* heap = nullptr;
};

template <class T>
std::string run_case(const decomposition& d, const domain_case& dc, const halo_widths& halo,
                     int nfields, const exchange_options& options, const field_store& store) {
  subdomain sub = dc.global ? subdomain_of_global(d, dc.cells) : subdomain_per_rank(d, dc.cells);
  local_grid grid(sub.extent, halo);
  std::vector<T*> fields;
  for (int f = 0; f < nfields; ++f)
    fields.push_back(store.shared
                         ? static_cast<T*>(store.shared->field(f))
                         : reinterpret_cast<T*>((*store.heap)[static_cast<size_t>(f)].data()));
  verify_context ctx{grid, sub, d.periodic(), options.alg};
  halo_exchange ex(d, grid, std::span<T* const>(fields), options);
  std::string error;
  // Two epochs: the second proves a reused exchange moves fresh data.
  for (int epoch = 0; epoch < 2 && error.empty(); ++epoch) {
    fill_fields(fields, ctx, epoch);
    if (epoch == 0) {
      ex.exchange();
    } else {
      ex.start();
      ex.wait();
    }
    size_t total = 0;
    auto bad = check_fields(fields, ctx, epoch, 1, &total);
    if (total > 0)
      error = fmt::format("rank {}: {} wrong cells, first {}", d.rank(), total, describe(bad[0]));
  }
  return error;
}

// Enough memory for the largest case of a decomposition (allocation is collective).
size_t largest_field_bytes(const decomposition& d, size_t element_bytes) {
  size_t most = 0;
  for (const auto& dc : domains(d.dims())) {
    subdomain sub = dc.global ? subdomain_of_global(d, dc.cells) : subdomain_per_rank(d, dc.cells);
    ivec3 smallest = dc.cells;
    if (dc.global)
      for (int i = 0; i < 3; ++i) smallest[i] = dc.cells[i] / d.dims()[i];
    for (const auto& halo : halos_for(smallest))
      most = std::max(most, local_grid(sub.extent, halo).points() * element_bytes);
  }
  return most;
}

// Every transport of the registry, alone and (on-node ones) over node-shared
// memory too. With node groups (HALOX_RANKS_PER_NODE, see CMakeLists.txt) the
// on-node/off-node split is what is tested: the on-node transports, each with
// every message transport for the other nodes. Without groups every peer is
// on the node, so a routing's remote part would carry nothing.
struct transport_param {
  std::string choice;
  bool shared = false;  // fields in node-shared memory
};

std::vector<transport_param> transport_params() {
  const char* groups = std::getenv("HALOX_RANKS_PER_NODE");
  const bool node_groups = groups && *groups && std::string(groups) != "0";
  std::vector<transport_param> out;
  for (const transport_entry* local : transport_registry()) {
    // Host fields here: cuda-ipc (device fields only) is tests/gpu's.
    if (!local->available() || !local->moves_host_memory()) continue;
    const bool on_node = local->reach == transport_reach::same_node;
    if (!node_groups) {
      out.push_back({local->name, false});
      if (on_node) out.push_back({local->name, true});
      continue;
    }
    if (!on_node) continue;
    out.push_back({local->name, true});
    for (const transport_entry* remote : transport_registry())
      if (remote->reach == transport_reach::any_peer && remote->available() &&
          remote != &default_remote_transport())
        out.push_back({fmt::format("{}+{}", local->name, remote->name), false});
  }
  return out;
}

std::string sanitized(std::string name) {
  for (auto& c : name)
    if (c == '-' || c == '+') c = '_';
  return name;
}

std::string transport_param_name(const transport_param& t) {
  return sanitized(t.choice) + (t.shared ? "_shared" : "");
}

using matrix_param = std::tuple<transport_param, algorithm, field_grouping, element_type>;

class ExchangeMatrix : public testing::TestWithParam<matrix_param> {};

TEST_P(ExchangeMatrix, EveryHaloCellIsExact) {
  auto [transport, alg, grouping, type] = GetParam();
  // Oversubscribed, every exchange set-up costs time slices (MPICH busy-polls):
  // pair each grouping with one element type there. Rank counts that fit the
  // cores run every pairing.
  if (reduced_matrix() && (grouping == field_grouping::compact) != (type == element_type::f32))
    GTEST_SKIP() << "reduced matrix: " << to_string(grouping)
                 << " runs with the other element type";
  // 4x oversubscribed: the two algorithms of the Betzy results; faces run up to 4 ranks.
  if (reduced_matrix() && world_size() > 4 && alg == algorithm::faces)
    GTEST_SKIP() << "reduced matrix: faces run with up to 4 ranks";
  exchange_options options{
      .alg = alg, .grouping = grouping, .transport = parse_transport_choice(transport.choice)};
  int cases = 0;
  for (const auto& dims : rank_grids())
    for (const auto& periodic : periodicities()) {
      auto d = make_cart_decomposition(MPI_COMM_WORLD, dims, periodic, false);
      const size_t bytes = largest_field_bytes(d, element_size(type));
      std::optional<shared_field_memory> shared;
      std::vector<std::vector<std::byte>> heap;
      if (transport.shared)
        shared.emplace(d, bytes, 3);
      else
        heap.assign(3, std::vector<std::byte>(bytes));
      for (const auto& dc : domains(d.dims())) {
        ivec3 smallest = dc.cells;
        if (dc.global)
          for (int i = 0; i < 3; ++i) smallest[i] = dc.cells[i] / d.dims()[i];
        for (const auto& halo : halos_for(smallest))
          for (int nfields : field_counts()) {
            field_store store{shared ? &*shared : nullptr, &heap};
            std::string error = type == element_type::f32
                                    ? run_case<float>(d, dc, halo, nfields, options, store)
                                    : run_case<double>(d, dc, halo, nfields, options, store);
            std::string agreed = agree_on_error(MPI_COMM_WORLD, error);
            ASSERT_TRUE(agreed.empty()) << fmt::format(
                "dims {}x{}x{} periodic {}{}{} {} cells {}x{}x{} halo lo {},{},{} "
                "hi {},{},{} fields {}: {}",
                d.dims()[0], d.dims()[1], d.dims()[2], periodic[0], periodic[1], periodic[2],
                dc.global ? "global" : "per-rank", dc.cells[0], dc.cells[1], dc.cells[2],
                halo.lo[0], halo.lo[1], halo.lo[2], halo.hi[0], halo.hi[1], halo.hi[2], nfields,
                agreed);
            ++cases;
          }
      }
    }
  EXPECT_GT(cases, 0);
}

std::string param_name(const testing::TestParamInfo<matrix_param>& info) {
  auto [t, a, m, ty] = info.param;
  return transport_param_name(t) + "_" + to_string(a) + "_" + to_string(m) + "_" + to_string(ty);
}

INSTANTIATE_TEST_SUITE_P(
    AllTransports, ExchangeMatrix,
    testing::Combine(testing::ValuesIn(transport_params()),
                     testing::Values(algorithm::standard, algorithm::staged, algorithm::faces),
                     testing::Values(field_grouping::compact, field_grouping::sequence),
                     testing::Values(element_type::f32, element_type::f64)),
    param_name);

// A hardware-aware (hwcart) grid for any rank count on this machine: nodes of
// up to 4 ranks (node groups) on a synthetic 2-socket x 2-core node.
decomposition_options hw_options(int size, const std::vector<int>& periodic) {
  decomposition_options o;
  o.topology = "synthetic:pack:2 core:2 pu:1";
  o.binding = "spread";
  o.periodic = periodic;
  o.order = "ZYX";
  auto grid = [&](level l, std::vector<int> g) {
    o.level_grids[static_cast<size_t>(index_of(l))] = g;
  };
  if (size % 4 == 0) {
    o.ranks_per_node = 4;
    grid(level::node, {1, 1, size / 4});
    grid(level::socket, {2, 1, 1});
    grid(level::core, {1, 2, 1});
  } else if (size == 2) {
    o.ranks_per_node = 2;
    grid(level::socket, {1, 2, 1});
  } else {
    o.ranks_per_node = 1;
    grid(level::node, {size, 1, 1});
  }
  return o;
}

class HwExchange : public testing::TestWithParam<transport_param> {};

TEST_P(HwExchange, EveryHaloCellIsExactOnHardwareAwareGrids) {
  std::vector<std::vector<int>> periodics{{1, 1, 1}, {1, 0, 1}};
  if (minimal_matrix()) periodics.erase(periodics.begin());
  for (const auto& periodic : periodics) {
    auto d = build_decomposition(MPI_COMM_WORLD, hw_options(world_size(), periodic), {});
    ASSERT_EQ(d.kind(), "hw");
    std::optional<shared_field_memory> shared;
    std::vector<std::vector<std::byte>> heap;
    if (GetParam().shared)
      shared.emplace(d, largest_field_bytes(d, sizeof(double)), 2);
    else
      heap.assign(2, std::vector<std::byte>(largest_field_bytes(d, sizeof(double))));
    field_store store{shared ? &*shared : nullptr, &heap};
    for (auto alg : {algorithm::standard, algorithm::staged, algorithm::faces})
      for (auto grouping : {field_grouping::compact, field_grouping::sequence})
        for (const auto& dc : domains(d.dims()))
          for (int width : {1, 3}) {
            exchange_options options{.alg = alg,
                                     .grouping = grouping,
                                     .transport = parse_transport_choice(GetParam().choice)};
            std::string error =
                run_case<double>(d, dc, halo_widths::uniform(width), 2, options, store);
            std::string agreed = agree_on_error(MPI_COMM_WORLD, error);
            ASSERT_TRUE(agreed.empty()) << to_string(alg) << " " << to_string(grouping) << " halo "
                                        << width << ": " << agreed;
          }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTransports, HwExchange, testing::ValuesIn(transport_params()),
                         [](const testing::TestParamInfo<transport_param>& info) {
                           return transport_param_name(info.param);
                         });

// Blocks of fields per message (2 of 3 fields: a block of two and one of
// one; and blocks sized to the L2 cache), and blocks inside a message (a
// stage moved field by field, or a block of two and one of one), for every
// transport.
// A block is a message of its own: blocks of small fields grow until their
// largest message carries min_fragment_bytes, whatever the cache allows;
// fields whose messages are that large already keep cache-sized blocks, and
// a rank without messages (alone in every dimension) keeps them too.
TEST(Exchange, CacheBlocksCarryAMinimumFragment) {
  if (world_size() < 2) GTEST_SKIP() << "needs a neighbour to send to";
  auto row =
      make_cart_decomposition(MPI_COMM_WORLD, {world_size(), 1, 1}, {true, true, true}, false);
  auto alone = make_cart_decomposition(MPI_COMM_SELF, {1, 1, 1}, {true, true, true}, false);
  constexpr size_t small_cache = 64 * 1024;
  // x faces of 2 KiB a field; on 2 ranks both go to the one neighbour in one message.
  const local_grid small({16, 16, 16}, halo_widths::uniform(1));
  const size_t message = world_size() == 2 ? 4096 : 2048;
  ASSERT_LT(message * 8, min_fragment_bytes);
  auto fields = [](const local_grid& grid, size_t count) {
    return testing_support::cell_fields(grid, count, 8, algorithm::staged);
  };
  EXPECT_EQ(cache_sized_block(row, fields(small, 8), small_cache), 8);
  EXPECT_EQ(cache_sized_block(row, fields(small, 64), small_cache),
            static_cast<int>(min_fragment_bytes / message));
  EXPECT_EQ(cache_sized_block(alone, fields(small, 8), small_cache), 1);
  const local_grid large({64, 64, 64}, halo_widths::uniform(5));  // x messages of 160 KiB
  EXPECT_EQ(cache_sized_block(row, fields(large, 8), small_cache), 1);
}

TEST(Exchange, FieldBlocksAreExactForEveryTransport) {
  struct blocking {
    int per_message, per_block;
  };
  std::vector<blocking> blockings{{2, 0}, {fields_per_message_auto, 0}, {0, 1}, {0, 2}, {2, 1}};
  // The minimal matrix keeps messages of 2 fields in blocks of 1 (both settings at once).
  if (minimal_matrix()) blockings = {{2, 1}};
  for (const auto& transport : transport_params())
    for (auto [per_message, per_block] : blockings)
      for (auto alg : {algorithm::standard, algorithm::staged}) {
        auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, false, true}, false);
        domain_case dc{false, {5, 4, 3}};
        const size_t bytes = local_grid(dc.cells, halo_widths::uniform(2)).points() * sizeof(double);
        std::optional<shared_field_memory> shared;
        std::vector<std::vector<std::byte>> heap;
        if (transport.shared)
          shared.emplace(d, bytes, 3);
        else
          heap.assign(3, std::vector<std::byte>(bytes));
        field_store store{shared ? &*shared : nullptr, &heap};
        exchange_options options{.alg = alg,
                                 .grouping = field_grouping::compact,
                                 .transport = parse_transport_choice(transport.choice)};
        options.fields_per_message = per_message;
        options.fields_per_block = per_block;
        std::string error = run_case<double>(d, dc, halo_widths::uniform(2), 3, options, store);
        std::string agreed = agree_on_error(MPI_COMM_WORLD, error);
        ASSERT_TRUE(agreed.empty())
            << transport.choice << " " << to_string(alg) << " messages of " << per_message
            << " fields, blocks of " << per_block << ": " << agreed;
      }
}

// halox-bench's self-copy reference fills exactly the halo cells the exchange
// fills (open sides and unfilled edges stay as they are), each from the
// rank's own interior cell one sub-domain across, and leaves the interior alone.
TEST(Exchange, SelfCopyReferenceFillsTheExchangesHalosFromTheRanksOwnCells) {
  int cases = 0;
  for (const auto& dims : rank_grids())
    for (const auto& periodic : periodicities())
      for (auto alg : {algorithm::standard, algorithm::staged, algorithm::faces}) {
        auto d = make_cart_decomposition(MPI_COMM_WORLD, dims, periodic, false);
        for (const auto& dc : domains(d.dims())) {
          ivec3 smallest = dc.cells;
          if (dc.global)
            for (int i = 0; i < 3; ++i) smallest[i] = dc.cells[i] / d.dims()[i];
          for (const auto& halo : halos_for(smallest)) {
            subdomain sub =
                dc.global ? subdomain_of_global(d, dc.cells) : subdomain_per_rank(d, dc.cells);
            local_grid grid(sub.extent, halo);
            const int nfields = 2;
            std::vector<std::vector<double>> exchanged(nfields), referenced(nfields);
            std::vector<double*> ex_fields, ref_fields;
            for (int f = 0; f < nfields; ++f) {
              exchanged[f].resize(grid.points());
              referenced[f].resize(grid.points());
              ex_fields.push_back(exchanged[f].data());
              ref_fields.push_back(referenced[f].data());
            }
            verify_context ctx{grid, sub, d.periodic(), alg};
            exchange_options options{.alg = alg, .transport = parse_transport_choice("mpi-p2p")};
            halo_exchange ex(d, grid, ex_fields, options);
            fill_fields(ex_fields, ctx, 0);
            ex.exchange();
            fill_fields(ref_fields, ctx, 0);
            const std::vector<std::vector<double>> before = referenced;
            std::vector<std::byte*> raw;
            for (double* f : ref_fields) raw.push_back(reinterpret_cast<std::byte*>(f));
            self_copy_reference(ex.plan(), raw.data()).run();

            std::string error;
            const ivec3 n = grid.interior;
            for (int f = 0; f < nfields && error.empty(); ++f)
              for (int z = -halo.lo[2]; z < n[2] + halo.hi[2] && error.empty(); ++z)
                for (int y = -halo.lo[1]; y < n[1] + halo.hi[1] && error.empty(); ++y)
                  for (int x = -halo.lo[0]; x < n[0] + halo.hi[0] && error.empty(); ++x) {
                    const size_t i = grid.index(x, y, z);
                    const bool interior = grid.interior_box().contains({x, y, z});
                    const bool filled = exchanged[f][i] != halo_sentinel<double>();
                    auto wrap = [](int c, int extent) { return ((c % extent) + extent) % extent; };
                    const double expected =
                        interior || !filled
                            ? before[f][i]
                            : before[f][grid.index(wrap(x, n[0]), wrap(y, n[1]), wrap(z, n[2]))];
                    if (referenced[f][i] != expected)
                      error = fmt::format("rank {} field {} cell {},{},{}: {} where {} was due",
                                          d.rank(), f, x, y, z, referenced[f][i], expected);
                  }
            std::string agreed = agree_on_error(MPI_COMM_WORLD, error);
            ASSERT_TRUE(agreed.empty()) << fmt::format(
                "dims {}x{}x{} periodic {}{}{} {} {} halo lo {},{},{} hi {},{},{}: {}", d.dims()[0],
                d.dims()[1], d.dims()[2], periodic[0], periodic[1], periodic[2], to_string(alg),
                dc.global ? "global" : "per-rank", halo.lo[0], halo.lo[1], halo.lo[2], halo.hi[0],
                halo.hi[1], halo.hi[2], agreed);
            ++cases;
          }
        }
      }
  EXPECT_GT(cases, 0);
}

// The measured choice keeps an exact exchange, says what it chose, and a
// wisdom file lets the next exchange skip the measurement.
TEST(Exchange, AutomaticChoiceIsExactAndRemembered) {
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, false, true}, false);
  domain_case dc{false, {6, 5, 4}};
  std::vector<std::vector<std::byte>> heap(
      2, std::vector<std::byte>(local_grid(dc.cells, halo_widths::uniform(2)).points() * 8));
  std::string wisdom = fmt::format("/tmp/halox-wisdom-test-{}", getppid());
  if (d.rank() == 0) {
    // Lines that are not this build's entries are skipped: an older text
    // format, and an entry naming a transport this build does not have.
    std::FILE* f = std::fopen(wisdom.c_str(), "w");
    std::fputs("host|mpi|2x1x1 2|6x5x4\tshm staged compact 0 0\n", f);
    std::fputs(R"({"key": {"host": "elsewhere"}, "choice": {"transport": "no-such"}})"
               "\n",
               f);
    std::fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  exchange_options options;
  options.auto_transport = options.auto_algorithm = options.auto_grouping = true;
  options.wisdom_file = wisdom;
  for (const char* expected : {"measured", "from wisdom"}) {
    subdomain sub = subdomain_per_rank(d, dc.cells);
    local_grid grid(sub.extent, halo_widths::uniform(2));
    std::vector<double*> fields{reinterpret_cast<double*>(heap[0].data()),
                                reinterpret_cast<double*>(heap[1].data())};
    verify_context ctx{grid, sub, d.periodic(), algorithm::standard};
    fill_fields(fields, ctx, 0);
    halo_exchange ex(d, grid, fields, options);
    EXPECT_NE(ex.choice_report().find(expected), std::string::npos) << ex.choice_report();
    EXPECT_FALSE(ex.options().auto_transport || ex.options().auto_algorithm ||
                 ex.options().auto_grouping);
    ctx.alg = ex.options().alg;
    fill_fields(fields, ctx, 1);
    ex.exchange();
    size_t total = 1;
    check_fields(fields, ctx, 1, 1, &total);
    EXPECT_EQ(total, 0u) << ex.choice_report();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (d.rank() == 0) std::remove(wisdom.c_str());
}

// A choice written before the grouping had its own word names it "fields" (a
// string), as does its wisdom key's "measured": both are read as the grouping;
// only "grouping" is written.
TEST(Exchange, AnOlderChoiceNamesItsGroupingFields) {
  exchange_options older;
  apply_choice_json(R"({"transport": "mpi-p2p", "algorithm": "staged", "fields": "sequence",
                        "fields_per_message": 0, "fields_per_block": 2})",
                    older);
  EXPECT_EQ(older.grouping, field_grouping::sequence);
  EXPECT_EQ(older.alg, algorithm::staged);
  EXPECT_EQ(older.fields_per_block, 2);
  const std::string written = choice_json(older);
  EXPECT_NE(written.find(R"("grouping":"sequence")"), std::string::npos) << written;
  EXPECT_EQ(written.find(R"("fields")"), std::string::npos) << written;

  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  const local_grid grid(subdomain_per_rank(d, {4, 4, 4}).extent, halo_widths::uniform(1));
  std::vector<std::vector<double>> heap(2, std::vector<double>(grid.points()));
  std::vector<double*> fields{heap[0].data(), heap[1].data()};
  const std::string wisdom = fmt::format("/tmp/halox-older-wisdom-test-{}", getppid());
  exchange_options options{.auto_grouping = true, .wisdom_file = wisdom};
  field_grouping measured = halo_exchange(d, grid, fields, options).options().grouping;
  if (d.rank() == 0) {
    // The entry as an older build wrote it: "grouping" was "fields".
    std::string text;
    std::FILE* f = std::fopen(wisdom.c_str(), "r");
    for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) text += static_cast<char>(c);
    std::fclose(f);
    ASSERT_NE(text.find(R"("grouping")"), std::string::npos) << text;
    for (size_t at; (at = text.find(R"("grouping")")) != std::string::npos;)
      text.replace(at, 10, R"("fields")");
    f = std::fopen(wisdom.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  halo_exchange again(d, grid, fields, options);
  EXPECT_NE(again.choice_report().find("from wisdom"), std::string::npos)
      << again.choice_report();
  EXPECT_EQ(again.options().grouping, measured);
  MPI_Barrier(MPI_COMM_WORLD);
  if (d.rank() == 0) std::remove(wisdom.c_str());
}

// Work on the interior between start and wait reads the rank's own values, and
// the halos are exact once wait returns.
// A 7-point average of the cells that no neighbour's halo reads (interior
// cells 0..5, halo width 1: cells 1..4), reading no halo: the interior work a
// stencil code does between start and wait.
std::vector<double> interior_average(const std::vector<double>& a, const local_grid& grid) {
  std::vector<double> out(grid.points(), 0.0);
  for (int z = 1; z < 5; ++z)
    for (int y = 1; y < 5; ++y)
      for (int x = 1; x < 5; ++x)
        out[grid.index(x, y, z)] =
            (a[grid.index(x, y, z)] + a[grid.index(x - 1, y, z)] + a[grid.index(x + 1, y, z)] +
             a[grid.index(x, y - 1, z)] + a[grid.index(x, y + 1, z)] + a[grid.index(x, y, z - 1)] +
             a[grid.index(x, y, z + 1)]) /
            7.0;
  return out;
}

// Whether every other rank finished its whole exchange (start and wait) while
// rank 0 has only started its own: they wait for rank 0's messages, so they
// finish only if start() posted them. Rank 0 polls their notes (on a
// communicator of its own) for `seconds`; the others send theirs after wait().
bool others_finished_while_rank0_only_started(MPI_Comm comm, int rank, double seconds) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  if (rank != 0) {
    MPI_Send(nullptr, 0, MPI_BYTE, 0, 0, comm);
    return true;
  }
  std::vector<MPI_Request> notes(size - 1);
  for (int r = 1; r < size; ++r) MPI_Irecv(nullptr, 0, MPI_BYTE, r, 0, comm, &notes[r - 1]);
  int done = 0;
  for (const double until = MPI_Wtime() + seconds; !done && MPI_Wtime() < until;)
    MPI_Testall(size - 1, notes.data(), &done, MPI_STATUSES_IGNORE);
  if (!done) {
    for (auto& r : notes) MPI_Cancel(&r);
    MPI_Waitall(size - 1, notes.data(), MPI_STATUSES_IGNORE);
  }
  return done != 0;
}

TEST(Exchange, SplitPhaseRunsInteriorWorkWhileTheMessagesTravel) {
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  local_grid grid({6, 6, 6}, halo_widths::uniform(1));
  subdomain sub = subdomain_per_rank(d, {6, 6, 6});
  std::vector<double> a(grid.points()), b(grid.points());
  std::vector<double*> fields{a.data(), b.data()};
  verify_context ctx{grid, sub, d.periodic(), algorithm::standard};
  fill_fields(fields, ctx, 3);
  MPI_Comm notes = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &notes);
  int rank = 0;
  MPI_Comm_rank(notes, &rank);
  halo_exchange ex(d, grid, std::span<double* const>(fields), {algorithm::standard});
  ex.start();
  const std::vector<double> during = interior_average(a, grid);  // the overlapped work
  if (rank != 0) ex.wait();
  const bool in_flight = others_finished_while_rank0_only_started(notes, rank, 30.0);
  if (rank == 0) ex.wait();
  MPI_Comm_free(&notes);
  size_t total = 1;
  check_fields(fields, ctx, 3, 1, &total);
  EXPECT_EQ(total, 0u);
  EXPECT_TRUE(in_flight) << "start() did not post rank 0's messages: the others' waits waited";
  const std::vector<double> after = interior_average(a, grid);
  EXPECT_EQ(during, after);  // the work read no halo and saw no cell change
  EXPECT_GT(*std::max_element(during.begin(), during.end()), 0.0);
  EXPECT_THROW(ex.wait(), std::logic_error);
}

TEST(Exchange, ExportedCartesianCommunicatorKeepsCoordinates) {
  for (bool reorder : {false, true}) {
    auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, false, true}, reorder);
    MPI_Comm cart = d.export_cartesian();
    int rank = 0, coords[3];
    MPI_Comm_rank(cart, &rank);
    MPI_Cart_coords(cart, rank, 3, coords);
    EXPECT_EQ((ivec3{coords[0], coords[1], coords[2]}), d.coords());
    MPI_Comm_free(&cart);
  }
}

TEST(Exchange, SingleCopyOnUserMemoryStagesThroughSharedMemory) {
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  local_grid grid({4, 4, 4}, halo_widths::uniform(1));
  subdomain sub = subdomain_per_rank(d, {4, 4, 4});
  std::vector<double> plain(grid.points());
  std::vector<double*> fields{plain.data()};
  verify_context ctx{grid, sub, d.periodic(), algorithm::standard};
  fill_fields(fields, ctx, 0);
  halo_exchange ex(d, grid, std::span<double* const>(fields),
                   {.transport = parse_transport_choice("shm")});
  EXPECT_EQ(ex.transport_name(), "shm");
  EXPECT_EQ(ex.transport_path().rfind("shm(outbox)", 0), 0u) << ex.transport_path();
  ex.exchange();
  size_t total = 1;
  check_fields(fields, ctx, 0, 1, &total);
  EXPECT_EQ(total, 0u);
}

// cma reads the neighbours' fields wherever the caller allocated them: here
// one std::vector per field, read in place (every box directly), packed by
// the owner first (every box), and split by the default rule.
TEST(Exchange, CmaReadsUserVectorsInPlace) {
  if (auto why = find_transport("cma").unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, false, true}, false);
  const ivec3 cells{7, 6, 5};
  local_grid grid(cells, halo_widths{{2, 1, 3}, {1, 2, 2}});
  subdomain sub = subdomain_per_rank(d, cells);
  std::vector<std::vector<double>> memory(3, std::vector<double>(grid.points()));
  std::vector<double*> fields;
  for (auto& m : memory) fields.push_back(m.data());
  scoped_environment environment;
  for (const char* min_run : {"0", "1000000", ""}) {
    environment.set("HALOX_CMA_DIRECT_MIN_RUN", min_run);
    for (auto alg : {algorithm::standard, algorithm::staged, algorithm::faces})
      for (auto grouping : {field_grouping::compact, field_grouping::sequence}) {
        halo_exchange ex(
            d, grid, std::span<double* const>(fields),
            {.alg = alg, .grouping = grouping, .transport = parse_transport_choice("cma")});
        EXPECT_EQ(ex.transport_name(), "cma");
        EXPECT_EQ(ex.transport_path(), "cma+mpi-p2p");
        verify_context ctx{grid, sub, d.periodic(), alg};
        for (int epoch = 0; epoch < 3; ++epoch) {
          fill_fields(fields, ctx, epoch);
          if (epoch == 1) {
            ex.start();
            ex.wait();
          } else {
            ex.exchange();
          }
          size_t total = 1;
          auto bad = check_fields(fields, ctx, epoch, 1, &total);
          EXPECT_EQ(total, 0u) << "HALOX_CMA_DIRECT_MIN_RUN='" << min_run << "' " << to_string(alg)
                               << " " << to_string(grouping) << " epoch " << epoch << ": "
                               << (bad.empty() ? std::string() : describe(bad[0]));
        }
      }
  }
}

// shm and cma under every outbox rule (all direct, short runs through the
// outbox, everything through the outbox, and the measured choice), each with strided runs
// fetched ahead, not, or measured, and shm's direct boxes pulled by the
// reader, pushed by the owner, or measured; the fields move one at a time so
// that the outbox ring wraps around; the settings say which rule ran, whether
// runs were fetched ahead, and how each was chosen.
TEST(Exchange, SingleCopyOutboxRulesAreExact) {
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, false, true}, false);
  const ivec3 cells{7, 6, 5};
  local_grid grid(cells, halo_widths{{2, 1, 3}, {1, 2, 2}});
  subdomain sub = subdomain_per_rank(d, cells);
  shared_field_memory shared(d, grid.points() * sizeof(double), 3);
  std::vector<double*> fields;
  for (int f = 0; f < 3; ++f) fields.push_back(static_cast<double*>(shared.field(f)));
  for (const std::string transport : {"shm", "cma"}) {
    if (auto why = find_transport(transport).unavailable(); !why.empty()) continue;
    const std::string upper = transport == "shm" ? "SHM" : "CMA";
    const std::string variable = "HALOX_" + upper + "_DIRECT_MIN_RUN";
    const std::string fetch_variable = "HALOX_" + upper + "_FETCH_AHEAD";
    const std::string push_variable = "HALOX_SHM_PUSH";  // shm only
    // What the transport's settings name as the reason for a forced knob.
    const std::string lower = transport == "shm" ? "shm" : "cma";
    const std::string rule_option = "tuning." + lower + ".direct_min_run";
    const std::string fetch_option = "tuning." + lower + ".fetch_ahead";
    const std::string push_option = "tuning.shm.push";
    struct rule_case {
      const char *rule, *fetch, *push;
    };
    const rule_case cases[] = {{"0", "1", "0"},       {"0", "1", "1"}, {"9", "", "1"},
                               {"1000000", "0", "1"}, {"", "", ""},    {"", "1", "0"},
                               {"", "", "1"}};
    for (const auto& [rule, fetch, push] : cases) {
      if (transport == "cma" && *push == '1') continue;
      scoped_environment environment;
      environment.set(variable, rule);
      environment.set(fetch_variable, fetch);
      if (transport == "shm") environment.set(push_variable, push);
      for (auto alg : {algorithm::standard, algorithm::staged}) {
        exchange_options options{.alg = alg,
                                 .grouping = field_grouping::compact,
                                 .transport = parse_transport_choice(transport)};
        options.fields_per_block = 1;
        halo_exchange ex(d, grid, element_type::f64, shared.pointers(), options);
        const std::string settings = ex.transport_settings();
        // Alone on its node, a rank only copies within itself.
        const char* per_node = std::getenv("HALOX_RANKS_PER_NODE");
        const bool messages = world_size() > 1 && !(per_node && std::atoi(per_node) == 1);
        if (*rule)
          EXPECT_NE(settings.find(rule_option), std::string::npos) << settings;
        else if (!messages)  // nothing to measure: the forcing option, or nothing to say
          EXPECT_NE(settings.find(transport == "shm" && *push
                                      ? "(" + push_option + ")"
                                      : std::string("(no run to pack into the outbox)")),
                    std::string::npos)
              << settings;
        else
          EXPECT_NE(settings.find("(measured"), std::string::npos) << settings;
        if (transport == "shm" && *push) {
          EXPECT_NE(settings.find(push_option), std::string::npos) << settings;
          EXPECT_EQ(settings.find("(push)") != std::string::npos, *push == '1') << settings;
        }
        if (*fetch)
          EXPECT_NE(settings.find(std::string(*fetch == '1' ? "; strided runs fetched ahead ("
                                                            : "; no run fetched ahead (") +
                                  fetch_option + ")"),
                    std::string::npos)
              << settings;
        else  // the grid's x halos (2 and 1 doubles wide) offer 16-byte runs when a rank has x
              // neighbours
          EXPECT_TRUE(settings.find("fetched ahead (measured)") != std::string::npos ||
                      settings.find("(no strided run to fetch)") != std::string::npos)
              << settings;
        verify_context ctx{grid, sub, d.periodic(), alg};
        for (int epoch = 0; epoch < 3; ++epoch) {
          fill_fields(fields, ctx, epoch);
          ex.exchange();
          size_t total = 1;
          auto bad = check_fields(fields, ctx, epoch, 1, &total);
          EXPECT_EQ(total, 0u) << transport << " " << variable << "='" << rule << "' "
                               << fetch_variable << "='" << fetch << "' " << push_variable << "='"
                               << push << "' " << to_string(alg) << " epoch " << epoch << ": "
                               << (bad.empty() ? std::string() : describe(bad[0]));
        }
      }
    }
  }
}

// A subset's schedule measures shm's outbox rule for its own boxes where the caller left it to
// be measured (the whole exchange's rule, measured over other boxes, may not suit them), and
// keeps the rule the caller gave; a subset without a schedule yet has no settings to report.
TEST(Exchange, SubsetSchedulesMeasureShmsOutboxRuleForTheirOwnBoxes) {
  if (auto why = find_transport("shm").unavailable(); !why.empty()) GTEST_SKIP() << why;
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, false, true}, false);
  const ivec3 cells{8, 6, 5};
  local_grid wide(cells, halo_widths{{2, 2, 2}, {2, 2, 2}});
  subdomain sub = subdomain_per_rank(d, cells);
  shared_field_memory shared(d, wide.points() * sizeof(double), 2);
  std::vector<double*> pointers;
  for (int f = 0; f < 2; ++f) pointers.push_back(static_cast<double*>(shared.field(f)));
  const char* per_node = std::getenv("HALOX_RANKS_PER_NODE");
  const bool messages = world_size() > 1 && !(per_node && std::atoi(per_node) == 1);
  for (const char* given : {"", "9"}) {
    scoped_environment environment;
    environment.set("HALOX_SHM_DIRECT_MIN_RUN", given);
    exchange_options options{.transport = parse_transport_choice("shm")};
    halo_exchange ex(d, wide, element_type::f64, shared.pointers(), options);
    EXPECT_THROW((void)ex.transport_settings({1}, 1), usage_error);
    const verify_context ctx{wide, sub, d.periodic(), options.alg};
    fill_fields(pointers, ctx, 0);
    ex.exchange({1}, 1);
    const std::string settings = ex.transport_settings({1}, 1);
    if (*given)
      EXPECT_NE(settings.find("runs under 9 B"), std::string::npos) << settings;
    else if (messages)
      EXPECT_NE(settings.find("(measured"), std::string::npos) << settings;
    // The subset's rule moves the same values as any other.
    ex.exchange();
    size_t total = 1;
    auto bad = check_fields(pointers, ctx, 0, 1, &total);
    EXPECT_EQ(total, 0u) << (bad.empty() ? std::string() : describe(bad[0]));
    EXPECT_EQ(ex.transport_settings({0, 1}, 0), ex.transport_settings());
  }
}

// shm takes its outbox slots in turn across exchanges (a schedule per phase):
// every exchange of a run moves that exchange's values, whichever slot its
// stages packed into, with one block per stage (a slot per stage) and one
// block of all fields (one slot per exchange), fields shared (runs through the
// outbox by rule) or private (everything through the outbox), split phase or not.
TEST(Exchange, ShmOutboxSlotsTakenInTurnMoveEveryExchangesValues) {
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, false, true}, false);
  const ivec3 cells{6, 5, 4};
  local_grid grid(cells, halo_widths::uniform(1));
  subdomain sub = subdomain_per_rank(d, cells);
  shared_field_memory shared(d, grid.points() * sizeof(float), 2);
  std::vector<std::vector<float>> heap(2, std::vector<float>(grid.points()));
  scoped_environment environment;
  environment.set("HALOX_SHM_DIRECT_MIN_RUN", "1000000");
  for (bool in_shared : {true, false})
    for (int per_block : {1, 0})
      for (auto alg : {algorithm::standard, algorithm::staged}) {
        std::vector<float*> fields;
        for (int f = 0; f < 2; ++f)
          fields.push_back(in_shared ? static_cast<float*>(shared.field(f)) : heap[f].data());
        exchange_options options{.alg = alg,
                                 .grouping = field_grouping::compact,
                                 .transport = parse_transport_choice("shm")};
        options.fields_per_block = per_block == 0 ? 2 : per_block;
        std::optional<halo_exchange> ex;
        if (in_shared)
          ex.emplace(d, grid, element_type::f32, shared.pointers(), options);
        else
          ex.emplace(d, grid, std::span<float* const>(fields), options);
        verify_context ctx{grid, sub, d.periodic(), alg};
        // Seven exchanges: the ring of slots (single_copy.hpp) comes round twice.
        for (int epoch = 0; epoch < 7; ++epoch) {
          fill_fields(fields, ctx, epoch);
          if (epoch % 2) {
            ex->start();
            ex->wait();
          } else {
            ex->exchange();
          }
          size_t total = 1;
          auto bad = check_fields(fields, ctx, epoch, 1, &total);
          ASSERT_EQ(total, 0u) << (in_shared ? "shared" : "private") << " fields, blocks of "
                               << options.fields_per_block << ", " << to_string(alg) << ", epoch "
                               << epoch << ": " << (bad.empty() ? std::string() : describe(bad[0]));
        }
      }
}

TEST(Exchange, RanksThatDisagreeFailClearlyOnEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  local_grid grid({4, 4, 4}, halo_widths::uniform(1));
  std::vector<double> a(grid.points());
  std::vector<double*> fields{a.data()};
  exchange_options options;
  options.alg = d.rank() == 1 ? algorithm::staged : algorithm::standard;
  try {
    halo_exchange ex(d, grid, std::span<double* const>(fields), options);
    ADD_FAILURE() << "no error";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("ranks disagree on the exchange"), std::string::npos)
        << e.what();
  }
}

TEST(Exchange, UnknownTransportIsAUsageError) {
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, true, true}, false);
  local_grid grid({4, 4, 4}, halo_widths::uniform(1));
  std::vector<double> a(grid.points());
  std::vector<double*> fields{a.data()};
  for (const char* bad : {"carrier-pigeon", "mpi-p2p+shm", "shm+", "+mpi-p2p", "shm+mpi-p2p+ucx"})
    EXPECT_THROW(halo_exchange(d, grid, std::span<double* const>(fields),
                               {.transport = parse_transport_choice(bad)}),
                 usage_error)
        << bad;
}

TEST(Exchange, NeighboursAreMutual) {
  auto d = make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, false, true}, false);
  for (int i = 0; i < direction_count; ++i) {
    auto there = d.neighbor(direction_of(i));
    if (!there) continue;
    // The rank at `there` sees us in the opposite direction.
    ivec3 c = coords_of(*there, d.dims(), d.order());
    ivec3 back = c;
    for (int k = 0; k < 3; ++k) {
      back[k] -= direction_of(i)[k];
      back[k] = (back[k] + d.dims()[k]) % d.dims()[k];
    }
    EXPECT_EQ(d.rank_of(back), d.rank());
  }
}

}  // namespace
