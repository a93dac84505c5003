#include "touched_lines.hpp"

#include <vector>

namespace halox::bench {

namespace {

using line_set = std::vector<std::vector<bool>>;  // per field, per line

// Marks the lines one box touches in a field, row by row.
void mark_box(std::vector<bool>& lines, const local_grid& grid, const box& b, size_t element) {
  if (b.empty()) return;
  for (int z = b.lo[2]; z < b.hi[2]; ++z)
    for (int y = b.lo[1]; y < b.hi[1]; ++y) {
      const size_t first = grid.index(b.lo[0], y, z) * element / cache_line_bytes;
      const size_t last = ((grid.index(b.hi[0] - 1, y, z) + 1) * element - 1) / cache_line_bytes;
      for (size_t line = first; line <= last; ++line) lines[line] = true;
    }
}

size_t bytes_of(const line_set& set) {
  size_t count = 0;
  for (const auto& field : set)
    for (bool touched : field) count += touched ? 1 : 0;
  return count * cache_line_bytes;
}

}  // namespace

touched_lines lines_touched(const exchange_plan& plan) {
  // Per field (each its own layout and element size), by field index.
  line_set read;
  for (const auto& l : plan.layouts)
    read.emplace_back((l.grid.points() * l.element_bytes + cache_line_bytes - 1) / cache_line_bytes);
  line_set written = read;
  auto mark = [&](line_set& set, const std::vector<field_box>& boxes) {
    for (const auto& fb : boxes)
      mark_box(set[static_cast<size_t>(fb.field)], plan.grid_of(fb.field), fb.region,
               plan.element_bytes_of(fb.field));
  };
  for (const auto& st : plan.stages) {
    for (const auto& m : st.sends) mark(read, m.boxes);
    for (const auto& m : st.recvs) mark(written, m.boxes);
    for (const auto& c : st.copies) {
      mark(read, c.from);
      mark(written, c.to);
    }
  }
  return {.read_bytes = bytes_of(read), .written_bytes = bytes_of(written)};
}

}  // namespace halox::bench
