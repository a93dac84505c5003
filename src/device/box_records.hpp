// The copies a CUDA kernel runs, as plain records it reads from device
// memory: one record per box copy (pack.hpp's box_copy: planes x rows runs,
// strided at both ends), moved in units of 1 to 16 bytes. The index
// arithmetic is compiled for the host too, where copy_batch::run_on_host
// runs it against the host kernels of pack.cpp in the unit tests.
//
// Reference algorithm (a launch over records r and units i):
//   for each record r: for i in [0, r.units):
//     (plane, row, k) = i split by (rows, units_per_run)
//     to[plane * to_plane + row * to_row + k * unit] = from[plane * from_plane + row * from_row + k * unit]
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
  uint64_t units = 0;  // units_per_run * rows * planes
  uint32_t rows = 0, planes = 0;
};

// Byte offsets of unit `i` of record `r` from its two starts.
HALOX_HOST_DEVICE inline void unit_offsets(const box_record& r, uint64_t i, uint64_t unit_bytes,
                                           uint64_t& from, uint64_t& to) {
  const uint64_t run = i / r.units_per_run;
  const uint64_t in_run = (i - run * r.units_per_run) * unit_bytes;
  const uint64_t plane = run / r.rows;
  const uint64_t row = run - plane * r.rows;
  from = plane * r.from_plane + row * r.from_row + in_run;
  to = plane * r.to_plane + row * r.to_row + in_run;
}

}  // namespace halox::device
