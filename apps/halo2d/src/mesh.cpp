#include "halox_programs/halo2d/mesh.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

namespace halox::halo2d {

bool is_neighbor_count(int count) {
  return count == 2 || count == 4 || count == 8;
}

std::span<const direction> directions(int neighbor_count) {
  if (!is_neighbor_count(neighbor_count))
    throw std::invalid_argument(fmt::format("neighbour count {} is not 2, 4 or 8", neighbor_count));
  return {all_directions.data(), static_cast<size_t>(neighbor_count)};
}

int opposite(int direction_index) {
  static constexpr int reverse[8] = {1, 0, 3, 2, 7, 6, 5, 4};
  return reverse[direction_index];
}

int rank_of(const mesh2d& mesh, const coord2& coords) {
  return coords[0] * mesh.dims[1] + coords[1];
}

coord2 coords_of(const mesh2d& mesh, int rank) {
  return {rank / mesh.dims[1], rank % mesh.dims[1]};
}

std::string to_string(const coord2& coords) {
  return fmt::format("({},{})", coords[0], coords[1]);
}

std::string mesh_string(const mesh2d& mesh) {
  return fmt::format("{}x{}", mesh.dims[0], mesh.dims[1]);
}

std::optional<coord2> neighbor(const mesh2d& mesh, const coord2& from, int direction_index) {
  const auto& offset = all_directions[static_cast<size_t>(direction_index)].offset;
  coord2 to{from[0] + offset[0], from[1] + offset[1]};
  for (int d = 0; d < 2; ++d) {
    if (to[d] >= 0 && to[d] < mesh.dims[d]) continue;
    if (!mesh.periodic) return std::nullopt;
    to[d] = (to[d] % mesh.dims[d] + mesh.dims[d]) % mesh.dims[d];
  }
  return to;
}

coord2 single_sender(const mesh2d& mesh) {
  // min(1, extent/2): 1 where it exists, else the centre (0) of an extent of 1.
  return {std::min(1, mesh.dims[0] / 2), std::min(1, mesh.dims[1] / 2)};
}

std::string mesh_requirement(const mesh2d& mesh, int neighbor_count) {
  if (mesh.periodic) return {};
  bool short_x = mesh.dims[0] < 3;
  bool short_y = neighbor_count > 2 && mesh.dims[1] < 3;
  if (!short_x && !short_y) return {};
  std::string where = short_x && short_y ? "both dimensions"
                      : short_x          ? "dimension x"
                                         : "dimension y";
  std::string hint = neighbor_count > 2 && !short_x ? ", --neighbors 2" : "";
  return fmt::format(
      "{} neighbours without --periodic need at least 3 processes in {} (so that process (1,1) "
      "has all {} neighbours), but the mesh is {}; use --periodic{} or more ranks",
      neighbor_count, where, neighbor_count, mesh_string(mesh), hint);
}

int dimension_colour(int coordinate, int extent, bool periodic) {
  if (extent == 1) return 0;
  if (periodic && extent % 2 == 1 && coordinate == extent - 1) return 2;  // odd cycle
  return coordinate % 2;
}

int dimension_colour_count(int extent, bool periodic) {
  if (extent == 1) return 1;
  return periodic && extent % 2 == 1 ? 3 : 2;
}

static int star_modulus(int colours_x, int colours_y) {
  if (colours_x == 1 && colours_y == 1) return 1;
  return std::max(colours_x, colours_y) == 3 ? 3 : 2;
}

int phase_count(const mesh2d& mesh, int neighbor_count) {
  int mx = dimension_colour_count(mesh.dims[0], mesh.periodic);
  int my = dimension_colour_count(mesh.dims[1], mesh.periodic);
  switch (neighbor_count) {
    case 2:
      return mx;
    case 4:
      return star_modulus(mx, my);
    case 8:
      return mx * my;
  }
  throw std::invalid_argument(fmt::format("neighbour count {} is not 2, 4 or 8", neighbor_count));
}

int phase_of(const mesh2d& mesh, int neighbor_count, const coord2& sender) {
  int cx = dimension_colour(sender[0], mesh.dims[0], mesh.periodic);
  int cy = dimension_colour(sender[1], mesh.dims[1], mesh.periodic);
  int mx = dimension_colour_count(mesh.dims[0], mesh.periodic);
  int my = dimension_colour_count(mesh.dims[1], mesh.periodic);
  switch (neighbor_count) {
    case 2:
      return cx;
    case 4:
      return (cx + cy) % star_modulus(mx, my);
    case 8:
      return cx + mx * cy;
  }
  throw std::invalid_argument(fmt::format("neighbour count {} is not 2, 4 or 8", neighbor_count));
}

std::string_view name_of(test_kind test) {
  switch (test) {
    case test_kind::single:
      return "single";
    case test_kind::all:
      return "all";
    case test_kind::phased:
      return "phased";
    case test_kind::persistent:
      return "persistent";
    case test_kind::irecv_first:
      return "irecv-first";
    case test_kind::sendrecv:
      return "sendrecv";
  }
  return "?";
}

std::string_view title_of(test_kind test) {
  switch (test) {
    case test_kind::single:
      return "single sender";
    case test_kind::all:
      return "all send/receive";
    case test_kind::phased:
      return "phased send/receive";
    case test_kind::persistent:
      return "persistent requests";
    case test_kind::irecv_first:
      return "irecv first + barrier";
    case test_kind::sendrecv:
      return "sendrecv per direction";
  }
  return "?";
}

std::optional<test_kind> test_from_name(std::string_view name) {
  for (auto test : all_tests)
    if (name_of(test) == name) return test;
  return std::nullopt;
}

std::string test_names() {
  std::string names;
  for (auto test : all_tests) names += (names.empty() ? "" : ", ") + std::string(name_of(test));
  return names;
}

message_plan plan_messages(test_kind test, const mesh2d& mesh, int neighbor_count,
                           const coord2& me) {
  message_plan plan;
  const bool phased = test == test_kind::phased;
  plan.phases = phased ? phase_count(mesh, neighbor_count) : 1;
  const coord2 lone_sender = single_sender(mesh);
  auto sends = [&](const coord2& c) { return test != test_kind::single || c == lone_sender; };
  auto phase = [&](const coord2& sender) {
    return phased ? phase_of(mesh, neighbor_count, sender) : 0;
  };

  if (sends(me))
    for (int d = 0; d < neighbor_count; ++d)
      if (auto to = neighbor(mesh, me, d)) plan.sends.push_back({d, *to, phase(me)});
  // The neighbour in direction e reaches me by sending in the opposite direction.
  for (int e = 0; e < neighbor_count; ++e)
    if (auto from = neighbor(mesh, me, e); from && sends(*from))
      plan.receives.push_back({opposite(e), *from, phase(*from)});
  return plan;
}

}  // namespace halox::halo2d
