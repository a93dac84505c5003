#include "step.hpp"

#include <cmath>
#include <cstring>

namespace hydro {

namespace {

constexpr double gamma_gas = 1.4, dt = 2e-3;

template <class Body>
void owned(const field3d& f, Body&& body) {
  const ivec3 n = f.grid.interior;
  for (int z = 0; z < n[2]; ++z)
    for (int y = 0; y < n[1]; ++y)
      for (int x = 0; x < n[0]; ++x) body(x, y, z);
}

}  // namespace

void initial_state(std::vector<field3d>& f, const geometry& g) {

  owned(f[hydro::density], [&](int x, int y, int z) {
    const double gx = g.offset[0] + x, gy = g.offset[1] + y, gz = g.offset[2] + z;
    f[hydro::density](x, y, z) = 1.0 + 0.2 * std::sin(0.7 * gx) * std::cos(0.5 * gy) + 0.1 * std::sin(0.3 * gz);
    f[hydro::energy](x, y, z) = 2.5 + 0.1 * std::cos(0.4 * gx + 0.2 * gz);
  });
}

namespace {

// Beside an open boundary the ghost cells mirror the interior (reflective
// walls, as CloverLeaf's update_halo_kernel), along the rank's own faces.
void reflect_cells(field3d& c, const geometry& g) {
  const ivec3 n = c.grid.interior;
  for (int k = 0; k < 3; ++k) {
    if (g.periodic[static_cast<size_t>(k)]) continue;
    const bool low = g.offset[k] == 0, high = g.offset[k] + n[k] == g.global[k];
    owned(c, [&](int x, int y, int z) {
      ivec3 p{x, y, z};
      for (int m = 0; m < 2; ++m) {
        if (low && p[k] == m) {
          ivec3 ghost = p;
          ghost[k] = -1 - m;
          c(ghost[0], ghost[1], ghost[2]) = c(x, y, z);
        }
        if (high && p[k] == n[k] - 1 - m) {
          ivec3 ghost = p;
          ghost[k] = n[k] + m;
          c(ghost[0], ghost[1], ghost[2]) = c(x, y, z);
        }
      }
    });
  }
}

void equation_of_state(std::vector<field3d>& f) {
  owned(f[hydro::density], [&](int x, int y, int z) {
    const double rho = f[hydro::density](x, y, z), e = f[hydro::energy](x, y, z);
    const double p = (gamma_gas - 1.0) * rho * e;
    f[hydro::pressure](x, y, z) = p;
    f[hydro::soundspeed](x, y, z) = std::sqrt(gamma_gas * p / rho);
    // An artificial viscosity from the density's curvature (depth 2 read).
    const double curv = f[hydro::density](x - 2, y, z) + f[hydro::density](x + 2, y, z) +
                        f[hydro::density](x, y - 2, z) + f[hydro::density](x, y + 2, z) +
                        f[hydro::density](x, y, z - 2) + f[hydro::density](x, y, z + 2) - 6 * rho;
    f[hydro::viscosity](x, y, z) = 0.05 * std::abs(curv);
  });
}

// Node velocities from the pressure (and viscosity) of the 8 cells around each node.
void accelerate(std::vector<field3d>& f, const geometry& g) {
  const int vel[3] = {hydro::xvel, hydro::yvel, hydro::zvel};
  for (int k = 0; k < 3; ++k) {
    field3d& v = f[static_cast<size_t>(vel[k])];
    owned(v, [&](int x, int y, int z) {
      if (g.on_open_boundary(v, x, y, z)) return;
      double grad = 0;
      for (int c = 0; c < 8; ++c) {
        const int cx = x - 1 + (c & 1), cy = y - 1 + ((c >> 1) & 1), cz = z - 1 + ((c >> 2) & 1);
        const int side = ((c >> k) & 1) ? 1 : -1;
        grad += side * (f[hydro::pressure](cx, cy, cz) + f[hydro::viscosity](cx, cy, cz));
      }
      v(x, y, z) -= dt * 0.25 * grad;
    });
  }
}

// Face volume fluxes from the 4 nodes of each face; mass fluxes with a
// second-order upwind density (cells i-2 .. i+1 along the face's axis).
void fluxes(std::vector<field3d>& f, const geometry& g) {
  const int vel[3] = {hydro::xvel, hydro::yvel, hydro::zvel};
  const int vol[3] = {hydro::vol_flux_x, hydro::vol_flux_y, hydro::vol_flux_z};
  const int mass[3] = {hydro::mass_flux_x, hydro::mass_flux_y, hydro::mass_flux_z};
  const field3d& rho = f[hydro::density];
  for (int k = 0; k < 3; ++k) {
    field3d& vf = f[static_cast<size_t>(vol[k])];
    field3d& mf = f[static_cast<size_t>(mass[k])];
    const field3d& v = f[static_cast<size_t>(vel[k])];
    const int a = (k + 1) % 3, b = (k + 2) % 3;
    owned(vf, [&](int x, int y, int z) {
      if (g.on_open_boundary(vf, x, y, z)) return;
      ivec3 p{x, y, z};
      double sum = 0;
      for (int c = 0; c < 4; ++c) {
        ivec3 q = p;
        q[a] += c & 1;
        q[b] += (c >> 1) & 1;
        sum += v(q[0], q[1], q[2]);
      }
      const double flux = dt * 0.25 * sum;
      auto cell = [&](int shift) {
        ivec3 q = p;
        q[k] += shift;
        return rho(q[0], q[1], q[2]);
      };
      const double donor = flux > 0 ? cell(-1) + 0.25 * (cell(-1) - cell(-2))
                                    : cell(0) - 0.25 * (cell(1) - cell(0));
      vf(x, y, z) = flux;
      mf(x, y, z) = flux * donor;
    });
  }
}

// Density and energy advected by the face fluxes (upwind energy).
void advect(std::vector<field3d>& f) {
  const int mass[3] = {hydro::mass_flux_x, hydro::mass_flux_y, hydro::mass_flux_z};
  field3d& rho = f[hydro::density];
  field3d& e = f[hydro::energy];
  std::vector<double> new_rho(rho.data.size()), new_e(e.data.size());
  owned(rho, [&](int x, int y, int z) {
    double dm = 0, de = 0;
    for (int k = 0; k < 3; ++k) {
      const field3d& mf = f[static_cast<size_t>(mass[k])];
      ivec3 up{x, y, z};
      up[k] += 1;
      ivec3 below{x, y, z};
      below[k] -= 1;
      const double in = mf(x, y, z), out = mf(up[0], up[1], up[2]);
      dm += in - out;
      de += in * (in > 0 ? e(below[0], below[1], below[2]) : e(x, y, z)) -
            out * (out > 0 ? e(x, y, z) : e(up[0], up[1], up[2]));
    }
    const size_t i = rho.grid.index(x, y, z);
    new_rho[i] = rho.data[i] + dm;
    new_e[i] = (rho.data[i] * e.data[i] + de) / new_rho[i];
  });
  owned(rho, [&](int x, int y, int z) {
    const size_t i = rho.grid.index(x, y, z);
    rho.data[i] = new_rho[i];
    e.data[i] = new_e[i];
  });
}

}  // namespace

void step(std::vector<field3d>& f, const geometry& g, hydro::halo_updater& halos) {
  halos.update({hydro::density, hydro::energy}, 2);
  reflect_cells(f[hydro::density], g);
  reflect_cells(f[hydro::energy], g);
  equation_of_state(f);
  halos.update({hydro::pressure, hydro::viscosity, hydro::soundspeed}, 1);
  reflect_cells(f[hydro::pressure], g);
  reflect_cells(f[hydro::viscosity], g);
  accelerate(f, g);
  halos.update({hydro::xvel, hydro::yvel, hydro::zvel}, 1);
  fluxes(f, g);
  halos.update({hydro::vol_flux_x, hydro::vol_flux_y, hydro::vol_flux_z, hydro::mass_flux_x,
                hydro::mass_flux_y, hydro::mass_flux_z},
               1);
  advect(f);
}

// An exact digest of every owned point, independent of how the points are
// split over ranks: sums of the values' bit patterns weighted by global index.
uint64_t digest(const std::vector<field3d>& f, const geometry& g, MPI_Comm comm) {
  uint64_t sum = 0;
  for (size_t i = 0; i < f.size(); ++i)
    owned(f[i], [&](int x, int y, int z) {
      const uint64_t index = static_cast<uint64_t>(g.offset[0] + x) +
                             1000003ULL * (static_cast<uint64_t>(g.offset[1] + y) +
                                           1000003ULL * static_cast<uint64_t>(g.offset[2] + z));
      uint64_t bits = 0;
      const double v = f[i](x, y, z);
      std::memcpy(&bits, &v, sizeof bits);
      sum += bits * (2 * (index * 31 + i) + 1);
    });
  uint64_t total = 0;
  MPI_Allreduce(&sum, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
  return total;
}

}  // namespace hydro
