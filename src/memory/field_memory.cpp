#include "halox/field_memory.hpp"

#include <fmt/core.h>

#include <exception>

#include "halox/common/error.hpp"
#include "halox/topology.hpp"

namespace halox {

shared_field_memory::shared_field_memory(const decomposition& decomp, size_t bytes_per_field,
                                         int nfields, int ranks_per_node)
    : nfields_(nfields) {
  if (nfields < 1) throw usage_error("shared_field_memory needs at least one field");
  node_comm_ = node_communicator(decomp.comm(), ranks_per_node);
  stride_ = (bytes_per_field + 63) / 64 * 64;
  size_ = stride_ * static_cast<size_t>(nfields);
  MPI_Info info;
  MPI_Info_create(&info);
  // Each rank's segment on its own pages: first touch keeps it near its owner.
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  void* base = nullptr;
  MPI_Win_allocate_shared(static_cast<MPI_Aint>(size_ + 64), 1, info, node_comm_, &base, &window_);
  MPI_Info_free(&info);
  auto address = reinterpret_cast<uintptr_t>(base);
  base_ = reinterpret_cast<std::byte*>((address + 63) / 64 * 64);
}

shared_field_memory::~shared_field_memory() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // Freeing is collective: while an error found on this rank alone unwinds
  // (a timeout), the peers may never join, and the job is ending anyway.
  if (!finalized && std::uncaught_exceptions() == 0) {
    MPI_Win_free(&window_);
    MPI_Comm_free(&node_comm_);
  }
}

void* shared_field_memory::field(int index) const {
  return base_ + stride_ * static_cast<size_t>(index);
}

std::byte* shared_field_memory::segment_of(int node_rank) const {
  MPI_Aint size = 0;
  int unit = 1;
  void* base = nullptr;
  MPI_Win_shared_query(window_, node_rank, &size, &unit, &base);
  auto address = reinterpret_cast<uintptr_t>(base);
  return reinterpret_cast<std::byte*>((address + 63) / 64 * 64);
}

}  // namespace halox
