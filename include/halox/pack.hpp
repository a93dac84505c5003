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
#include <utility>
#include <vector>

#include "halox/grid.hpp"
#include "halox/plan.hpp"

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
// runs, rows and planes run as one walk over their rows (up to 4 at a time).
class copy_list {
 public:
  void add(const box_copy& c);
  void run() const;
  bool empty() const { return groups_.empty(); }

  // Runs of fetched_runs bytes a row apart touch cache lines of their own
  // that the hardware prefetcher misses; with fetch_ahead(true) run() asks
  // for them a few rows early. Faster on fields in memory, slower on fields
  // in the cache: the single-copy transports measure it (single_copy.hpp).
  // Landings of runs up to 16 bytes read their rows first instead (pack.cpp).
  static constexpr std::pair<size_t, size_t> fetched_runs{16, 256};
  void fetch_ahead(bool on) { fetch_ahead_ = on; }
  bool fetches_ahead() const { return fetch_ahead_; }
  bool can_fetch_ahead() const;  // some run would be fetched ahead
  size_t bytes() const { return bytes_; }
  size_t walks() const { return groups_.size(); }  // copies walking together count once

  static constexpr int max_together = 4;

  // Runs this long in several planes have the next plane's source fetched
  // while a plane copies, always: the hardware prefetcher follows a run but
  // not the jump to the next plane; shorter runs measured slower with it.
  static constexpr size_t next_plane_min_run = 1024;

 private:
  struct group {
    int count = 0;
    size_t run = 0;
    int rows = 0, planes = 0;
    bool next_plane = false;  // runs of next_plane_min_run or more in several planes
    const std::byte* from[max_together] = {};
    std::byte* to[max_together] = {};
    size_t from_row[max_together] = {}, from_plane[max_together] = {};
    size_t to_row[max_together] = {}, to_plane[max_together] = {};
  };
  std::vector<group> groups_;
  size_t bytes_ = 0;
  bool fetch_ahead_ = false;
};

// Bytes of a list of field boxes.
size_t packed_bytes(std::span<const field_box> boxes, size_t element_bytes);

// fields[f] is the first allocated cell (the corner of the halo) of field f.
// One-off forms of the lists above (built and run at once).
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
// Copies one box of a field laid out as `from_grid` into a box of the same
// extents in a field laid out as `to_grid`.
void copy_box_between(const std::byte* from_field, const local_grid& from_grid, const box& from,
                      std::byte* to_field, const local_grid& to_grid, const box& to,
                      size_t element_bytes);
// Copies from[i] to to[i] (same extents) without a buffer.
void copy_boxes(std::span<const field_box> from, std::span<const field_box> to,
                std::byte* const* fields, const local_grid& grid, size_t element_bytes);

}  // namespace halox
