// Field memory that the ranks of a node can read directly (MPI-3 shared
// windows), so that single-copy transports (`shm`) copy halos straight from
// the neighbour's fields: one copy, no packing, no MPI message. Fields in
// ordinary memory work with every transport too; `shm` then stages them.
//
//   halox::shared_fields<double> fields(decomp, grid, nfields);
//   fields[0][grid.index(x, y, z)] = ...;
//   halox::halo_exchange ex(decomp, grid, fields,
//                           {.transport = halox::parse_transport_choice("shm")});
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "halox/decomposition.hpp"
#include "halox/grid.hpp"

namespace halox {

class shared_field_memory {
 public:
  // Collective over decomp.comm(): every rank allocates nfields fields of
  // bytes_per_field bytes (64-byte aligned) in a window shared on its node
  // (ranks_per_node as in exchange_options).
  shared_field_memory(const decomposition& decomp, size_t bytes_per_field, int nfields,
                      int ranks_per_node = 0);
  shared_field_memory(const shared_field_memory&) = delete;
  shared_field_memory& operator=(const shared_field_memory&) = delete;
  ~shared_field_memory();  // collective (frees the window)

  void* field(int index) const;
  int nfields() const { return nfields_; }
  // Where field `index` starts in every node rank's segment.
  size_t offset(int index) const { return stride_ * static_cast<size_t>(index); }

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

// nfields fields of T laid out as `grid` describes, in node-shared memory.
template <class T>
class shared_fields {
 public:
  shared_fields(const decomposition& decomp, const local_grid& grid, int nfields,
                int ranks_per_node = 0)
      : memory_(decomp, grid.cells() * sizeof(T), nfields, ranks_per_node) {}
  T* operator[](int index) const { return static_cast<T*>(memory_.field(index)); }
  int size() const { return memory_.nfields(); }
  std::vector<T*> pointers() const {
    std::vector<T*> out;
    for (int f = 0; f < size(); ++f) out.push_back((*this)[f]);
    return out;
  }
  const shared_field_memory& memory() const { return memory_; }

 private:
  shared_field_memory memory_;
};

}  // namespace halox
