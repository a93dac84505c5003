#include <unistd.h>

#include <fmt/core.h>

#include <fstream>
#include <functional>
#include <numeric>
#include <string>

#include "halox/extend/topology.hpp"
#include "halox/extend/transport.hpp"

namespace halox {

namespace {

// Ranks of different MPI nodes may still share one machine's cores (hosts made
// of containers or network namespaces, which MPI sees as nodes of their own):
// the kernel's boot id names the machine. Collective over comm.
int ranks_on_this_machine(MPI_Comm comm) {
  std::string machine;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> machine;
  if (machine.empty()) {
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    machine = host;
  }
  const int color = static_cast<int>(std::hash<std::string>{}(machine) & 0x7fffffff);
  MPI_Comm same_machine = MPI_COMM_NULL;
  MPI_Comm_split(comm, color, 0, &same_machine);
  int size = 1;
  MPI_Comm_size(same_machine, &size);
  MPI_Comm_free(&same_machine);
  return size;
}

}  // namespace

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
  // Oversubscription is a property of the machine, whatever the grouping.
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  node.oversubscribed = cores > 0 && ranks_on_this_machine(comm) > cores;
  return node;
}

std::string describe_message(const message& m, std::string_view from_or_to,
                             std::string_view transport) {
  return fmt::format("a message {} rank {} (direction {},{},{}, tag {}, {})", from_or_to, m.peer,
                     m.direction[0], m.direction[1], m.direction[2], m.tag, transport);
}

}  // namespace halox
