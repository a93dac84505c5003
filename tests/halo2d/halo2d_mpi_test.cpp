// halox-halo2d with real peers: the mesh agrees with MPI_Cart_create, every
// test exchanges verified data, and verification catches injected faults.
#include <gtest/gtest.h>
#include <mpi.h>

#include "halox/common/error.hpp"
#include "halox_programs/halo2d/benchmark.hpp"
#include "halox_programs/halo2d/mesh.hpp"

using namespace halox::halo2d;

namespace {

mesh2d world_mesh(bool periodic) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int dims[2] = {0, 0};
  MPI_Dims_create(size, 2, dims);
  return {{dims[0], dims[1]}, periodic};
}

measure_settings quick(fault_kind fault = fault_kind::none) {
  measure_settings s;
  s.repetitions = 2;
  s.warmup = 1;
  s.trials = 1;
  s.fault = fault;
  return s;
}

}  // namespace

TEST(Halo2dMpi, NeighboursAreThoseOfMpiCartShift) {
  for (bool periodic : {true, false}) {
    auto mesh = world_mesh(periodic);
    benchmark bench(MPI_COMM_WORLD, mesh, false, 1);
    EXPECT_EQ(bench.rank(), rank_of(mesh, bench.coords()));
    for (int dim = 0; dim < 2; ++dim) {
      int lower = 0, upper = 0;
      MPI_Cart_shift(bench.comm(), dim, 1, &lower, &upper);
      auto minus = neighbor(mesh, bench.coords(), 2 * dim);
      auto plus = neighbor(mesh, bench.coords(), 2 * dim + 1);
      EXPECT_EQ(lower, minus ? rank_of(mesh, *minus) : MPI_PROC_NULL);
      EXPECT_EQ(upper, plus ? rank_of(mesh, *plus) : MPI_PROC_NULL);
    }
  }
}

TEST(Halo2dMpi, EveryTestExchangesVerifiedData) {
  auto mesh = world_mesh(true);
  const std::vector<size_t> sizes{0, 65536 + 3};  // empty, and not a whole number of words
  benchmark bench(MPI_COMM_WORLD, mesh, false, sizes.back());
  for (auto test : all_tests)
    for (int k : {2, 4, 8})
      for (auto bytes : sizes) {
        measurement m;
        ASSERT_NO_THROW(m = bench.measure(test, k, bytes, quick()))
            << name_of(test) << " k=" << k << " " << bytes << " B";
        EXPECT_EQ(m.trial_seconds.size(), 1u);
        EXPECT_GT(m.seconds_per_exchange, 0.0);
        // The reported time is the same number on every rank.
        double mine = m.seconds_per_exchange, lowest = 0;
        MPI_Allreduce(&mine, &lowest, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
        EXPECT_EQ(lowest, mine);
      }
}

TEST(Halo2dMpi, OpenMeshWhereItFits) {
  auto mesh = world_mesh(false);
  if (!mesh_requirement(mesh, 2).empty()) GTEST_SKIP() << "needs at least 3 ranks";
  benchmark bench(MPI_COMM_WORLD, mesh, false, 1024);
  for (auto test : all_tests)
    for (int k : {2, 4, 8})
      if (mesh_requirement(mesh, k).empty()) {
        EXPECT_NO_THROW(bench.measure(test, k, 1024, quick())) << name_of(test) << " k=" << k;
      }
}

TEST(Halo2dMpi, ReorderedMeshStillVerifies) {
  benchmark bench(MPI_COMM_WORLD, world_mesh(true), true, 256);
  for (auto test : {test_kind::phased, test_kind::sendrecv})
    EXPECT_NO_THROW(bench.measure(test, 8, 256, quick()));
}

TEST(Halo2dMpi, InjectedFaultsFailOnEveryRank) {
  benchmark bench(MPI_COMM_WORLD, world_mesh(true), false, 64);
  for (auto fault : {fault_kind::corrupt, fault_kind::stale})
    for (auto test : {test_kind::all, test_kind::single, test_kind::phased, test_kind::persistent})
      for (size_t bytes : {1u, 64u}) {
        try {
          bench.measure(test, 4, bytes, quick(fault));
          ADD_FAILURE() << "fault not detected: " << name_of(test) << " " << bytes << " B";
        } catch (const halox::run_error& e) {
          EXPECT_NE(std::string(e.what()).find("verification failed"), std::string::npos);
          if (fault == fault_kind::stale) {
            EXPECT_NE(std::string(e.what()).find("stale"), std::string::npos) << e.what();
          }
        }
      }
  // Zero bytes carry no content: a corrupting sender cannot change them.
  EXPECT_NO_THROW(bench.measure(test_kind::all, 4, 0, quick(fault_kind::corrupt)));
}
