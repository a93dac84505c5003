// Automatic choice of the per-level grids (--decomposition auto).
//
// Reference: the node shape lists, bottom-up, how many occupied objects each
// hardware level has per parent object (the same under every parent and on
// every node; uneven or unnested levels are left out). Every way to factor
// those counts and the number of nodes into 3-D grids whose product is the
// global rank grid is scored by the bytes
// per exchange by the boundary they cross, weighted by boundary_weight (the
// node boundary most expensive); the lowest score wins, ties going to the most cubic global grid.
// The numbering order changes which object sits where, never the bytes.
//
// The bytes have a closed form. Take blocks of E ranks per dimension on the
// global grid D. A step of +-1 along d starts from valid_d = D_d ranks
// (periodic) or D_d - 1 (open), and stays inside a block for within_d = valid_d
// if E_d = D_d, else D_d - D_d / E_d of them. Messages in direction delta that
// leave the blocks: (prod_{d: delta_d != 0} valid_d - prod within_d) * prod_{other d} D_d.
// Objects of level l_i hold blocks E_i = prod_{j<i} g_j; the bytes that cross
// the boundary of level l_i leave the blocks of l_i but not those of l_{i+1}.
#pragma once

#include <mpi.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "halox/programs/decomposition/hw.hpp"
#include "halox/programs/decomposition/shape.hpp"
#include "halox/programs/decomposition/traffic.hpp"

namespace halox {

// Auto keeps the global rank grid (MPI_Dims_create's, or the one given): the
// grid fixes the global problem; auto only chooses how its blocks map to the
// hardware.
//
// Relative cost of a byte by the highest boundary it crosses.
inline constexpr std::array<long long, boundary_count> boundary_weight{0, 1, 2, 4, 8, 64};

struct node_shape {
  std::vector<std::pair<level, int>> levels;  // bottom-up, occupied objects per parent
  std::vector<std::string> notes;             // why levels were left out
};
// Pure: the shape of one node from its ranks' placements (local-rank order).
node_shape shape_of_node(const std::vector<rank_placement>& node_ranks);
// Collective: the shape shared by all nodes; when nodes differ, their ranks
// are laid out by slot. Throws usage_error when nodes hold different numbers
// of ranks.
node_shape gather_node_shape(MPI_Comm world, const node_view& view);

// Pure, closed form: bytes per exchange by boundary for hw grids whose levels
// form the whole hierarchy of the placements.
std::array<long long, boundary_count> predicted_traffic(const hw_grids& grids,
                                                        const std::vector<message_size>& messages,
                                                        const std::array<bool, 3>& periodic);
long long weighted_score(const std::array<long long, boundary_count>& bytes);

struct auto_candidate {
  hw_grids grids;
  std::array<long long, boundary_count> bytes{};
  long long score = 0;
};

struct auto_choice {
  hw_grids grids;
  rank_order order;
  node_shape shape;
  int nodes = 1;
  ivec3 global{1, 1, 1};
  long long candidates = 0;
  std::vector<auto_candidate> best;  // best first
  std::string explain() const;
};

// Pure. Throws usage_error when the levels cannot tile the global grid, or
// there are too many candidates to score.
auto_choice choose_auto(const node_shape& shape, int nodes, const ivec3& global,
                        const exchange_shape& exchange, const std::array<bool, 3>& periodic,
                        const rank_order& order);

}  // namespace halox
