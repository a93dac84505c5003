#include "cloverleaf_calls.hpp"

#include <algorithm>
#include <array>

namespace hydro::cloverleaf {

namespace {

using halox::location;

struct field_kind {
  const char* name;
  location at;
};

constexpr field_kind kinds[field_count] = {
    {"density0", location::cell},     {"density1", location::cell},
    {"energy0", location::cell},      {"energy1", location::cell},
    {"pressure", location::cell},     {"viscosity", location::cell},
    {"soundspeed", location::cell},   {"xvel0", location::vertex},
    {"xvel1", location::vertex},        {"yvel0", location::vertex},
    {"yvel1", location::vertex},        {"zvel0", location::vertex},
    {"zvel1", location::vertex},        {"vol_flux_x", location::x_face},
    {"vol_flux_y", location::y_face}, {"vol_flux_z", location::z_face},
    {"mass_flux_x", location::x_face}, {"mass_flux_y", location::y_face},
    {"mass_flux_z", location::z_face}};

call labelled(std::vector<int> fields, int depth) {
  std::string label = std::to_string(fields.size()) + (fields.size() == 1 ? " field" : " fields") +
                      ", depth " + std::to_string(depth);
  return {std::move(label), std::move(fields), depth};
}

// The points a rank computes along each axis: those it owns, and the face it
// shares with the rank above along a staggered axis.
ivec3 computed_points(const field3d& f, const std::array<std::array<bool, 2>, 3>& has) {
  const ivec3 s = halox::staggered_axes(f.at);
  ivec3 n = f.grid.interior;
  for (int k = 0; k < 3; ++k)
    if (s[k] && has[static_cast<size_t>(k)][1]) ++n[k];
  return n;
}

// Charges the time since the last charge to a part, when on.
class part_clock {
 public:
  explicit part_clock(bool on) : on_(on), mark_(on ? MPI_Wtime() : 0) {}
  void charge(double& part) {
    if (!on_) return;
    const double now = MPI_Wtime();
    part += now - mark_;
    mark_ = now;
  }

 private:
  bool on_;
  double mark_;
};

}  // namespace

call start_call() {
  return labelled({density0, energy0, pressure, viscosity, density1, energy1, xvel0, yvel0, zvel0,
                   xvel1, yvel1, zvel1},
                  2);
}

std::vector<call> step_calls() {
  auto after_sweep = [](int mass_flux, int vol_flux) {
    return labelled({density1, energy1, xvel1, yvel1, zvel1, mass_flux, vol_flux}, 2);
  };
  return {labelled({pressure, energy0, density0, xvel0, yvel0}, 1),
          labelled({viscosity}, 1),
          labelled({energy1, density1, vol_flux_x, vol_flux_y}, 2),
          after_sweep(mass_flux_x, vol_flux_x),
          after_sweep(mass_flux_y, vol_flux_y),
          labelled({energy1, density1, vol_flux_z, mass_flux_z}, 2),
          after_sweep(mass_flux_z, vol_flux_z)};
}

std::vector<field3d> make_fields(const halox::decomposition& d, const ivec3& cells) {
  std::vector<field3d> out;
  for (const auto& kind : kinds) out.push_back(cloverleaf_field(d, cells, kind.name, kind.at));
  initial_state(out, d, cells);
  return out;
}

void initial_state(std::vector<field3d>& fields, const halox::decomposition& d, const ivec3& cells) {
  const auto has = neighbours_of(d).has;
  for (size_t i = 0; i < fields.size(); ++i) {
    field3d& f = fields[i];
    std::fill(f.data.begin(), f.data.end(), -1.0);
    const ivec3 n = computed_points(f, has);
    for (int z = 0; z < n[2]; ++z)
      for (int y = 0; y < n[1]; ++y)
        for (int x = 0; x < n[0]; ++x) {
          // The global point (periodic: the shared face is the next rank's first).
          ivec3 g{x, y, z};
          for (int k = 0; k < 3; ++k)
            g[k] = (d.coords()[k] * cells[k] + g[k]) % (d.dims()[k] * cells[k]);
          f(x, y, z) = 1 + 0.1 * static_cast<double>(i) + 1e-3 * ((7 * g[0] + 13 * g[1] + 17 * g[2]) % 101);
        }
  }
}

std::vector<halox::field> descriptors(std::vector<field3d>& fields, halox::shared_points shared) {
  std::vector<halox::field> out;
  for (auto& f : fields)
    out.push_back({f.data.data(), halox::element_type::f64, f.at, f.halo, f.name, shared});
  return out;
}

void compute(std::vector<field3d>& fields, const std::vector<int>& which,
             const halox::decomposition& d) {
  const auto has = neighbours_of(d).has;
  for (int i : which) {
    field3d& f = fields[static_cast<size_t>(i)];
    const ivec3 n = computed_points(f, has);
    for (int z = 0; z < n[2]; ++z)
      for (int y = 0; y < n[1]; ++y)
        for (int x = 0; x < n[0]; ++x)
          f(x, y, z) = 0.5 * f(x, y, z) + 0.25 * (f(x - 1, y, z) + f(x + 1, y, z));
  }
}

own_exchange::own_exchange(const halox::decomposition& d, std::vector<field3d>& fields)
    : d_(d), fields_(fields), near_(neighbours_of(d)) {}

void own_exchange::update(const std::vector<int>& which, int depth) {
  const auto& has = near_.has;
  // The boxes of dimension `dim`'s messages toward side 0 (below) and 1 (above):
  // sent from the points this rank computes, received into its halo.
  auto boxes = [&](const field3d& f, int dim, bool send) {
    const ivec3 s = halox::staggered_axes(f.at), n = f.grid.interior;
    std::array<halox::box, 2> b;
    for (int k = 0; k < 3; ++k) {
      const int below = std::min(f.halo.lo[k], depth), beyond = std::min(f.halo.hi[k] - s[k], depth);
      const bool lo = has[static_cast<size_t>(k)][0], hi = has[static_cast<size_t>(k)][1];
      for (int side = 0; side < 2; ++side) {
        int& first = b[static_cast<size_t>(side)].lo[k];
        int& last = b[static_cast<size_t>(side)].hi[k];
        if (k < dim) {  // earlier dimensions travel with the halos they filled
          first = lo ? -below : 0;
          last = n[k] + (hi ? s[k] + beyond : 0);
        } else if (k > dim) {
          first = 0;
          last = n[k] + (hi ? s[k] : 0);
        } else if (send) {
          first = side == 0 ? s[k] : n[k] - below;
          last = side == 0 ? s[k] + beyond : n[k];
        } else {
          first = side == 0 ? -below : n[k] + s[k];
          last = side == 0 ? 0 : n[k] + s[k] + beyond;
        }
      }
    }
    return b;
  };
  for (int dim = 0; dim < 3; ++dim) {
    std::array<size_t, 2> sent{0, 0}, received{0, 0};
    for (int i : which) {
      const field3d& f = fields_[static_cast<size_t>(i)];
      const auto out = boxes(f, dim, true), in = boxes(f, dim, false);
      for (size_t side = 0; side < 2; ++side) {
        sent[side] += static_cast<size_t>(out[side].volume());
        received[side] += static_cast<size_t>(in[side].volume());
      }
    }
    // Buffers sized once, for the largest call, as CloverLeaf allocates them.
    for (size_t side = 0; side < 2; ++side) {
      if (send_[side].size() < sent[side]) send_[side].resize(sent[side]);
      if (recv_[side].size() < received[side]) recv_[side].resize(received[side]);
    }
    const int lo = near_.rank[static_cast<size_t>(dim)][0], hi = near_.rank[static_cast<size_t>(dim)][1];
    const auto& neighbour = has[static_cast<size_t>(dim)];
    // Pack each field in turn, as CloverLeaf's pack kernels do; nothing toward
    // an open boundary (the code's boundary kernels fill those halos).
    part_clock clock(time_parts);
    std::array<size_t, 2> at{0, 0};
    for (int i : which) {
      field3d& f = fields_[static_cast<size_t>(i)];
      const auto out = boxes(f, dim, true);
      for (size_t side = 0; side < 2; ++side)
        if (neighbour[side]) copy_box(f, out[side], send_[side], at[side], true);
    }
    clock.charge(parts.pack_s);
    MPI_Request requests[4];
    MPI_Irecv(recv_[0].data(), static_cast<int>(received[0]), MPI_DOUBLE, lo, 1, d_.comm(), &requests[0]);
    MPI_Irecv(recv_[1].data(), static_cast<int>(received[1]), MPI_DOUBLE, hi, 0, d_.comm(), &requests[1]);
    MPI_Isend(send_[0].data(), static_cast<int>(sent[0]), MPI_DOUBLE, lo, 0, d_.comm(), &requests[2]);
    MPI_Isend(send_[1].data(), static_cast<int>(sent[1]), MPI_DOUBLE, hi, 1, d_.comm(), &requests[3]);
    MPI_Waitall(4, requests, MPI_STATUSES_IGNORE);
    clock.charge(parts.messages_s);
    at = {0, 0};
    for (int i : which) {
      field3d& f = fields_[static_cast<size_t>(i)];
      const auto in = boxes(f, dim, false);
      for (size_t side = 0; side < 2; ++side)
        if (neighbour[side]) copy_box(f, in[side], recv_[side], at[side], false);
    }
    clock.charge(parts.unpack_s);
  }
}

long differing_points(const std::vector<field3d>& a, const std::vector<field3d>& b) {
  long differ = 0;
  for (size_t f = 0; f < a.size(); ++f)
    for (size_t i = 0; i < a[f].data.size(); ++i)
      if (a[f].data[i] != b[f].data[i]) ++differ;
  return differ;
}

}  // namespace hydro::cloverleaf
