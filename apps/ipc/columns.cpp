// halox-ipc's set-up: one node, the owner/peer groups and one column per mechanism.
#include <fmt/core.h>

#include <algorithm>

#include "halox/common/error.hpp"
#include "ipc_program.hpp"

namespace halox::ipc_program {

void require_one_node(MPI_Comm world) {
  MPI_Comm node;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_rank = 0, leaders = 0;
  MPI_Comm_rank(node, &node_rank);
  int leader = node_rank == 0 ? 1 : 0;
  MPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, world);
  MPI_Comm_free(&node);
  if (leaders != 1)
    throw usage_error(fmt::format(
        "all ranks must share one node (intra-node mechanisms), but they span {} nodes", leaders));
}

std::unique_ptr<ipc_context> open_context(MPI_Comm world, const ipc_options& o,
                                          const run_plan& plan) {
  // Groups: rank 0 and everybody (one-to-many), or pairs 2k, 2k+1.
  int world_rank = 0;
  MPI_Comm_rank(world, &world_rank);
  MPI_Comm group_comm;
  MPI_Comm_split(world, o.pairs ? world_rank / 2 : 0, world_rank, &group_comm);
  // A pair agrees on its own errors; the run agrees again, or other pairs wait.
  std::unique_ptr<ipc_context> context;
  std::string failed;
  try {
    context = std::make_unique<ipc_context>(group_comm, plan.max_extent);
  } catch (const run_error& e) {
    failed = e.what();
  }
  MPI_Comm_free(&group_comm);
  if (auto agreed = agree_on_error(world, failed); !agreed.empty()) throw run_error(agreed);
  return context;
}

std::vector<column> open_columns(MPI_Comm world, ipc_context& context, const ipc_options& o,
                                 const run_plan& plan) {
  mechanism_options mo;
  mo.max_payload = plan.bufsize;
  mo.chunk_bytes = plan.chunk;
  mo.populate = !o.no_populate;
  std::vector<column> columns;
  for (auto kind : all_mechanisms()) {
    bool selected =
        std::find(plan.mechanisms.begin(), plan.mechanisms.end(), kind) != plan.mechanisms.end();
    if (!selected) continue;
    column c{kind, probe_availability(kind, context), nullptr};
    // Pairs decide alone; the run needs one answer.
    auto failed = agree_on_error(world, c.status.available ? "" : c.status.reason);
    if (!failed.empty()) c.status = {false, failed};
    if (!c.status.available && plan.explicit_mechanisms)
      throw usage_error(
          fmt::format("mechanism {} is not available here: {}", to_string(kind), c.status.reason));
    std::string broken;
    try {
      if (c.status.available) c.mechanism = make_mechanism(kind, context, mo);
    } catch (const run_error& e) {
      broken = e.what();
    }
    if (auto agreed = agree_on_error(world, broken); !agreed.empty()) throw run_error(agreed);
    columns.push_back(std::move(c));
  }
  return columns;
}

}  // namespace halox::ipc_program
