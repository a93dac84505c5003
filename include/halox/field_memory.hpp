// Field memory that the ranks of a node can read directly (MPI-3 shared
// windows), so that the `shm` transport copies halos straight from the
// neighbour's fields: one copy, no packing, no MPI message.
//
//   halox::shared_field_memory memory(decomp, grid.cells() * sizeof(double), nfields);
//   std::vector<double*> fields = memory.fields<double>();
//   halox::halo_exchange ex(decomp, grid, fields, {.transport = halox::transport_kind::shm});
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "halox/decomposition.hpp"

namespace halox {

class shared_field_memory {
 public:
  // Collective over decomp.comm(): every rank allocates nfields fields of
  // bytes_per_field bytes (64-byte aligned) in a window shared on its node
  // (see node_communicator: real shared-memory nodes or HALOX_RANKS_PER_NODE groups).
  shared_field_memory(const decomposition& decomp, size_t bytes_per_field, int nfields);
  shared_field_memory(const shared_field_memory&) = delete;
  shared_field_memory& operator=(const shared_field_memory&) = delete;
  ~shared_field_memory();  // collective (frees the window)

  void* field(int index) const;
  template <class T>
  std::vector<T*> fields() const {
    std::vector<T*> out;
    for (int f = 0; f < nfields_; ++f) out.push_back(static_cast<T*>(field(f)));
    return out;
  }
  int nfields() const { return nfields_; }

  // The window that holds `address` and where, or nullptr when no live
  // shared_field_memory of this process holds it.
  struct location {
    const shared_field_memory* memory = nullptr;
    size_t offset = 0;  // from this rank's segment base
  };
  static location find(const void* address);

  MPI_Comm node_comm() const { return node_comm_; }
  // Base of node rank `node_rank`'s segment in this process's address space.
  std::byte* segment_of(int node_rank) const;

 private:
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  MPI_Win window_ = MPI_WIN_NULL;
  std::byte* base_ = nullptr;
  size_t stride_ = 0, size_ = 0;
  int nfields_ = 0;
};

}  // namespace halox
