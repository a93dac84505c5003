// The single-copy floors of host and device memory.
#include "bench_program.hpp"

#include <cstring>

#include "floors.hpp"
#include "halox/device.hpp"
#include "halox_programs/device_memory.hpp"

namespace halox::bench {

// The single-copy floor: every rank copies its halo bytes once, all ranks at
// the same time, from and to buffers the size of its fields. Collective on
// every rank, also those with nothing to copy (an open side of width 0 leaves
// a rank without halo bytes while its neighbours have some).
double single_copy_floor(MPI_Comm comm, size_t bytes, shape_memory& mem, size_t field_bytes,
                         bool after_compute) {
  if (mem.floor_from.size() < field_bytes) {
    mem.floor_from = mapped_buffer(field_bytes, mem.pages);
    mem.floor_to = mapped_buffer(field_bytes, mem.pages);
    std::memset(mem.floor_from.data(), 1, field_bytes);
    std::memset(mem.floor_to.data(), 0, field_bytes);
  }
  std::byte* from = mem.floor_from.data();
  std::byte* to = mem.floor_to.data();
  bytes = std::min(bytes, field_bytes);
  return median_of_samples(
      comm, bytes > 0,
      [&](int i) {
        // --timing compute: both buffers written whole first, as the fields are.
        if (after_compute)
          for (std::byte* buffer : {from, to}) std::memset(buffer, i & 0xff, field_bytes);
      },
      [&](int i) {
        std::memcpy(to, from, bytes);
        // Keep the copy observable so it is not optimised away.
        from[static_cast<size_t>(i) % bytes] = to[(static_cast<size_t>(i) * 7) % bytes];
      });
}

// The floor of device memory: every rank copies its halo bytes once device to
// device (cudaMemcpy, synchronised), all ranks at the same time. Collective.
double device_copy_floor(MPI_Comm comm, size_t bytes, shape_memory& mem, size_t field_bytes) {
  if (!mem.device_floor_from) {
    mem.device_floor_from = device_buffer(field_bytes);
    mem.device_floor_to = device_buffer(field_bytes);
  }
  bytes = std::min(bytes, field_bytes);
  return median_of_samples(
      comm, bytes > 0, [](int) {},
      [&](int) { cuda::copy_on_device(mem.device_floor_to.get(), mem.device_floor_from.get(), bytes); });
}

}  // namespace halox::bench
