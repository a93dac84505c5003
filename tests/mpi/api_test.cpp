// The ways a stencil code hands its fields to halo_exchange: a vector of
// pointers, a braced list, a span; all without casts, float and double.
#include <gtest/gtest.h>
#include <mpi.h>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "halox/common/error.hpp"
#include "halox/exchange.hpp"
#include "halox/field_memory.hpp"
#include "halox_programs/verify.hpp"
#include "scoped_environment.hpp"

using namespace halox;

namespace {

struct setup {
  decomposition decomp;
  verify_context ctx;
};

setup make_setup(algorithm alg) {
  setup s{make_cart_decomposition(MPI_COMM_WORLD, {0, 0, 0}, {true, false, true}, false), {}};
  s.ctx.domain = subdomain_per_rank(s.decomp, {6, 5, 4});
  s.ctx.grid = local_grid(s.ctx.domain.extent, halo_widths::uniform(2));
  s.ctx.periodic = s.decomp.periodic();
  s.ctx.alg = alg;
  return s;
}

template <class T>
void expect_exact(const std::vector<T*>& fields, const verify_context& ctx) {
  size_t total = 0;
  auto bad = check_fields(fields, ctx, 1, 3, &total);
  EXPECT_EQ(total, 0u) << (bad.empty() ? "" : describe(bad.front()));
}

template <class T>
void vector_and_braced_list() {
  for (auto alg : {algorithm::standard, algorithm::staged}) {
    auto s = make_setup(alg);
    std::vector<T> u(s.ctx.grid.points()), v(s.ctx.grid.points());
    std::vector<T*> fields{u.data(), v.data()};

    fill_fields(fields, s.ctx, 1);
    halo_exchange from_vector(s.decomp, s.ctx.grid, fields, {.alg = alg});
    from_vector.exchange();
    expect_exact(fields, s.ctx);

    fill_fields(fields, s.ctx, 1);
    halo_exchange from_list(s.decomp, s.ctx.grid, {u.data(), v.data()}, {.alg = alg});
    from_list.start();
    from_list.wait();
    expect_exact(fields, s.ctx);

    fill_fields(fields, s.ctx, 1);
    halo_exchange from_span(s.decomp, s.ctx.grid, std::span<T* const>(fields), {.alg = alg});
    from_span.exchange();
    expect_exact(fields, s.ctx);
  }
}

}  // namespace

TEST(Api, VectorAndBracedListOfDouble) {
  vector_and_braced_list<double>();
}
TEST(Api, VectorAndBracedListOfFloat) {
  vector_and_braced_list<float>();
}

TEST(Api, SharedFieldsFeedShmInPlace) {
  auto s = make_setup(algorithm::standard);
  shared_fields<double> memory(s.decomp, s.ctx.grid, 2);
  auto fields = memory.pointers();
  fill_fields(fields, s.ctx, 1);
  halo_exchange ex(s.decomp, s.ctx.grid, fields, {.transport = parse_transport_choice("shm")});
  EXPECT_EQ(ex.transport_path().rfind("shm+", 0), 0u) << ex.transport_path();
  ex.exchange();
  expect_exact(fields, s.ctx);
}

// The exchange finds node-shared fields by their addresses: in another order,
// or one field of several, they are still read in place; private ones are not.
TEST(Api, SharedFieldsFoundByAddress) {
  auto s = make_setup(algorithm::staged);
  shared_fields<double> memory(s.decomp, s.ctx.grid, 3);
  std::vector<double*> reversed{memory[2], memory[0]};
  fill_fields(reversed, s.ctx, 1);
  halo_exchange ex(s.decomp, s.ctx.grid, reversed, {.transport = parse_transport_choice("shm")});
  EXPECT_EQ(ex.transport_path().rfind("shm+", 0), 0u) << ex.transport_path();
  ex.exchange();
  expect_exact(reversed, s.ctx);

  std::vector<double> heap(s.ctx.grid.points());
  std::vector<double*> mixed{memory[1], heap.data()};
  halo_exchange copied(s.decomp, s.ctx.grid, mixed, {.transport = parse_transport_choice("shm")});
  EXPECT_EQ(copied.transport_path().rfind("shm(outbox)", 0), 0u) << copied.transport_path();

  // Memory shared by other node groups than the exchange's (one rank each) is copied.
  if (s.decomp.size() < 2) return;
  shared_fields<double> alone(s.decomp, s.ctx.grid, 1, 1);
  fill_fields(std::vector<double*>{alone[0]}, s.ctx, 1);
  halo_exchange apart(s.decomp, s.ctx.grid, alone.pointers(),
                      {.transport = parse_transport_choice("shm")});
  EXPECT_EQ(apart.transport_path().rfind("shm(outbox)", 0), 0u) << apart.transport_path();
  apart.exchange();
  expect_exact(alone.pointers(), s.ctx);
}

// What a transport measured when it was built, handed to the next exchange of
// the same plan, is used as given: nothing is measured again, and the
// exchange is as exact.
TEST(Api, TuningAsBuiltRebuildsWithoutMeasuring) {
  auto s = make_setup(algorithm::staged);
  shared_fields<double> memory(s.decomp, s.ctx.grid, 2);
  auto fields = memory.pointers();
  const exchange_options options{.transport = parse_transport_choice("shm")};
  halo_exchange first(s.decomp, s.ctx.grid, memory.pointers(), options);
  const transport_tuning tuning = first.tuning_as_built();
  ASSERT_TRUE(tuning.shm.direct_min_run.has_value());
  ASSERT_TRUE(tuning.shm.push.has_value());
  ASSERT_TRUE(tuning.shm.fetch_ahead.has_value());
  EXPECT_EQ(first.options().tuning.shm.direct_min_run, std::nullopt);  // the options as given

  exchange_options again = options;
  again.tuning = tuning;
  halo_exchange second(s.decomp, s.ctx.grid, memory.pointers(), again);
  const std::string settings = second.transport_settings();
  EXPECT_EQ(settings.find("measured"), std::string::npos) << settings;
  EXPECT_NE(settings.find("tuning.shm.push"), std::string::npos) << settings;
  EXPECT_NE(settings.find("tuning.shm.fetch_ahead"), std::string::npos) << settings;
  EXPECT_EQ(second.tuning_as_built().shm.direct_min_run, tuning.shm.direct_min_run);
  EXPECT_EQ(second.tuning_as_built().shm.push, tuning.shm.push);
  fill_fields(fields, s.ctx, 1);
  second.exchange();
  expect_exact(fields, s.ctx);
}

TEST(Api, ErrorsAreTyped) {
  auto s = make_setup(algorithm::standard);
  std::vector<double> u(s.ctx.grid.points());
  // An unknown transport: agreed on by all ranks, before any exchange.
  EXPECT_THROW(halo_exchange(s.decomp, s.ctx.grid, {u.data()}, {.transport = parse_transport_choice("carrier-pigeon")}),
               usage_error);
  // No fields, and a halo wider than the sub-domain (the same on every rank here).
  EXPECT_THROW(halo_exchange(s.decomp, s.ctx.grid, std::vector<double*>{}), usage_error);
  local_grid too_wide(s.ctx.domain.extent, halo_widths::uniform(5));
  EXPECT_THROW(halo_exchange(s.decomp, too_wide, {u.data()}), usage_error);

  halo_exchange ex(s.decomp, s.ctx.grid, {u.data()});
  EXPECT_THROW(ex.wait(), std::logic_error);
  ex.start();
  EXPECT_THROW(ex.start(), std::logic_error);
  ex.wait();
}

// Every HALOX_* variable reaches the exchange through with_environment, so
// options() shows what the environment set; an option set in code wins, and
// a malformed value is a usage_error naming the variable on every rank.
TEST(Api, EnvironmentShowsInTheOptions) {
  auto s = make_setup(algorithm::standard);
  std::vector<double> u(s.ctx.grid.points());
  scoped_environment environment;
  environment.set("HALOX_RANKS_PER_NODE", "1");
  environment.set("HALOX_TIMEOUT", "123");
  environment.set("HALOX_SHM_PUSH", "0");
  environment.set("HALOX_RMA_DIRECT_MIN_RUN", "64");
  {
    halo_exchange ex(s.decomp, s.ctx.grid, {u.data()});
    EXPECT_EQ(ex.options().ranks_per_node, 1);
    EXPECT_EQ(ex.options().timeout_seconds, 123);
    EXPECT_EQ(ex.options().tuning.shm.push, std::optional<bool>(false));
    EXPECT_EQ(ex.options().tuning.rma.direct_min_run, std::optional<size_t>(64));
    EXPECT_EQ(ex.options().tuning.shm.direct_min_run, std::nullopt);
  }
  exchange_options set;
  set.ranks_per_node = s.decomp.size();
  set.tuning.shm.push = true;
  EXPECT_EQ(with_environment(set).ranks_per_node, s.decomp.size());
  EXPECT_EQ(with_environment(set).tuning.shm.push, std::optional<bool>(true));

  environment.set("HALOX_RANKS_PER_NODE", "two");
  try {
    halo_exchange ex(s.decomp, s.ctx.grid, {u.data()});
    ADD_FAILURE() << "a malformed HALOX_RANKS_PER_NODE was taken";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("HALOX_RANKS_PER_NODE='two'"), std::string::npos)
        << e.what();
  }
}

// The environment table lists every variable once, the knobs' rows from transport_knobs.
TEST(Api, EnvironmentTableHoldsEveryKnob) {
  std::set<std::string_view> names;
  for (const auto& v : environment_variables()) names.insert(v.name);
  EXPECT_EQ(names.size(), environment_variables().size());
  for (const auto& knob : transport_knobs) EXPECT_TRUE(names.contains(knob.variable)) << knob.variable;
  EXPECT_TRUE(names.contains("HALOX_RANKS_PER_NODE") && names.contains("HALOX_CUDA_AWARE_MPI"));
}
