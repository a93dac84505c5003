// The staggered mini-app's fields: cell-centred (density, energy, pressure,
// viscosity, sound speed), vertex velocities and face fluxes, with CloverLeaf's
// extents (cells x_min-2:x_max+2, nodes x_min-2:x_max+3, faces one more point
// along their own axis), and the two halo exchanges the app can run: halox's,
// and one written the way CloverLeaf's clover_exchange is (pack each field per
// face, MPI_Isend / MPI_Irecv, unpack; x, then y, then z).
#pragma once

#include <mpi.h>

#include <array>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "halox/decomposition.hpp"
#include "halox/exchange.hpp"
#include "halox/field.hpp"

namespace hydro {

using halox::ivec3;

struct field3d {
  field3d() = default;
  field3d(field3d&&) = default;  // the points stay where they are
  field3d& operator=(field3d&&) = default;
  field3d(const field3d&) = delete;  // a copy would alias the points
  field3d& operator=(const field3d&) = delete;

  std::string name;
  halox::location at = halox::location::cell;
  halox::halo_widths halo;
  halox::local_grid grid;  // the points this rank holds, and the halo
  std::span<double> data;  // in `owned`, or in memory the program allocated (place_at)
  std::vector<double> owned;
  // Moves the points into `memory` (grid.points() doubles), which must outlive the field.
  void place_at(double* memory);
  double& operator()(int x, int y, int z) { return data[grid.index(x, y, z)]; }
  double operator()(int x, int y, int z) const { return data[grid.index(x, y, z)]; }
};

// Indices into the field list, in CloverLeaf's names.
enum field_index {
  density, energy, pressure, viscosity, soundspeed,
  xvel, yvel, zvel,
  vol_flux_x, vol_flux_y, vol_flux_z, mass_flux_x, mass_flux_y, mass_flux_z,
  field_count
};

// A program argument "key=value" as {key, value} (value empty without '=').
std::pair<std::string, std::string> split_argument(const std::string& arg);

std::vector<field3d> make_fields(const halox::decomposition& d, const ivec3& cells);
// One field with CloverLeaf's extents (halo 2 cells each side, one point more
// above along a staggered axis), zero everywhere.
field3d cloverleaf_field(const halox::decomposition& d, const ivec3& cells, std::string name,
                         halox::location at);

// Per axis, the neighbour below [0] and above [1]: its rank (MPI_PROC_NULL
// across an open boundary), and whether there is one.
struct neighbour_ranks {
  std::array<std::array<int, 2>, 3> rank{};
  std::array<std::array<bool, 2>, 3> has{};
};
neighbour_ranks neighbours_of(const halox::decomposition& d);

// Copies a box's rows (x contiguous) between a field and `buffer` from `at`
// on, moving `at` past them: out of the field (pack) or into it (unpack).
void copy_box(field3d& f, const halox::box& b, std::vector<double>& buffer, size_t& at, bool out);
std::vector<halox::field> descriptors(std::vector<field3d>& fields);

// A halo update of some fields at a depth, however it is done.
class halo_updater {
 public:
  virtual ~halo_updater() = default;
  virtual void update(const std::vector<int>& fields, int depth) = 0;
};

// halox: one exchange over all fields, subsets per call.
class halox_updater final : public halo_updater {
 public:
  halox_updater(const halox::decomposition& d, const ivec3& cells, std::vector<field3d>& fields,
                const halox::exchange_options& options);
  halox_updater(const halox::decomposition& d, const ivec3& cells,
                const std::vector<halox::field>& fields, const halox::exchange_options& options)
      : ex_(d, cells, fields, options) {}
  void update(const std::vector<int>& fields, int depth) override { ex_.exchange(fields, depth); }
  const halox::halo_exchange& exchange() const { return ex_; }
  halox::halo_exchange& exchange() { return ex_; }

 private:
  halox::halo_exchange ex_;
};

// CloverLeaf's way: per dimension, every field of the call packed into one
// buffer per side, one message each way, then unpacked; a later dimension's
// faces carry the earlier dimensions' halos (edges and corners in 2-3 hops).
class plain_updater final : public halo_updater {
 public:
  plain_updater(const halox::decomposition& d, std::vector<field3d>& fields);
  void update(const std::vector<int>& fields, int depth) override;

 private:
  const halox::decomposition& d_;
  std::vector<field3d>& fields_;
  neighbour_ranks near_;
  std::vector<double> send_lo_, send_hi_, recv_lo_, recv_hi_;
};

}  // namespace hydro
