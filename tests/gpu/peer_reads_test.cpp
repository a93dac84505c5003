// cuda-ipc's copy plan without a GPU: every rank reads its halos straight out
// of its on-node owners' fields as plan_peer_reads builds the reads, the
// owners' fields being node-shared host memory here (where cuda-ipc maps
// device memory), run through the kernels' index arithmetic on the host with
// a barrier between stages (where cuda-ipc waits on the owners' events), and
// verified cell by cell.
#include "transport/cuda/peer_reads.hpp"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "cell_fields.hpp"
#include "halox/decomposition.hpp"
#include "halox/field_memory.hpp"
#include "halox/extend/plan.hpp"
#include "halox_programs/verify.hpp"
#include "test_world.hpp"

using namespace halox;

namespace {

using testing_support::world_size;

std::vector<ivec3> rank_grids() {
  switch (world_size()) {
    case 1:
      return {{1, 1, 1}};
    case 2:
      return {{2, 1, 1}, {1, 2, 1}, {1, 1, 2}};
    case 4:
      return {{2, 2, 1}, {4, 1, 1}, {1, 2, 2}};
    default:
      return {{0, 0, 0}};
  }
}

// Returns the wrong cells of this rank after one exchange by peer reads.
size_t exchange_by_peer_reads(const ivec3& dims, const std::array<bool, 3>& periodic,
                              const halo_widths& halo, algorithm alg, field_grouping grouping,
                              std::string& first) {
  auto decomp = make_cart_decomposition(MPI_COMM_WORLD, dims, periodic, false);
  const ivec3 interior{6, 5, 4};
  const local_grid grid(interior, halo);
  constexpr int nfields = 3;
  shared_field_memory memory(decomp, grid.points() * sizeof(double), nfields);
  field_set fields;
  std::vector<double*> typed;
  for (int f = 0; f < nfields; ++f) {
    fields.pointers.push_back(static_cast<std::byte*>(memory.field(f)));
    typed.push_back(static_cast<double*>(memory.field(f)));
  }
  fields.shared = &memory;
  const exchange_plan plan =
      make_plan(decomp, testing_support::cell_fields(grid, nfields, sizeof(double), alg, grouping));
  node_membership node = make_node_membership(decomp.comm(), 0);
  wait_policy waits;
  const transport_tuning tuning;
  const transport_context ctx{plan, decomp.comm(), fields, node, waits, tuning};
  const auto layouts = gather_layouts(plan, {}, node, node_neighbours(plan, node));
  std::string problem;
  const auto stages = device::plan_peer_reads(
      ctx, layouts,
      [&](int peer, int field) -> const std::byte* {
        return memory.segment_of(node.node_rank_of[static_cast<size_t>(peer)]) +
               memory.offset(field);
      },
      problem);
  EXPECT_EQ(problem, "");
  EXPECT_EQ(stages.size(), plan.stages.size());

  const verify_context vctx{grid, subdomain_per_rank(decomp, interior), decomp.periodic(), alg};
  fill_fields(typed, vctx, 0);
  MPI_Barrier(decomp.comm());
  size_t read_bytes = 0, received = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    stages[s].local.run_on_host();
    stages[s].reads.run_on_host();
    read_bytes += stages[s].reads.bytes();
    for (const auto& m : plan.stages[s].recvs) received += m.bytes;
    MPI_Barrier(decomp.comm());  // the owners' next stage reads what this one filled
  }
  EXPECT_EQ(read_bytes, received);
  size_t total = 0;
  const auto bad = check_fields(typed, vctx, 0, 1, &total);
  if (!bad.empty()) first = describe(bad.front());
  MPI_Comm_free(&node.comm);
  return total;
}

}  // namespace

TEST(PeerReads, EveryAlgorithmAndFieldModeFillsEveryHalo) {
  for (const auto& dims : rank_grids())
    for (bool periodic : {true, false})
      for (const auto& halo : {halo_widths::uniform(1), halo_widths{{2, 1, 1}, {1, 2, 0}}})
        for (auto alg : {algorithm::standard, algorithm::staged, algorithm::faces})
          for (auto grouping : {field_grouping::compact, field_grouping::sequence}) {
            std::string first;
            const size_t wrong = exchange_by_peer_reads(dims, {periodic, true, periodic}, halo, alg,
                                                        grouping, first);
            EXPECT_EQ(wrong, 0u) << fmt::format(
                "dims {}x{}x{} periodic {} halo lo {},{},{} hi {},{},{} {} {}: {}", dims[0],
                dims[1], dims[2], periodic, halo.lo[0], halo.lo[1], halo.lo[2], halo.hi[0],
                halo.hi[1], halo.hi[2], to_string(alg), to_string(grouping), first);
          }
}
