#include <unistd.h>

#include <fmt/core.h>

#include <numeric>

#include "halox/topology.hpp"
#include "halox/transport.hpp"

namespace halox {

node_membership make_node_membership(MPI_Comm comm, int ranks_per_node) {
  node_membership node;
  node.comm = node_communicator(comm, ranks_per_node);
  MPI_Comm_rank(node.comm, &node.rank);
  MPI_Comm_size(node.comm, &node.size);
  int comm_size = 1;
  MPI_Comm_size(comm, &comm_size);
  MPI_Group node_group, comm_group;
  MPI_Comm_group(node.comm, &node_group);
  MPI_Comm_group(comm, &comm_group);
  std::vector<int> node_ranks(static_cast<size_t>(node.size)), comm_ranks(node_ranks.size());
  std::iota(node_ranks.begin(), node_ranks.end(), 0);
  MPI_Group_translate_ranks(node_group, node.size, node_ranks.data(), comm_group, comm_ranks.data());
  MPI_Group_free(&node_group);
  MPI_Group_free(&comm_group);
  node.node_rank_of.assign(static_cast<size_t>(comm_size), -1);
  for (int r = 0; r < node.size; ++r) node.node_rank_of[static_cast<size_t>(comm_ranks[static_cast<size_t>(r)])] = r;
  // Oversubscription is a property of the real node, whatever the grouping.
  int shared_size = node.size;
  if (resolve_ranks_per_node(comm, ranks_per_node) > 0) {
    MPI_Comm shared = MPI_COMM_NULL;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    MPI_Comm_size(shared, &shared_size);
    MPI_Comm_free(&shared);
  }
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  node.oversubscribed = cores > 0 && shared_size > cores;
  return node;
}

std::string describe_message(const message& m, std::string_view from_or_to,
                             std::string_view transport) {
  return fmt::format("a message {} rank {} (direction {},{},{}, tag {}, {})", from_or_to, m.peer,
                     m.direction[0], m.direction[1], m.direction[2], m.tag, transport);
}

}  // namespace halox
