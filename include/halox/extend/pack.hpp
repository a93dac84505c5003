// Pack / unpack kernels: boxes of x-fastest fields <-> a contiguous buffer,
// and boxes copied between two field layouts.
//
// Reference algorithm (what every kernel below must equal):
//   for each (field f, box b) in order:
//     for z in b.z: for y in b.y: for x in b.x:
//       buffer[i++] = field[f][grid.index(x, y, z)]
// A box is `planes` x `rows` runs of contiguous bytes; whole rows (and whole
// planes) of the allocated extent merge into longer runs. Runs of 4..64 bytes
// move with fixed-size loads and stores, so a halo of width 1..8 does not pay
// a memcpy call per cell.
//
// Copies of the same shape walk their rows together (copy_list): the -x and
// +x faces of a field, packed for the same peer or copied across a periodic
// dimension of one rank, touch each row once instead of twice.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "halox/grid.hpp"
#include "halox/extend/plan.hpp"

namespace halox {

// One box copied from one place to another: `planes` x `rows` runs of `run`
// bytes; consecutive runs are `*_row` bytes apart, planes `*_plane` bytes.
struct box_copy {
  const std::byte* from = nullptr;
  std::byte* to = nullptr;
  size_t run = 0;
  int rows = 0, planes = 0;
  size_t from_row = 0, from_plane = 0, to_row = 0, to_plane = 0;
  size_t bytes() const { return run * static_cast<size_t>(rows) * static_cast<size_t>(planes); }
};

// A box of a field (laid out as grid, `field` its first allocated cell)
// into / out of contiguous bytes at `buffer`.
box_copy pack_copy(const std::byte* field, const local_grid& grid, const box& b,
                   size_t element_bytes, std::byte* buffer);
box_copy unpack_copy(const std::byte* buffer, std::byte* field, const local_grid& grid,
                     const box& b, size_t element_bytes);
// A box of one field layout into a box of the same extents of another (a
// neighbour's field mapped into this process, or a self copy).
box_copy field_copy(const std::byte* from_field, const local_grid& from_grid, const box& from,
                    std::byte* to_field, const local_grid& to_grid, const box& to,
                    size_t element_bytes);

// Box copies built once and run many times. Consecutive copies with the same
// runs, rows and planes run as one walk over their rows (a few at a time).
class copy_list {
 public:
  copy_list();
  ~copy_list();
  copy_list(const copy_list&);
  copy_list(copy_list&&) noexcept;
  copy_list& operator=(const copy_list&);
  copy_list& operator=(copy_list&&) noexcept;

  void add(const box_copy& c);
  void run() const;
  bool empty() const;

  // Whether run() asks for the cache lines of short strided runs a few rows
  // early (which runs, and why: src/pack/walk_rules.hpp). It helps fields in
  // memory and hurts fields in the cache, so the transports that use a list
  // decide it (tuning.hpp's fetch_ahead knob).
  void fetch_ahead(bool on) { fetch_ahead_ = on; }
  bool fetches_ahead() const { return fetch_ahead_; }
  bool can_fetch_ahead() const;  // some run would be fetched ahead
  // The bytes from the first to the last run of the longest end that would be
  // fetched ahead (about its field's size for an x face); 0: none.
  size_t fetched_span() const;
  size_t bytes() const { return bytes_; }
  size_t walks() const;  // copies walking together count once

 private:
  struct group;  // src/pack/walk_rules.hpp
  std::vector<group> groups_;
  size_t bytes_ = 0;
  bool fetch_ahead_ = false;
};

// Bytes of a list of field boxes.
size_t packed_bytes(std::span<const field_box> boxes, size_t element_bytes);

// fields[f] is the first allocated cell (the corner of the halo) of field f.
// One-off forms of the lists below (built and run at once). Each comes in
// two forms: every field laid out as `grid` with elements of `element_bytes`,
// or each field as the plan's layouts say (grid_of, element_bytes_of: fields
// of their own locations, halos and types).
size_t pack(std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
            const local_grid& grid, size_t element_bytes);
size_t unpack(const std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
              const local_grid& grid, size_t element_bytes);
// Appends the copies of pack / unpack to a list (buffer bytes in box order);
// returns the bytes.
size_t add_pack(copy_list& list, std::byte* buffer, std::span<const field_box> boxes,
                std::byte* const* fields, const local_grid& grid, size_t element_bytes);
size_t add_unpack(copy_list& list, const std::byte* buffer, std::span<const field_box> boxes,
                  std::byte* const* fields, const local_grid& grid, size_t element_bytes);
// Appends the local copies (a dimension of one rank with periodic wrap) of a
// stage, field by field, so that the +x and -x copies of a field run together.
void add_local_copies(copy_list& list, std::span<const local_copy> copies, std::byte* const* fields,
                      const local_grid& grid, size_t element_bytes);
// Copies from[i] to to[i] (same extents) without a buffer.
void copy_boxes(std::span<const field_box> from, std::span<const field_box> to,
                std::byte* const* fields, const local_grid& grid, size_t element_bytes);

// The same, each field as the plan lays it out.
size_t packed_bytes(std::span<const field_box> boxes, const exchange_plan& plan);
size_t pack(std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
            const exchange_plan& plan);
size_t unpack(const std::byte* buffer, std::span<const field_box> boxes, std::byte* const* fields,
              const exchange_plan& plan);
size_t add_pack(copy_list& list, std::byte* buffer, std::span<const field_box> boxes,
                std::byte* const* fields, const exchange_plan& plan);
size_t add_unpack(copy_list& list, const std::byte* buffer, std::span<const field_box> boxes,
                  std::byte* const* fields, const exchange_plan& plan);
void add_local_copies(copy_list& list, std::span<const local_copy> copies, std::byte* const* fields,
                      const exchange_plan& plan);
void copy_boxes(std::span<const field_box> from, std::span<const field_box> to,
                std::byte* const* fields, const exchange_plan& plan);

}  // namespace halox
