// The copies a CUDA kernel runs, as plain records it reads from device
// memory: one record per box copy (pack.hpp's box_copy: planes x rows runs,
// strided at both ends), each moved in its own unit of 1 to 16 bytes (a face
// of whole rows in 16-byte units beside an x face of 4-byte runs: one narrow
// box does not narrow the launch). The index
// arithmetic is compiled for the host too, where copy_batch::run_on_host
// runs it against the host kernels of pack.cpp in the unit tests.
//
// Reference algorithm (a launch over records r and units i):
//   for each record r: for i in [0, r.units):
//     (plane, row, k) = i split by (rows, units_per_run)
//     to[plane * to_plane + row * to_row + k * r.unit_bytes] =
//         from[plane * from_plane + row * from_row + k * r.unit_bytes]
// A launch has one block per units_per_block units of each record (no block
// idles, whatever the mix of large faces and small corners): block b copies
// units [(b - first_block) * units_per_block, ...) of the record it falls in,
// consecutive threads taking consecutive units (coalesced along a run).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define HALOX_HOST_DEVICE __host__ __device__
#else
#define HALOX_HOST_DEVICE
#endif

namespace halox::device {

struct box_record {
  uint64_t from = 0, to = 0;  // addresses of the first byte at each end
  uint64_t from_row = 0, from_plane = 0, to_row = 0, to_plane = 0;  // strides in bytes
  uint64_t units_per_run = 0;
  uint64_t units = 0;        // units_per_run * rows * planes
  uint64_t first_block = 0;  // of the launch: the blocks of the records before this one
  uint32_t rows = 0, planes = 0;
  uint32_t unit_bytes = 1;  // the widest of 16, 8, 4, 2, 1 dividing its runs, strides and ends
};

inline constexpr uint32_t threads_per_block = 256;
inline constexpr uint32_t units_per_thread = 4;
inline constexpr uint64_t units_per_block = uint64_t{threads_per_block} * units_per_thread;

// The record that block `block` works on: the last whose first_block is not after it.
HALOX_HOST_DEVICE inline uint32_t record_of_block(const box_record* records, uint32_t count,
                                                  uint64_t block) {
  uint32_t lo = 0, hi = count - 1;
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (records[mid].first_block <= block)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// The k-th unit that thread `thread` of block `block` copies of record r.
HALOX_HOST_DEVICE inline uint64_t unit_of(const box_record& r, uint64_t block, uint32_t thread,
                                          uint32_t k) {
  return (block - r.first_block) * units_per_block + uint64_t{k} * threads_per_block + thread;
}

// Byte offsets of unit `i` of record `r` from its two starts. Records of
// fewer than 2^32 units (all of a halo) divide in 32 bits: a GPU emulates
// 64-bit division in dozens of instructions.
HALOX_HOST_DEVICE inline void unit_offsets(const box_record& r, uint64_t i, uint64_t& from,
                                           uint64_t& to) {
  uint64_t run = 0, in_run = 0, plane = 0, row = 0;
  if (r.units <= 0xffffffffu) {
    const auto i32 = static_cast<uint32_t>(i), per_run = static_cast<uint32_t>(r.units_per_run);
    const uint32_t run32 = i32 / per_run, plane32 = run32 / r.rows;
    run = run32;
    in_run = uint64_t{i32 - run32 * per_run} * r.unit_bytes;
    plane = plane32;
    row = run32 - plane32 * r.rows;
  } else {
    run = i / r.units_per_run;
    in_run = (i - run * r.units_per_run) * r.unit_bytes;
    plane = run / r.rows;
    row = run - plane * r.rows;
  }
  from = plane * r.from_plane + row * r.from_row + in_run;
  to = plane * r.to_plane + row * r.to_row + in_run;
}

}  // namespace halox::device
