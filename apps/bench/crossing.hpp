// The crossing: what moving a rank's halo bytes between the cores of one node
// costs, however an exchange lays them out. Every rank, all at once, writes
// the bytes it sends into its slot of a node-shared buffer (lines its
// neighbour read the time before, so each write takes a line back from that
// core) and reads the bytes it receives from its neighbour's slot (lines that
// core has just written). The floor of the lines has no such traffic: each
// rank copies within its own memory. An exchange between ranks pays both.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>

namespace halox::bench {

class crossing_buffers {
 public:
  // Collective over `comm`: a slot of `slot_bytes` per rank of each node.
  crossing_buffers(MPI_Comm comm, size_t slot_bytes);
  ~crossing_buffers();
  crossing_buffers(const crossing_buffers&) = delete;
  crossing_buffers& operator=(const crossing_buffers&) = delete;

  size_t slot_bytes() const { return slot_bytes_; }
  // Whether node-shared memory had room for the slots (agreed by all ranks).
  bool has_room() const { return room_; }
  bool has_neighbour() const { return neighbour_ != nullptr; }
  std::byte* mine() const { return mine_; }
  std::byte* neighbour() const { return neighbour_; }  // the next rank's of the node

 private:
  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win window_ = MPI_WIN_NULL;
  size_t slot_bytes_ = 0;
  bool room_ = false;
  std::byte* mine_ = nullptr;
  std::byte* neighbour_ = nullptr;
};

// Collective over `comm` (every rank, also those with nothing to move):
// the slowest rank's median time to write `sent` bytes into its slot and read
// `received` bytes from its neighbour's; 0 where no rank shares a node; NaN
// (not measured) where node-shared memory has no room for the slots.
// `buffers` is created on first use, sized to the node's largest need.
double crossing_time(MPI_Comm comm, size_t sent, size_t received,
                     std::unique_ptr<crossing_buffers>& buffers);

}  // namespace halox::bench
