// The hardware as hwloc sees it, where each rank sits in it, and which ranks
// share a node.
//
// A topology describes one node: this machine, an hwloc XML file, or an hwloc
// synthetic description ("pack:2 numa:4 l3:4 core:4 pu:1"), so that layouts for
// machines we do not have can be planned and tested here. A rank's place is
// found from its CPU binding: the real one, or one assumed by a policy (rank i
// of a node on core i, ...) when the topology is not this machine or the job
// is oversubscribed.
#pragma once

#include <mpi.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace halox {

// Levels of the memory hierarchy, bottom-up. `slot` is not hardware: the ranks
// of a node numbered by their rank on the node (needs no binding).
enum class level { slot, hwthread, core, l1, l2, l3, numa, socket, node };
inline constexpr int level_count = 9;
inline constexpr std::array<level, level_count> all_levels{
    level::slot, level::hwthread, level::core,   level::l1,  level::l2,
    level::l3,   level::numa,     level::socket, level::node};
inline int index_of(level l) {
  return static_cast<int>(l);
}
std::string to_string(level l);     // option spelling: "core", "l3", "numa", ...
std::string object_name(level l);   // "core", "L3 cache", "NUMA node", ...
std::string objects_name(level l);  // plural
bool is_hardware(level l);          // hwthread .. socket

// Where one rank sits. Object numbers are hwloc logical indices within the
// rank's node (the node entry is the node index, the slot entry the local rank).
struct rank_placement {
  int rank = 0;                           // in the communicator the placements were gathered from
  int node = 0;                           // node index, nodes numbered by their lowest rank
  int local_rank = 0;                     // rank on the node
  std::vector<int> pus;                   // bound hardware threads (logical), sorted
  std::array<int, level_count> object{};  // object holding the first bound PU; -1: no such level
  std::array<bool, level_count> spans{};  // binding reaches beyond that one object
  bool unbound = false;                   // bound to every hardware thread of the node

  // The object holding the whole binding: -1 when the level is absent, -2 when
  // the binding spans several objects.
  int domain(level l) const;
  // "0-3,8" style list of the bound hardware threads.
  std::string binding() const;
};

// The L2 cache of this machine in bytes, found once: from the processor through
// glibc where it answers, else from hwloc; 0 when neither knows.
size_t this_machine_l2_bytes();

// How ranks are assumed to be bound when the real binding is not used.
enum class binding_policy {
  real,      // the process's own binding (this machine only)
  spread,    // rank i of n gets cores [i*c, (i+1)*c) with c = cores/n (srun -c c), else threads
  core,      // rank i on core i (mpirun --bind-to core --map-by core)
  hwthread,  // rank i on hardware thread i
};
binding_policy parse_binding_policy(const std::string& name);  // throws usage_error
std::string to_string(binding_policy p);

class topology {
 public:
  // "" or "this": this machine; "synthetic:<hwloc synthetic description>";
  // anything else: an hwloc XML file. Throws usage_error.
  static topology load(const std::string& source);

  topology(topology&&) noexcept;
  topology& operator=(topology&&) noexcept;
  ~topology();

  const std::string& source() const { return source_; }
  bool is_this_machine() const { return this_machine_; }
  int count(level l) const;  // objects per node; 0 when absent (slot: 0, node: 1)
  // Bytes of the first cache of a cache level (l1, l2, l3); 0 when absent.
  size_t cache_bytes(level l) const;
  // "2 sockets, 8 NUMA nodes, 32 L3 caches, 128 cores, 128 hardware threads"
  std::string summary() const;
  // The hardware threads (logical indices) of one object.
  std::vector<int> pus_of(level l, int index) const;

  // The hardware threads this process is bound to (this machine only).
  std::vector<int> current_binding() const;
  // Where a rank bound to `pus` (logical indices) sits. Throws usage_error for
  // an empty or out-of-range binding.
  rank_placement place(const std::vector<int>& pus) const;
  // The binding `policy` gives to rank local_rank of ranks_per_node.
  // Throws usage_error when the node cannot hold that many ranks that way.
  std::vector<int> assumed_binding(binding_policy policy, int local_rank, int ranks_per_node) const;

 private:
  struct impl;
  explicit topology(std::unique_ptr<impl> p, std::string source, bool this_machine);
  std::unique_ptr<impl> impl_;
  std::string source_;
  bool this_machine_ = false;
};

// Pure: the placements of nodes x ranks_per_node ranks, rank r on node
// r / ranks_per_node, each node bound by `policy` (not `real`).
std::vector<rank_placement> assumed_placements(const topology& topo, binding_policy policy,
                                               int nodes, int ranks_per_node);

// The one rule for a node group size: 0 (shared-memory nodes) or a number
// that divides the ranks of MPI_COMM_WORLD (once MPI is initialized); throws
// usage_error naming the option or, from_environment, HALOX_RANKS_PER_NODE.
void check_ranks_per_node(int ranks_per_node, bool from_environment);

// HALOX_RANKS_PER_NODE, read here and nowhere else: its group size when set
// and not 0. Throws usage_error for a value that is not a count or breaks
// the rule of check_ranks_per_node. This rank's environment only.
std::optional<int> ranks_per_node_from_environment();

// The node group size to use: `ranks_per_node` if positive, else the
// environment variable HALOX_RANKS_PER_NODE, else 0 (shared-memory nodes).
// Collective (rank 0's environment decides); throws usage_error on all ranks
// for a bad value or one that does not divide the number of ranks.
int resolve_ranks_per_node(MPI_Comm comm, int ranks_per_node);

// The ranks of comm on this rank's node (caller frees): the shared-memory node
// (MPI_COMM_TYPE_SHARED) when the resolved group size is 0, else groups of
// that many consecutive MPI_COMM_WORLD ranks (which must lie within one
// shared-memory node). Ranks keep their order. Collective; throws usage_error
// identically on all ranks.
MPI_Comm node_communicator(MPI_Comm comm, int ranks_per_node = 0);

// This rank's node: its index (nodes numbered by their lowest rank in comm),
// the number of nodes, and its rank and size on the node. Collective over comm.
struct node_info {
  int index = 0, count = 1, local_rank = 0, local_size = 1;
};
node_info describe_node(MPI_Comm comm, MPI_Comm node_comm);

}  // namespace halox
