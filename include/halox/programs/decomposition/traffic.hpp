// Bytes per exchange by the highest hardware boundary they cross: an exact
// count over all ranks, no MPI needed.
//
// Reference: every rank sends, for each region of the exchange (26 for
// standard, 6 faces, 3 x 2 extended slabs for staged), cells x fields x element
// size bytes to the rank at its coordinates + direction (periodic wrap; nobody
// across an open boundary). Sender and receiver are compared level by level
// from the top: different nodes -> node; else the first of socket, NUMA node,
// L3 (then L2, L1, core) whose objects differ names the boundary crossed
// (L2, L1 and core count as core); none differ (same rank, or hardware threads
// of one core) -> none. A binding that spans several objects of a level counts
// as crossing it. Levels need not nest: a NUMA node holding two sockets is fine.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "halox/programs/decomposition/shape.hpp"
#include "halox/extend/topology.hpp"

namespace halox {

enum class boundary { none, core, l3, numa, socket, node };
inline constexpr int boundary_count = 6;
// Column names: "same-core", "cross-core", "cross-L3", "cross-NUMA", "cross-socket", "cross-node".
std::string to_string(boundary b);

struct traffic {
  std::array<long long, boundary_count> total{};         // bytes per exchange, all ranks
  std::array<long long, boundary_count> max_per_rank{};  // max over ranks of the bytes it sends
  std::array<long long, boundary_count> messages{};      // messages per exchange, all ranks
  long long max_rank_bytes = 0;                          // max over ranks of all it sends
  long long total_bytes() const;
};

struct message_size {
  ivec3 direction{0, 0, 0};
  long long bytes = 0;
};
// The messages one rank sends per exchange (all steps).
std::vector<message_size> messages_per_rank(const exchange_shape& shape);

boundary crossed_boundary(const rank_placement& a, const rank_placement& b);

// What one rank sends per exchange, by the highest boundary crossed.
struct rank_traffic {
  std::array<long long, boundary_count> bytes{};
  std::array<long long, boundary_count> messages{};
};

// Per rank (index = rank): rank r sits at coords[r] of the grid dims, on placements[r].
std::vector<rank_traffic> traffic_per_rank(const std::vector<ivec3>& coords, const ivec3& dims,
                                           const std::array<bool, 3>& periodic,
                                           const std::vector<rank_placement>& placements,
                                           const exchange_shape& shape);

// Exact count over all ranks (traffic_per_rank summed).
traffic count_traffic(const std::vector<ivec3>& coords, const ivec3& dims,
                      const std::array<bool, 3>& periodic,
                      const std::vector<rank_placement>& placements, const exchange_shape& shape);

// "12.3 MB" style (decimal units, 3 significant digits).
std::string format_bytes(long long bytes);

// A fixed-width table: one row per layout with its total and max-per-rank lines.
std::string traffic_table(const std::vector<std::pair<std::string, traffic>>& rows);

}  // namespace halox
