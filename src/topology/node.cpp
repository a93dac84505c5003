// Which ranks share a node: shared-memory nodes, or groups of consecutive ranks
// (to test and plan multi-node layouts on one machine).
#include <fmt/core.h>

#include <optional>
#include <string>
#include <string_view>

#include "common/yielding_mpi.hpp"
#include "halox/common/environment.hpp"
#include "halox/common/error.hpp"
#include "halox/extend/topology.hpp"

namespace halox {

constexpr std::string_view ranks_per_node_variable = "HALOX_RANKS_PER_NODE";

void check_ranks_per_node(int ranks_per_node, bool from_environment) {
  const auto named = from_environment
                         ? fmt::format("{}={}", ranks_per_node_variable, ranks_per_node)
                         : fmt::format("ranks_per_node {}", ranks_per_node);
  if (ranks_per_node < 0) throw usage_error(fmt::format("{}: must be 0 or more", named));
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized || ranks_per_node == 0) return;
  int world_size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (world_size % ranks_per_node != 0)
    throw usage_error(
        fmt::format("{} does not divide the {} ranks into whole nodes", named, world_size));
}

std::optional<int> ranks_per_node_from_environment() {
  const auto n = environment_count(ranks_per_node_variable);
  if (!n || *n == 0) return std::nullopt;
  if (*n > (size_t{1} << 30))
    throw usage_error(fmt::format("{}={} is too large", ranks_per_node_variable, *n));
  const int value = static_cast<int>(*n);
  check_ranks_per_node(value, true);
  return value;
}

int resolve_ranks_per_node(MPI_Comm comm, int ranks_per_node) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Rank 0 decides, so that ranks with different environments cannot split differently.
  int decided[2] = {ranks_per_node, 0};  // value, from_environment
  std::string problem;
  if (rank == 0 && ranks_per_node == 0) {
    try {
      if (const auto n = ranks_per_node_from_environment()) {
        decided[0] = *n;
        decided[1] = 1;
      }
    } catch (const usage_error& e) {
      problem = e.what();
    }
  }
  require_all(comm, problem);
  yielding_bcast(decided, 2, MPI_INT, 0, comm);
  check_ranks_per_node(decided[0], decided[1] != 0);
  return decided[0];
}

MPI_Comm node_communicator(MPI_Comm comm, int ranks_per_node) {
  const int group_size = resolve_ranks_per_node(comm, ranks_per_node);
  int rank = 0, world_rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm shared = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
  if (group_size == 0) return shared;

  // Groups are cut from MPI_COMM_WORLD ranks, so that the same ranks form a
  // node whichever (reordered) communicator asks.
  MPI_Comm group = MPI_COMM_NULL;
  MPI_Comm_split(comm, world_rank / group_size, rank, &group);
  // A group must not straddle shared-memory nodes: on-node transports rely on it.
  int shared_id = world_rank;
  yielding_allreduce(MPI_IN_PLACE, &shared_id, 1, MPI_INT, MPI_MIN, shared);
  int lowest = shared_id, highest = shared_id;
  yielding_allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, group);
  yielding_allreduce(MPI_IN_PLACE, &highest, 1, MPI_INT, MPI_MAX, group);
  MPI_Comm_free(&shared);
  std::string error;
  if (lowest != highest) {
    int first = world_rank / group_size * group_size;
    error = fmt::format(
        "ranks-per-node {}: ranks {}-{} lie on more than one shared-memory node; a node group "
        "must lie within one node (choose a divisor of the ranks per node)",
        group_size, first, first + group_size - 1);
  }
  try {
    require_all(comm, error);
  } catch (...) {
    MPI_Comm_free(&group);
    throw;
  }
  return group;
}

node_info describe_node(MPI_Comm comm, MPI_Comm node_comm) {
  node_info info;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_rank(node_comm, &info.local_rank);
  MPI_Comm_size(node_comm, &info.local_size);
  // Node leaders (local rank 0, the lowest rank of the node) number the nodes.
  MPI_Comm leaders = MPI_COMM_NULL;
  MPI_Comm_split(comm, info.local_rank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
  int index_count[2] = {0, 1};
  if (leaders != MPI_COMM_NULL) {
    MPI_Comm_rank(leaders, &index_count[0]);
    MPI_Comm_size(leaders, &index_count[1]);
    MPI_Comm_free(&leaders);
  }
  yielding_bcast(index_count, 2, MPI_INT, 0, node_comm);
  info.index = index_count[0];
  info.count = index_count[1];
  return info;
}

}  // namespace halox
