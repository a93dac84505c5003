// Hardware-aware rank grids (ghexbench's hwcart): one 3-D grid per level of the
// memory hierarchy, from the bottom up, the node level last.
//
// Reference: let l_0 < l_1 < ... < l_m = node be the levels given, g_i their
// grids. Inside each object of level l_{i+1} (for the top level: inside each
// node), the occupied objects of level l_i, taken in hwloc logical order, are
// numbered k = 0, 1, ... and sit at coords_of(k, g_i, order); nodes are
// numbered by their lowest rank. A rank's global coordinate is
//     c[d] = sum_i coords_i[d] * prod_{j<i} g_j[d],
// so the ranks sharing an object of any level form a compact block of
// prod_{j<i} g_j ranks. The global grid is prod_i g_i; the hw communicator
// numbers ranks by linear_index(c, dims, order).
#pragma once

#include <mpi.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "halox/decomposition.hpp"
#include "halox/extend/topology.hpp"

namespace halox {

struct level_grid {
  level where = level::node;
  ivec3 dims{1, 1, 1};
};

struct hw_grids {
  std::vector<level_grid> levels;  // bottom-up, each level once, the node level last

  // Sorts bottom-up and adds a 1x1x1 node level when absent. Throws usage_error
  // for non-positive entries or a level given twice.
  static hw_grids make(std::vector<level_grid> levels);
  ivec3 dims() const;        // the global rank grid
  ivec3 node_block() const;  // the ranks of one node
  int ranks() const;
  int nodes() const;
  int ranks_per_node() const;
  const level_grid* find(level l) const;
  // "--node 3 3 3 --socket 1 1 2 ..." top-down as in ghexbench's hwcart; sub-node levels
  // of 1x1x1 are left out unless keep_trivial.
  std::string options(bool keep_trivial = false) const;
};

// Pure. The coordinates, inside the node's block, of the ranks of one node
// (placements in local-rank order). Throws usage_error naming the level, what
// was expected and what was found.
std::vector<ivec3> map_node(const std::vector<rank_placement>& node_ranks, const hw_grids& grids,
                            const rank_order& order);

// Pure. The global coordinates of all ranks (placements indexed by rank, nodes
// numbered 0..n-1). Throws usage_error like map_node, and for a wrong number
// of ranks or nodes.
std::vector<ivec3> map_ranks(const std::vector<rank_placement>& ranks, const hw_grids& grids,
                             const rank_order& order);

// The global coordinate of the first rank of a node's block.
ivec3 node_origin(int node, const hw_grids& grids, const rank_order& order);

// The identical-on-all-ranks checks of map_ranks: number of ranks and nodes.
void check_rank_count(const hw_grids& grids, int ranks);
void check_node_count(const hw_grids& grids, int nodes);

// Where the placements of an MPI job come from.
struct placement_options {
  std::string topology;                   // "" = this machine, XML file, "synthetic:..."
  std::optional<binding_policy> binding;  // unset: real on this machine, else spread
  int ranks_per_node = 0;                 // 0: shared-memory nodes or HALOX_RANKS_PER_NODE
};
// Throws usage_error for a real binding on a topology that is not this machine.
binding_policy effective_binding(const placement_options& options);

// Collective: this rank's node and the placements of the ranks on it (in
// local-rank order). Throws usage_error identically on all ranks.
struct node_view {
  node_info node;
  std::vector<rank_placement> ranks;
  std::string topology_summary;
};
node_view gather_node_view(MPI_Comm world, const placement_options& options);

// Collective: every rank's placement, on root only (indexed by rank in comm).
std::vector<rank_placement> gather_placements(MPI_Comm comm, const rank_placement& mine, int root);

// Collective: the hw decomposition of world. Every check happens before the
// communicator is split; errors are usage_error on all ranks.
decomposition make_hw_decomposition(MPI_Comm world, const hw_grids& grids, const rank_order& order,
                                    const std::array<bool, 3>& periodic,
                                    const placement_options& placement,
                                    const std::string& kind = "hw");
// The same from a node view already gathered (e.g. by auto).
decomposition make_hw_decomposition(MPI_Comm world, const hw_grids& grids, const rank_order& order,
                                    const std::array<bool, 3>& periodic, const node_view& view,
                                    const std::string& kind);

}  // namespace halox
