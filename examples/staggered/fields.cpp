#include "fields.hpp"

#include <algorithm>
#include <array>

namespace hydro {

namespace {

struct field_kind {
  const char* name;
  halox::location at;
};

constexpr field_kind kinds[field_count] = {
    {"density", halox::location::cell},      {"energy", halox::location::cell},
    {"pressure", halox::location::cell},     {"viscosity", halox::location::cell},
    {"soundspeed", halox::location::cell},   {"xvel", halox::location::vertex},
    {"yvel", halox::location::vertex},         {"zvel", halox::location::vertex},
    {"vol_flux_x", halox::location::x_face}, {"vol_flux_y", halox::location::y_face},
    {"vol_flux_z", halox::location::z_face}, {"mass_flux_x", halox::location::x_face},
    {"mass_flux_y", halox::location::y_face}, {"mass_flux_z", halox::location::z_face}};

}  // namespace

std::pair<std::string, std::string> split_argument(const std::string& arg) {
  const auto eq = arg.find('=');
  return {arg.substr(0, eq), eq == std::string::npos ? "" : arg.substr(eq + 1)};
}

void field3d::place_at(double* memory) {
  std::copy(data.begin(), data.end(), memory);
  data = {memory, data.size()};
  owned = {};
}

field3d cloverleaf_field(const halox::decomposition& d, const ivec3& cells, std::string name,
                         halox::location at) {
  field3d f;
  f.name = std::move(name);
  f.at = at;
  // CloverLeaf's extents: two cells below, two above, one more point above
  // along a staggered axis.
  const ivec3 staggered = halox::staggered_axes(at);
  f.halo = {{2, 2, 2}, {2 + staggered[0], 2 + staggered[1], 2 + staggered[2]}};
  f.grid = halox::local_grid(halox::field_points(d, cells, at), f.halo);
  f.owned.assign(f.grid.points(), 0.0);
  f.data = f.owned;
  return f;
}

std::vector<field3d> make_fields(const halox::decomposition& d, const ivec3& cells) {
  std::vector<field3d> out;
  for (const auto& k : kinds) out.push_back(cloverleaf_field(d, cells, k.name, k.at));
  return out;
}

std::vector<halox::field> descriptors(std::vector<field3d>& fields) {
  std::vector<halox::field> out;
  for (auto& f : fields)
    out.push_back({f.data.data(), halox::element_type::f64, f.at, f.halo, f.name});
  return out;
}

halox_updater::halox_updater(const halox::decomposition& d, const ivec3& cells,
                             std::vector<field3d>& fields, const halox::exchange_options& options)
    : ex_(d, cells, descriptors(fields), options) {}

neighbour_ranks neighbours_of(const halox::decomposition& d) {
  neighbour_ranks n;
  for (size_t k = 0; k < 3; ++k)
    for (size_t s = 0; s < 2; ++s) {
      ivec3 dir{0, 0, 0};
      dir[k] = s == 0 ? -1 : 1;
      const auto r = d.neighbor(dir);
      n.has[k][s] = r.has_value();
      n.rank[k][s] = r.value_or(MPI_PROC_NULL);
    }
  return n;
}

void copy_box(field3d& f, const halox::box& b, std::vector<double>& buffer, size_t& at, bool out) {
  if (b.empty()) return;
  const int count = b.extent(0);
  for (int z = b.lo[2]; z < b.hi[2]; ++z)
    for (int y = b.lo[1]; y < b.hi[1]; ++y) {
      double* row = &f(b.lo[0], y, z);
      double* packed = buffer.data() + at;
      if (out)
        for (int i = 0; i < count; ++i) packed[i] = row[i];
      else
        for (int i = 0; i < count; ++i) row[i] = packed[i];
      at += static_cast<size_t>(count);
    }
}

plain_updater::plain_updater(const halox::decomposition& d, std::vector<field3d>& fields)
    : d_(d), fields_(fields), near_(neighbours_of(d)) {}

namespace {

// The halo widths a call at `depth` fills (halox/field.hpp's convention).
halox::halo_widths filled(const field3d& f, int depth) {
  halox::halo_widths w = f.halo;
  const ivec3 s = halox::staggered_axes(f.at);
  for (int k = 0; k < 3; ++k) {
    w.lo[k] = std::min(w.lo[k], depth);
    w.hi[k] = std::min(w.hi[k], depth + s[k]);
  }
  return w;
}

// The points of dimension `dim`'s message toward `side` (-1 below, +1 above),
// sent (from the interior) or received (into the halo); earlier dimensions
// travel with the halos they filled, across the sides that have a neighbour.
halox::box face_box(const field3d& f, const halox::halo_widths& w, int dim, int side, bool send,
                    const std::array<std::array<bool, 2>, 3>& has) {
  halox::box b;
  const ivec3 n = f.grid.interior;
  for (int k = 0; k < 3; ++k) {
    if (k < dim) {
      b.lo[k] = has[static_cast<size_t>(k)][0] ? -w.lo[k] : 0;
      b.hi[k] = n[k] + (has[static_cast<size_t>(k)][1] ? w.hi[k] : 0);
    } else if (k > dim) {
      b.lo[k] = 0;
      b.hi[k] = n[k];
    } else if (send) {
      b.lo[k] = side < 0 ? 0 : n[k] - w.lo[k];
      b.hi[k] = side < 0 ? w.hi[k] : n[k];
    } else {
      b.lo[k] = side < 0 ? -w.lo[k] : n[k];
      b.hi[k] = side < 0 ? 0 : n[k] + w.hi[k];
    }
  }
  return b;
}

}  // namespace

void plain_updater::update(const std::vector<int>& which, int depth) {
  const auto& has = near_.has;
  const auto& peer = near_.rank;
  for (int dim = 0; dim < 3; ++dim) {
    // Pack every field of the call into one buffer per side (buffers grow to
    // the largest call and stay, as CloverLeaf allocates them once).
    size_t send_lo = 0, send_hi = 0, recv_lo = 0, recv_hi = 0;
    for (int f : which) {
      const field3d& fd = fields_[static_cast<size_t>(f)];
      const auto w = filled(fd, depth);
      send_lo += static_cast<size_t>(face_box(fd, w, dim, -1, true, has).volume());
      send_hi += static_cast<size_t>(face_box(fd, w, dim, +1, true, has).volume());
      recv_lo += static_cast<size_t>(face_box(fd, w, dim, -1, false, has).volume());
      recv_hi += static_cast<size_t>(face_box(fd, w, dim, +1, false, has).volume());
    }
    for (auto [buffer, size] : {std::pair{&send_lo_, send_lo}, {&send_hi_, send_hi},
                                {&recv_lo_, recv_lo}, {&recv_hi_, recv_hi}})
      if (buffer->size() < size) buffer->resize(size);
    const int lo = peer[static_cast<size_t>(dim)][0], hi = peer[static_cast<size_t>(dim)][1];
    size_t packed_lo = 0, packed_hi = 0;
    for (int f : which) {
      field3d& fd = fields_[static_cast<size_t>(f)];
      const auto w = filled(fd, depth);
      if (lo != MPI_PROC_NULL) copy_box(fd, face_box(fd, w, dim, -1, true, has), send_lo_, packed_lo, true);
      if (hi != MPI_PROC_NULL) copy_box(fd, face_box(fd, w, dim, +1, true, has), send_hi_, packed_hi, true);
    }
    MPI_Request requests[4];
    MPI_Irecv(recv_lo_.data(), static_cast<int>(recv_lo), MPI_DOUBLE, lo, 1, d_.comm(), &requests[0]);
    MPI_Irecv(recv_hi_.data(), static_cast<int>(recv_hi), MPI_DOUBLE, hi, 0, d_.comm(), &requests[1]);
    MPI_Isend(send_lo_.data(), static_cast<int>(send_lo), MPI_DOUBLE, lo, 0, d_.comm(), &requests[2]);
    MPI_Isend(send_hi_.data(), static_cast<int>(send_hi), MPI_DOUBLE, hi, 1, d_.comm(), &requests[3]);
    MPI_Waitall(4, requests, MPI_STATUSES_IGNORE);
    // Unpack: beside an open boundary (MPI_PROC_NULL) the halo keeps its values.
    size_t at_lo = 0, at_hi = 0;
    for (int f : which) {
      field3d& fd = fields_[static_cast<size_t>(f)];
      const auto w = filled(fd, depth);
      if (lo != MPI_PROC_NULL) copy_box(fd, face_box(fd, w, dim, -1, false, has), recv_lo_, at_lo, false);
      if (hi != MPI_PROC_NULL) copy_box(fd, face_box(fd, w, dim, +1, false, has), recv_hi_, at_hi, false);
    }
  }
}

}  // namespace hydro
