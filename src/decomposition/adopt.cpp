// A code's own decomposition: its rank numbering taken as it is, and its
// sub-domains checked against the neighbours halox would exchange with.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "common/yielding_mpi.hpp"
#include "halox/common/error.hpp"
#include "halox/decomposition.hpp"

namespace halox {

namespace {

std::string dims_text(const ivec3& v, char sep = 'x') {
  return fmt::format("{}{}{}{}{}", v[0], sep, v[1], sep, v[2]);
}

std::string fit_problem(MPI_Comm comm, const ivec3& dims) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  for (int d = 0; d < 3; ++d)
    if (dims[d] < 1) return fmt::format("rank grid {} has an entry below 1", dims_text(dims));
  if (dims[0] * dims[1] * dims[2] != size)
    return fmt::format("rank grid {} does not fit {} ranks", dims_text(dims), size);
  return {};
}

const std::array<rank_order, 6>& every_order() {
  static const std::array<rank_order, 6> orders{rank_order::parse("XYZ"), rank_order::parse("XZY"),
                                                rank_order::parse("YXZ"), rank_order::parse("YZX"),
                                                rank_order::parse("ZXY"), rank_order::parse("ZYX")};
  return orders;
}

// What each rank tells its face neighbours of its sub-domain.
struct tile {
  int offset[3], extent[3], global[3], coords[3];
};

tile tile_of(const decomposition& d, const subdomain& s) {
  tile t;
  for (int k = 0; k < 3; ++k) {
    t.offset[k] = s.offset[k];
    t.extent[k] = s.extent[k];
    t.global[k] = s.global[k];
    t.coords[k] = d.coords()[k];
  }
  return t;
}

// The coordinates the code's offsets imply, where its sub-domains are even ("" where not).
std::string implied_coords(const tile& t) {
  ivec3 c{0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    if (t.extent[k] <= 0 || t.offset[k] % t.extent[k] != 0) return {};
    c[k] = t.offset[k] / t.extent[k];
  }
  return dims_text(c, ',');
}

std::string coords_text(const tile& t) {
  return dims_text({t.coords[0], t.coords[1], t.coords[2]}, ',');
}

std::string offset_text(const tile& t) {
  return dims_text({t.offset[0], t.offset[1], t.offset[2]}, ',');
}

// Where the code put a rank's cells, when that disagrees with where the decomposition put the
// rank ("" when the two agree: nothing to say about it).
std::string misplaced(int rank, const tile& t) {
  const std::string implied = implied_coords(t);
  if (implied == coords_text(t)) return {};
  return fmt::format("rank {} sits at coordinates ({}) but holds cells from ({}) on, {}", rank,
                     coords_text(t), offset_text(t),
                     implied.empty() ? "which no position on the grid of the code's extents has"
                                     : fmt::format("which the code's extents put at coordinates ({})",
                                                   implied));
}

std::string mismatch(const decomposition& d, const std::string& what) {
  return fmt::format(
      "the code's sub-domains do not tile the grid as this decomposition places the ranks "
      "(ranks numbered {}, {} fastest, on a {} grid): {}. A code that numbers its ranks in "
      "another order adopts it: {} for x fastest",
      d.order().name(), static_cast<char>('x' + d.order().fastest_first[0]), dims_text(d.dims()),
      what, adopt_order_advice);
}

// The rank's own placement (where it is wrong), then what is wrong with it.
std::string own_mismatch(const decomposition& d, const tile& me, const std::string& what) {
  const std::string placed = misplaced(d.rank(), me);
  if (placed.empty())
    return mismatch(d, fmt::format("rank {} at coordinates ({}) holds cells from ({}) on; {}",
                                   d.rank(), coords_text(me), offset_text(me), what));
  return mismatch(d, placed + "; " + what);
}

// This rank's own checks: extents, the first and last rank of each dimension.
std::string own_problem(const decomposition& d, const tile& me) {
  static const char* names = "xyz";
  for (int k = 0; k < 3; ++k) {
    if (me.extent[k] < 1)
      return fmt::format("rank {} holds {} cells in {}", d.rank(), me.extent[k], names[k]);
    if (d.coords()[k] == 0 && me.offset[k] != 0)
      return own_mismatch(d, me, fmt::format("the first rank in {} must start at 0", names[k]));
    if (d.coords()[k] == d.dims()[k] - 1 && me.offset[k] + me.extent[k] != me.global[k])
      return own_mismatch(d, me,
                          fmt::format("the last rank in {} must end at the global extent {}, not "
                                      "at {}", names[k], me.global[k], me.offset[k] + me.extent[k]));
  }
  return {};
}

// Whether `above`, the neighbour above `me` in dimension k, continues it.
std::string neighbour_problem(const decomposition& d, const tile& me, const tile& above, int k,
                              int above_rank) {
  static const char* names = "xyz";
  const int expected = (me.offset[k] + me.extent[k]) % std::max(me.global[k], 1);
  bool fits = above.offset[k] == expected;
  for (int j = 0; j < 3; ++j)
    fits = fits && above.global[j] == me.global[j] &&
           (j == k || (above.offset[j] == me.offset[j] && above.extent[j] == me.extent[j]));
  if (fits) return {};
  // The neighbour's cells, and where the code's extents put them when that is not where the
  // decomposition put the neighbour.
  const std::string there = implied_coords(above);
  const std::string placed = misplaced(d.rank(), me);
  const std::string neighbour = fmt::format(
      "{}, rank {} at coordinates ({}), holds cells from ({}) on{}, not from {} in {} beside it",
      placed.empty() ? fmt::format("the neighbour above rank {} in {}", d.rank(), names[k])
                     : fmt::format("its neighbour above in {}", names[k]),
      above_rank, coords_text(above), offset_text(above),
      there.empty() || there == coords_text(above)
          ? ""
          : fmt::format(", which the code's extents put at coordinates ({})", there),
      expected, names[k]);
  return mismatch(d, placed.empty() ? neighbour : placed + "; " + neighbour);
}

rank_order order_of_coords(MPI_Comm comm, const ivec3& dims, const ivec3& my_coords) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<int> all(static_cast<size_t>(3 * size));
  yielding_allgather(my_coords.data(), 3, MPI_INT, all.data(), 3, MPI_INT, comm);
  for (const rank_order& order : every_order()) {
    bool follows = true;
    for (int r = 0; r < size && follows; ++r) {
      const ivec3 c{all[3 * r], all[3 * r + 1], all[3 * r + 2]};
      follows = coords_of(r, dims, order) == c;
    }
    if (follows) return order;
  }
  throw usage_error(fmt::format(
      "the ranks' coordinates on the {} grid follow no numbering order (XYZ, ..., ZYX): rank 0 "
      "is at ({}), rank {} at ({})",
      dims_text(dims), dims_text({all[0], all[1], all[2]}, ','), size - 1,
      dims_text({all[3 * size - 3], all[3 * size - 2], all[3 * size - 1]}, ',')));
}

// The ranks numbered in `order`, once the sub-domains are seen to tile the grid so.
decomposition tiled(MPI_Comm comm, const ivec3& dims, const std::array<bool, 3>& periodic,
                    const rank_order& order, const subdomain& mine) {
  MPI_Comm own = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &own);
  decomposition d(own, dims, periodic, order, "code");
  require_tiling(d, mine);
  return d;
}

}  // namespace

decomposition adopt_decomposition(MPI_Comm comm, const ivec3& dims,
                                  const std::array<bool, 3>& periodic, const rank_order& order,
                                  const subdomain& mine) {
  require_all(comm, fit_problem(comm, dims));
  return tiled(comm, dims, periodic, order, mine);
}

decomposition adopt_decomposition(MPI_Comm comm, const ivec3& dims,
                                  const std::array<bool, 3>& periodic, const ivec3& my_coords,
                                  const subdomain& mine) {
  require_all(comm, fit_problem(comm, dims));
  return tiled(comm, dims, periodic, order_of_coords(comm, dims, my_coords), mine);
}

void require_tiling(const decomposition& d, const subdomain& mine) {
  const tile me = tile_of(d, mine);
  std::string problem = own_problem(d, me);
  // Each rank tells its neighbour below in each dimension; the neighbour checks.
  std::vector<MPI_Request> requests;
  std::array<tile, 3> above{};
  std::array<int, 3> above_rank{-1, -1, -1};
  for (int k = 0; k < 3; ++k) {
    ivec3 up{0, 0, 0}, down{0, 0, 0};
    up[k] = 1;
    down[k] = -1;
    const auto up_rank = d.neighbor(up), down_rank = d.neighbor(down);
    if (up_rank) {
      above_rank[static_cast<size_t>(k)] = *up_rank;
      requests.emplace_back();
      MPI_Irecv(&above[static_cast<size_t>(k)], sizeof(tile), MPI_BYTE, *up_rank, 7400 + k,
                d.comm(), &requests.back());
    }
    if (down_rank) {
      requests.emplace_back();
      MPI_Isend(&me, sizeof(tile), MPI_BYTE, *down_rank, 7400 + k, d.comm(), &requests.back());
    }
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  for (int k = 0; k < 3 && problem.empty(); ++k)
    if (above_rank[static_cast<size_t>(k)] >= 0)
      problem = neighbour_problem(d, me, above[static_cast<size_t>(k)], k,
                                  above_rank[static_cast<size_t>(k)]);
  require_all(d.comm(), problem);
}

}  // namespace halox
