// The process grid: who is where, who are the neighbours.
#pragma once

#include <mpi.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "halox/grid.hpp"

namespace halox {

// Rank numbering order: which dimension runs fastest. "XYZ" means x fastest,
// then y, then z. MPI_Cart_create numbers row-major, i.e. "ZYX".
struct rank_order {
  std::array<int, 3> fastest_first{0, 1, 2};
  static rank_order parse(const std::string& name);  // throws usage_error
  static rank_order mpi_cart() { return {{2, 1, 0}}; }
  std::string name() const;
  bool operator==(const rank_order&) const = default;
};

// Linear index of coords on a grid of dims, numbered in the given order.
int linear_index(const ivec3& coords, const ivec3& dims, const rank_order& order);
ivec3 coords_of(int index, const ivec3& dims, const rank_order& order);

// Owns a communicator in which rank r sits at coords_of(r, dims, order).
class decomposition {
 public:
  decomposition() = default;
  // Takes ownership of comm; its ranks must already be numbered by `order`.
  decomposition(MPI_Comm comm, const ivec3& dims, const std::array<bool, 3>& periodic,
                const rank_order& order, std::string kind);
  decomposition(decomposition&& other) noexcept;
  decomposition& operator=(decomposition&& other) noexcept;
  decomposition(const decomposition&) = delete;
  decomposition& operator=(const decomposition&) = delete;
  ~decomposition();

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const ivec3& dims() const { return dims_; }
  const ivec3& coords() const { return coords_; }
  const std::array<bool, 3>& periodic() const { return periodic_; }
  const rank_order& order() const { return order_; }
  const std::string& kind() const { return kind_; }

  int rank_of(const ivec3& coords) const { return linear_index(coords, dims_, order_); }
  // The neighbour in a direction, with periodic wrap; none across an open boundary.
  std::optional<int> neighbor(const ivec3& direction) const;
  // A plain MPI Cartesian communicator with the same coordinates for every
  // process (caller frees it).
  MPI_Comm export_cartesian() const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  ivec3 dims_{1, 1, 1}, coords_{0, 0, 0};
  std::array<bool, 3> periodic_{true, true, true};
  rank_order order_{};
  std::string kind_ = "cart";
};

// MPI_Dims_create / MPI_Cart_create: dims entries of 0 are chosen by MPI.
// Throws usage_error (identically on all ranks) when dims cannot fit size.
decomposition make_cart_decomposition(MPI_Comm parent, ivec3 dims,
                                      const std::array<bool, 3>& periodic, bool reorder);

// Splits `global` cells over `parts` ranks, the remainder spread one cell each
// over the first ranks. Returns {offset, size} of part `index`.
std::pair<int, int> split_extent(int global, int parts, int index);

// This rank's sub-domain of a global domain.
struct subdomain {
  ivec3 offset{0, 0, 0};   // global coordinate of local (0,0,0)
  ivec3 extent{0, 0, 0};   // interior cells
  ivec3 global{0, 0, 0};   // global domain
};
subdomain subdomain_per_rank(const decomposition& d, const ivec3& per_rank);
subdomain subdomain_of_global(const decomposition& d, const ivec3& global);

// A code's own rank grid, as it numbers it, with this rank's sub-domain as
// the code holds it (`mine`: its first cell, its cells, the global grid).
// The ranks of comm (duplicated) sit at coords_of(rank, dims, order); order
// "XYZ" numbers x fastest (as CloverLeaf numbers its chunks), "ZYX" z fastest
// (as MPI_Cart_create). Collective: the sub-domains are checked to tile the
// global grid as the order places the ranks (require_tiling), so a wrong
// order is refused on every rank before anything moves; a usage error on
// every rank also when dims do not fit the ranks.
decomposition adopt_decomposition(MPI_Comm comm, const ivec3& dims,
                                  const std::array<bool, 3>& periodic, const rank_order& order,
                                  const subdomain& mine);
// The same from each rank's coordinates as the code computed them: the order
// they follow is found among the six; a usage error on every rank when two
// ranks claim the same coordinates or the coordinates follow no order.
decomposition adopt_decomposition(MPI_Comm comm, const ivec3& dims,
                                  const std::array<bool, 3>& periodic, const ivec3& my_coords,
                                  const subdomain& mine);

// Collective, with the face neighbours only: checks that the sub-domains the
// ranks hold (a code's own, `mine` on each rank) tile the global grid as d
// places the ranks: the neighbour above in each dimension starts where this
// rank ends (across the wrap of a periodic one), shares its extent in the
// other dimensions, the first rank of a dimension starts at 0 and the last
// ends at the global extent. Throws usage_error on every rank, naming both
// layouts (d's rank order, and the coordinates the code's offsets imply).
void require_tiling(const decomposition& d, const subdomain& mine);
// How that error tells a code to adopt the order its sub-domains follow, as
// C++ spells it (the C API, the Fortran module and the Python package put
// their own spelling in its place).
inline constexpr std::string_view adopt_order_advice =
    "adopt_decomposition(comm, dims, periodic, rank_order::parse(\"XYZ\"), mine)";

}  // namespace halox
