// CloverLeaf3D's halo updates as the code makes them: its 19 fields (cell
// densities, energies, pressure, viscosity, sound speed; vertex velocities at
// two time levels; volume and mass fluxes on the x, y and z faces), the subset
// and depth of every update_halo call of a step in order, a compute pass over
// the next call's fields between calls, and the code's own exchange: per
// dimension, each field of the call packed in turn into one buffer per side,
// one MPI_Isend/MPI_Irecv pair each way, unpacked; a staggered field moves the
// d points beyond the face it shares with its neighbour (both ranks compute
// that face), as halox does for a field whose shared points are kept.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "fields.hpp"

namespace hydro::cloverleaf {

// Indices into the 19 fields, in CloverLeaf's names.
enum field_index {
  density0, density1, energy0, energy1, pressure, viscosity, soundspeed,
  xvel0, xvel1, yvel0, yvel1, zvel0, zvel1,
  vol_flux_x, vol_flux_y, vol_flux_z, mass_flux_x, mass_flux_y, mass_flux_z,
  field_count
};

// One update_halo call: which fields, how deep, and a label for the tables.
struct call {
  std::string label;
  std::vector<int> fields;
  int depth;
};

// The call at start-up (every field the first step reads, depth 2).
call start_call();
// The calls of one step, in order: the time step's, the viscosity's, then
// the advection's: before the x sweep, after each sweep, and between.
std::vector<call> step_calls();

// The fields with CloverLeaf's extents, in their initial state: every point a
// rank computes (its shared faces too) set from its global index, the halos
// marked. `cells` per rank on every rank.
std::vector<field3d> make_fields(const halox::decomposition& d, const ivec3& cells);
void initial_state(std::vector<field3d>& fields, const halox::decomposition& d, const ivec3& cells);
// The descriptors (kept: as the code's own exchange moves them).
std::vector<halox::field> descriptors(std::vector<field3d>& fields, halox::shared_points shared);

// What a kernel between two calls does to the fields the next call moves:
// every point the rank computes (the shared faces above included) relaxed
// with its x neighbours, reading the halos the previous calls filled.
void compute(std::vector<field3d>& fields, const std::vector<int>& which,
             const halox::decomposition& d);

// Seconds of the code's own exchange by part, summed over its calls.
struct own_parts {
  double pack_s = 0, messages_s = 0, unpack_s = 0;  // messages: posting to MPI_Waitall
};

// The code's own exchange (module comment).
class own_exchange final : public halo_updater {
 public:
  own_exchange(const halox::decomposition& d, std::vector<field3d>& fields);
  void update(const std::vector<int>& fields, int depth) override;
  // With timing on, each call adds its parts to `parts` (four clock reads per
  // dimension: well under a microsecond a call).
  bool time_parts = false;
  own_parts parts;

 private:
  const halox::decomposition& d_;
  std::vector<field3d>& fields_;
  neighbour_ranks near_;
  std::vector<double> send_[2], recv_[2];
};

// The number of points at which two runs' fields differ (0: bit for bit alike).
long differing_points(const std::vector<field3d>& a, const std::vector<field3d>& b);

}  // namespace hydro::cloverleaf
