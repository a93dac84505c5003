// Field memory that the ranks of a node can read directly (MPI-3 shared
// windows), so that single-copy transports (`shm`) copy halos straight from
// the neighbour's fields: one copy, no packing, no MPI message. Fields in
// ordinary memory work with every transport too; `shm` then packs them into its outbox.
//
//   halox::shared_fields<double> fields(decomp, grid, nfields);
//   fields[0][grid.index(x, y, z)] = ...;
//   halox::halo_exchange ex(decomp, grid, fields.pointers(),
//                           {.transport = halox::parse_transport_choice("shm")});
//
// An exchange finds its fields in such memory by their addresses.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "halox/decomposition.hpp"
#include "halox/grid.hpp"

namespace halox {

// Node-shared memory lives in a file system (/dev/shm) that can be much
// smaller than the machine's memory (64 MiB in a container by default);
// exhausting it kills the job (MPI_ERR_INTERN under Open MPI, SIGBUS under
// MPICH). Its space is checked before anything is allocated there.
struct shared_memory_space {
  size_t needed = 0;          // by the ranks of the node with the least room, together
  size_t available = 0;       // free on that node (0 when unknown)
  bool known = false;         // statvfs answered on every node
  bool fits = true;           // on every node
  std::string where = "/dev/shm";
};

// Collective over comm: whether `bytes` more of node-shared memory per rank
// fit on every node (nodes as node_comm groups the ranks), agreed by all.
shared_memory_space node_shared_memory_space(MPI_Comm comm, MPI_Comm node_comm, size_t bytes);

// "node-shared memory: <what> need 104.9 MB on this node but /dev/shm has
// 67.1 MB free: ..." with the ways out.
std::string describe_shortage(const shared_memory_space& space, std::string_view what);

class shared_field_memory {
 public:
  // Collective over decomp.comm(): every rank allocates nfields fields of
  // bytes_per_field bytes (64-byte aligned) in a window shared on its node
  // (ranks_per_node as in exchange_options). Throws usage_error on every
  // rank when they do not fit in node-shared memory (describe_shortage).
  shared_field_memory(const decomposition& decomp, size_t bytes_per_field, int nfields,
                      int ranks_per_node = 0);
  shared_field_memory(const shared_field_memory&) = delete;
  shared_field_memory& operator=(const shared_field_memory&) = delete;
  ~shared_field_memory();  // collective (frees the window)

  void* field(int index) const;
  int nfields() const { return nfields_; }
  std::vector<void*> pointers() const {
    std::vector<void*> out;
    for (int f = 0; f < nfields_; ++f) out.push_back(field(f));
    return out;
  }
  // Where field `index` starts in every node rank's segment.
  size_t offset(int index) const { return stride_ * static_cast<size_t>(index); }
  // Where `data`, in this rank's own segment, starts in it.
  size_t offset_of(const std::byte* data) const { return static_cast<size_t>(data - base_); }

  // The live memory whose segment on this rank holds every one of `fields`
  // (each at its start), or null: how an exchange finds fields it can let its
  // node's ranks read in place.
  static const shared_field_memory* holding(const std::vector<std::byte*>& fields);

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
      : memory_(decomp, grid.points() * sizeof(T), nfields, ranks_per_node) {}
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

// The fields of an exchange and how they were allocated.
struct field_set {
  std::vector<std::byte*> pointers;             // first allocated cell of each field
  const shared_field_memory* shared = nullptr;  // all fields in this node-shared allocation, or null
  bool device = false;       // all fields in CUDA device memory (halox/device.hpp)
  void* stream = nullptr;    // the cudaStream_t device work runs on (null: the default stream)
};

}  // namespace halox
