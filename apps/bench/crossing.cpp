#include "crossing.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "floors.hpp"
#include "halox/field_memory.hpp"

namespace halox::bench {

crossing_buffers::crossing_buffers(MPI_Comm comm, size_t slot_bytes) {
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_);
  int rank = 0, size = 1;
  MPI_Comm_rank(node_, &rank);
  MPI_Comm_size(node_, &size);
  // Whole lines per slot, so that no line holds two ranks' bytes.
  slot_bytes_ = (std::max<size_t>(slot_bytes, 64) + 63) / 64 * 64;
  // A full /dev/shm would kill the job at the first write (SIGBUS under
  // MPICH): without room the crossing is not measured, on every rank alike.
  room_ = node_shared_memory_space(comm, node_, slot_bytes_).fits;
  if (!room_) return;
  void* base = nullptr;
  MPI_Win_allocate_shared(static_cast<MPI_Aint>(slot_bytes_), 64, MPI_INFO_NULL, node_, &base, &window_);
  mine_ = static_cast<std::byte*>(base);
  std::memset(mine_, 0, slot_bytes_);
  if (size > 1) {
    MPI_Aint bytes = 0;
    int unit = 0;
    void* theirs = nullptr;
    MPI_Win_shared_query(window_, (rank + 1) % size, &bytes, &unit, &theirs);
    neighbour_ = static_cast<std::byte*>(theirs);
  }
  MPI_Barrier(node_);
}

crossing_buffers::~crossing_buffers() {
  if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
}

double crossing_time(MPI_Comm comm, size_t sent, size_t received,
                     std::unique_ptr<crossing_buffers>& buffers) {
  unsigned long long need = std::max(sent, received), most = 0;
  MPI_Allreduce(&need, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
  if (!buffers || buffers->slot_bytes() < most) {
    buffers.reset();  // collective: every rank frees before any allocates
    buffers = std::make_unique<crossing_buffers>(comm, static_cast<size_t>(most));
  }
  const crossing_buffers& b = *buffers;
  if (!b.has_room()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<std::byte> outgoing(std::max<size_t>(sent, 1), std::byte{1}), incoming(std::max<size_t>(received, 1));
  const bool any = b.has_neighbour() && (sent > 0 || received > 0);
  return median_of_samples(
      comm, any, [](int) {},
      [&](int i) {
        outgoing[0] = static_cast<std::byte>(i);
        std::memcpy(b.mine(), outgoing.data(), std::min(sent, b.slot_bytes()));
        std::memcpy(incoming.data(), b.neighbour(), std::min(received, b.slot_bytes()));
      });
}

}  // namespace halox::bench
