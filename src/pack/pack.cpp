#include "halox/pack.hpp"

#include <cstring>
#include <utility>

namespace halox {

namespace {

// A box as runs of contiguous bytes: `planes` x `rows` runs of `run` bytes.
struct run_layout {
  size_t run = 0;
  int rows = 0, planes = 0;
  size_t row_stride = 0, plane_stride = 0;  // bytes
  size_t first = 0;                         // byte offset of the first run
};

run_layout layout_of(const box& b, const local_grid& g, size_t element_bytes) {
  const ivec3 alloc = g.allocated();
  run_layout l;
  size_t run_elems = static_cast<size_t>(b.extent(0));
  l.rows = b.extent(1);
  l.planes = b.extent(2);
  l.row_stride = static_cast<size_t>(alloc[0]) * element_bytes;
  l.plane_stride = l.row_stride * static_cast<size_t>(alloc[1]);
  // Full x rows are contiguous across y; full xy planes across z.
  if (b.extent(0) == alloc[0]) {
    run_elems *= static_cast<size_t>(l.rows);
    l.rows = 1;
    if (b.extent(1) == alloc[1]) {
      run_elems *= static_cast<size_t>(l.planes);
      l.planes = 1;
    }
  }
  l.run = run_elems * element_bytes;
  l.first = g.index(b.lo[0], b.lo[1], b.lo[2]) * element_bytes;
  return l;
}

// direction: true = field -> buffer (pack), false = buffer -> field (unpack).
template <size_t RunBytes, bool ToBuffer>
void copy_runs_fixed(std::byte* buffer, std::byte* field, const run_layout& l) {
  for (int k = 0; k < l.planes; ++k) {
    std::byte* row = field + static_cast<size_t>(k) * l.plane_stride;
    for (int j = 0; j < l.rows; ++j, row += l.row_stride, buffer += RunBytes) {
      if constexpr (ToBuffer)
        std::memcpy(buffer, row, RunBytes);
      else
        std::memcpy(row, buffer, RunBytes);
    }
  }
}

template <bool ToBuffer>
void copy_runs_any(std::byte* buffer, std::byte* field, const run_layout& l) {
  for (int k = 0; k < l.planes; ++k) {
    std::byte* row = field + static_cast<size_t>(k) * l.plane_stride;
    for (int j = 0; j < l.rows; ++j, row += l.row_stride, buffer += l.run) {
      if constexpr (ToBuffer)
        std::memcpy(buffer, row, l.run);
      else
        std::memcpy(row, buffer, l.run);
    }
  }
}

template <bool ToBuffer, size_t... Multiples>
void dispatch_runs(std::byte* buffer, std::byte* field, const run_layout& l,
                   std::index_sequence<Multiples...>) {
  // Runs of 4..64 bytes in steps of 4 get a compile-time size: plain moves.
  bool done = ((l.run == (Multiples + 1) * 4
                    ? (copy_runs_fixed<(Multiples + 1) * 4, ToBuffer>(buffer, field, l), true)
                    : false) ||
               ...);
  if (!done) copy_runs_any<ToBuffer>(buffer, field, l);
}

template <bool ToBuffer>
size_t transfer(std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
                const local_grid& grid, size_t element_bytes) {
  size_t offset = 0;
  for (const auto& fb : boxes) {
    if (fb.region.empty()) continue;
    run_layout l = layout_of(fb.region, grid, element_bytes);
    dispatch_runs<ToBuffer>(buffer + offset, fields[fb.field] + l.first, l,
                            std::make_index_sequence<16>{});
    offset += l.run * static_cast<size_t>(l.rows) * static_cast<size_t>(l.planes);
  }
  return offset;
}

}  // namespace

size_t packed_bytes(std::span<const field_box> boxes, size_t element_bytes) {
  size_t total = 0;
  for (const auto& b : boxes) total += static_cast<size_t>(b.region.volume()) * element_bytes;
  return total;
}

size_t pack(std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
            const local_grid& grid, size_t element_bytes) {
  return transfer<true>(buffer, boxes, fields, grid, element_bytes);
}

size_t unpack(const std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
              const local_grid& grid, size_t element_bytes) {
  return transfer<false>(const_cast<std::byte*>(buffer), boxes, fields, grid, element_bytes);
}

namespace {

// Runs of one box in two layouts: merged only where both layouts allow it.
template <size_t RunBytes>
void copy_rows_fixed(const std::byte* src, std::byte* dst, int rows, int planes, size_t src_row,
                     size_t src_plane, size_t dst_row, size_t dst_plane) {
  for (int k = 0; k < planes; ++k) {
    const std::byte* s = src + static_cast<size_t>(k) * src_plane;
    std::byte* d = dst + static_cast<size_t>(k) * dst_plane;
    for (int j = 0; j < rows; ++j, s += src_row, d += dst_row) std::memcpy(d, s, RunBytes);
  }
}

template <size_t... Multiples>
void copy_rows(const std::byte* src, std::byte* dst, size_t run, int rows, int planes,
               size_t src_row, size_t src_plane, size_t dst_row, size_t dst_plane,
               std::index_sequence<Multiples...>) {
  bool done = ((run == (Multiples + 1) * 4
                    ? (copy_rows_fixed<(Multiples + 1) * 4>(src, dst, rows, planes, src_row,
                                                            src_plane, dst_row, dst_plane),
                       true)
                    : false) ||
               ...);
  if (done) return;
  for (int k = 0; k < planes; ++k) {
    const std::byte* s = src + static_cast<size_t>(k) * src_plane;
    std::byte* d = dst + static_cast<size_t>(k) * dst_plane;
    for (int j = 0; j < rows; ++j, s += src_row, d += dst_row) std::memcpy(d, s, run);
  }
}

}  // namespace

void copy_box_between(const std::byte* from_field, const local_grid& from_grid, const box& from,
                      std::byte* to_field, const local_grid& to_grid, const box& to,
                      size_t element_bytes) {
  if (from.empty()) return;
  const ivec3 fa = from_grid.allocated(), ta = to_grid.allocated();
  size_t run = static_cast<size_t>(from.extent(0)) * element_bytes;
  int rows = from.extent(1), planes = from.extent(2);
  size_t src_row = static_cast<size_t>(fa[0]) * element_bytes;
  size_t src_plane = src_row * static_cast<size_t>(fa[1]);
  size_t dst_row = static_cast<size_t>(ta[0]) * element_bytes;
  size_t dst_plane = dst_row * static_cast<size_t>(ta[1]);
  if (from.extent(0) == fa[0] && to.extent(0) == ta[0]) {
    run *= static_cast<size_t>(rows);
    rows = 1;
    if (from.extent(1) == fa[1] && to.extent(1) == ta[1]) {
      run *= static_cast<size_t>(planes);
      planes = 1;
    }
  }
  const std::byte* src = from_field + from_grid.index(from.lo[0], from.lo[1], from.lo[2]) * element_bytes;
  std::byte* dst = to_field + to_grid.index(to.lo[0], to.lo[1], to.lo[2]) * element_bytes;
  copy_rows(src, dst, run, rows, planes, src_row, src_plane, dst_row, dst_plane,
            std::make_index_sequence<16>{});
}

void copy_boxes(std::span<const field_box> from, std::span<const field_box> to,
                std::byte* const* fields, const local_grid& grid, size_t element_bytes) {
  for (size_t i = 0; i < from.size() && i < to.size(); ++i)
    copy_box_between(fields[from[i].field], grid, from[i].region, fields[to[i].field], grid,
                     to[i].region, element_bytes);
}

}  // namespace halox
