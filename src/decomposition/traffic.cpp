#include "halox/programs/decomposition/traffic.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "halox/common/error.hpp"
#include "halox/decomposition.hpp"

namespace halox {

std::string to_string(boundary b) {
  static const char* names[] = {"same-core",  "cross-core",   "cross-L3",
                                "cross-NUMA", "cross-socket", "cross-node"};
  return names[static_cast<int>(b)];
}

long long traffic::total_bytes() const {
  long long sum = 0;
  for (long long b : total) sum += b;
  return sum;
}

std::vector<message_size> messages_per_rank(const exchange_shape& shape) {
  local_grid grid(shape.domain_per_rank, shape.halo);
  const long long per_cell =
      static_cast<long long>(shape.nfields) * static_cast<long long>(shape.element_size);
  std::vector<message_size> out;
  for (const auto& step : halo_regions(grid, shape.alg))
    for (const auto& region : step)
      if (!region.send.empty()) out.push_back({region.direction, region.send.volume() * per_cell});
  return out;
}

boundary crossed_boundary(const rank_placement& a, const rank_placement& b) {
  if (a.rank == b.rank) return boundary::none;
  if (a.node != b.node) return boundary::node;
  static constexpr level ladder[] = {level::socket, level::numa, level::l3,
                                     level::l2,     level::l1,   level::core};
  for (level l : ladder) {
    int x = a.domain(l), y = b.domain(l);
    if (x == -1 && y == -1) continue;  // the topology has no such level
    if (x >= 0 && x == y) continue;
    switch (l) {
      case level::socket:
        return boundary::socket;
      case level::numa:
        return boundary::numa;
      case level::l3:
        return boundary::l3;
      default:
        return boundary::core;
    }
  }
  return boundary::none;
}

std::vector<rank_traffic> traffic_per_rank(const std::vector<ivec3>& coords, const ivec3& dims,
                                           const std::array<bool, 3>& periodic,
                                           const std::vector<rank_placement>& placements,
                                           const exchange_shape& shape) {
  const rank_order xyz{};
  const size_t cells =
      static_cast<size_t>(dims[0]) * static_cast<size_t>(dims[1]) * static_cast<size_t>(dims[2]);
  if (coords.size() != cells || placements.size() != cells)
    throw run_error(fmt::format("traffic: {} coordinates and {} placements for a {}x{}x{} grid",
                                coords.size(), placements.size(), dims[0], dims[1], dims[2]));
  std::vector<int> at(cells, -1);
  for (size_t r = 0; r < coords.size(); ++r) {
    int& slot = at[static_cast<size_t>(linear_index(coords[r], dims, xyz))];
    if (slot >= 0) throw run_error("traffic: two ranks at the same coordinates");
    slot = static_cast<int>(r);
  }
  const auto messages = messages_per_rank(shape);
  std::vector<rank_traffic> out(coords.size());
  for (size_t r = 0; r < coords.size(); ++r) {
    for (const auto& m : messages) {
      ivec3 c = coords[r];
      bool exists = true;
      for (int d = 0; d < 3; ++d) {
        c[d] += m.direction[d];
        if (c[d] < 0 || c[d] >= dims[d]) {
          if (!periodic[static_cast<size_t>(d)]) exists = false;
          c[d] = (c[d] + dims[d]) % dims[d];
        }
      }
      if (!exists) continue;
      const auto& peer =
          placements[static_cast<size_t>(at[static_cast<size_t>(linear_index(c, dims, xyz))])];
      const auto k = static_cast<size_t>(crossed_boundary(placements[r], peer));
      out[r].bytes[k] += m.bytes;
      out[r].messages[k] += 1;
    }
  }
  return out;
}

traffic count_traffic(const std::vector<ivec3>& coords, const ivec3& dims,
                      const std::array<bool, 3>& periodic,
                      const std::vector<rank_placement>& placements, const exchange_shape& shape) {
  traffic t;
  for (const auto& mine : traffic_per_rank(coords, dims, periodic, placements, shape)) {
    long long sum = 0;
    for (size_t k = 0; k < static_cast<size_t>(boundary_count); ++k) {
      sum += mine.bytes[k];
      t.total[k] += mine.bytes[k];
      t.messages[k] += mine.messages[k];
      t.max_per_rank[k] = std::max(t.max_per_rank[k], mine.bytes[k]);
    }
    t.max_rank_bytes = std::max(t.max_rank_bytes, sum);
  }
  return t;
}

std::string format_bytes(long long bytes) {
  if (bytes == 0) return "0";
  static const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 999.5 && u < 5) {
    v /= 1000.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  return v >= 99.95   ? fmt::format("{:.0f} {}", v, units[u])
         : v >= 9.995 ? fmt::format("{:.1f} {}", v, units[u])
                      : fmt::format("{:.2f} {}", v, units[u]);
}

std::string traffic_table(const std::vector<std::pair<std::string, traffic>>& rows) {
  size_t name_width = 6;
  for (const auto& [name, t] : rows) name_width = std::max(name_width, name.size());
  std::string out = fmt::format("{:<{}}  {:<8}", "layout", name_width, "");
  for (int k = 0; k < boundary_count; ++k)
    out += fmt::format(" {:>12}", to_string(static_cast<boundary>(k)));
  out += fmt::format(" {:>12}\n", "all");
  for (const auto& [name, t] : rows) {
    out += fmt::format("{:<{}}  {:<8}", name, name_width, "total");
    for (long long b : t.total) out += fmt::format(" {:>12}", format_bytes(b));
    out += fmt::format(" {:>12}\n", format_bytes(t.total_bytes()));
    out += fmt::format("{:<{}}  {:<8}", "", name_width, "max/rank");
    for (long long b : t.max_per_rank) out += fmt::format(" {:>12}", format_bytes(b));
    out += fmt::format(" {:>12}\n", format_bytes(t.max_rank_bytes));
  }
  return out;
}

}  // namespace halox
