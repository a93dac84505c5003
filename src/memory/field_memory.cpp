#include "halox/field_memory.hpp"

#include <fmt/core.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <exception>
#include <mutex>

#include "common/yielding_mpi.hpp"
#include "halox/common/error.hpp"
#include "halox/extend/topology.hpp"

namespace halox {

namespace {

// Where MPI libraries put their shared windows (Open MPI's osc/sm backing
// directory and MPICH's default).
constexpr const char* shared_memory_directory = "/dev/shm";

bool free_bytes(size_t& out) {
  struct statvfs fs {};
  if (::statvfs(shared_memory_directory, &fs) != 0) return false;
  out = static_cast<size_t>(fs.f_bavail) * static_cast<size_t>(fs.f_frsize);
  return true;
}

// The shared memory alive in this process, for holding().
std::mutex live_memory_lock;
std::vector<const shared_field_memory*> live_memory;

}  // namespace

shared_memory_space node_shared_memory_space(MPI_Comm comm, MPI_Comm node_comm, size_t bytes) {
  unsigned long long node_needs[2] = {bytes, 0};  // needed, free
  yielding_allreduce(MPI_IN_PLACE, node_needs, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, node_comm);
  int node_rank = 0, rank = 0;
  MPI_Comm_rank(node_comm, &node_rank);
  MPI_Comm_rank(comm, &rank);
  size_t available = 0;
  int known = node_rank == 0 && free_bytes(available) ? 1 : 0;
  node_needs[1] = available;
  yielding_bcast(&known, 1, MPI_INT, 0, node_comm);
  yielding_bcast(&node_needs[1], 1, MPI_UNSIGNED_LONG_LONG, 0, node_comm);
  // The node with the least room left speaks for all.
  struct {
    double margin;
    int rank;
  } least{known ? static_cast<double>(node_needs[1]) - static_cast<double>(node_needs[0]) : 1e300,
          rank};
  yielding_allreduce(MPI_IN_PLACE, &least, 1, MPI_DOUBLE_INT, MPI_MINLOC, comm);
  yielding_bcast(node_needs, 2, MPI_UNSIGNED_LONG_LONG, least.rank, comm);
  int all_known = known;
  yielding_allreduce(MPI_IN_PLACE, &all_known, 1, MPI_INT, MPI_MIN, comm);
  shared_memory_space space;
  space.needed = node_needs[0];
  space.available = node_needs[1];
  space.known = all_known != 0;
  space.fits = least.margin >= 0;
  return space;
}

std::string describe_shortage(const shared_memory_space& space, std::string_view what) {
  return fmt::format(
      "node-shared memory: {} need {:.1f} MB on a node but {} has {:.1f} MB free: "
      "allocate them in private memory (field memory private) or enlarge "
      "{} (docker run --shm-size=..., or mount -o remount,size=... {})",
      what, space.needed / 1e6, space.where, space.available / 1e6, space.where, space.where);
}

shared_field_memory::shared_field_memory(const decomposition& decomp, size_t bytes_per_field,
                                         int nfields, int ranks_per_node)
    : nfields_(nfields) {
  if (nfields < 1) throw usage_error("shared_field_memory needs at least one field");
  node_comm_ = node_communicator(decomp.comm(), ranks_per_node);
  stride_ = (bytes_per_field + 63) / 64 * 64;
  size_ = stride_ * static_cast<size_t>(nfields);
  if (auto space = node_shared_memory_space(decomp.comm(), node_comm_, size_ + 64); !space.fits) {
    MPI_Comm_free(&node_comm_);
    throw usage_error(describe_shortage(space, "the fields in node-shared memory"));
  }
  MPI_Info info;
  MPI_Info_create(&info);
  // Each rank's segment on its own pages: first touch keeps it near its owner.
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  void* base = nullptr;
  MPI_Win_allocate_shared(static_cast<MPI_Aint>(size_ + 64), 1, info, node_comm_, &base, &window_);
  MPI_Info_free(&info);
  auto address = reinterpret_cast<uintptr_t>(base);
  base_ = reinterpret_cast<std::byte*>((address + 63) / 64 * 64);
  const std::lock_guard hold(live_memory_lock);
  live_memory.push_back(this);
}

shared_field_memory::~shared_field_memory() {
  {
    const std::lock_guard hold(live_memory_lock);
    std::erase(live_memory, this);
  }
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

const shared_field_memory* shared_field_memory::holding(const std::vector<std::byte*>& fields) {
  if (fields.empty()) return nullptr;
  const std::lock_guard hold(live_memory_lock);
  for (const shared_field_memory* m : live_memory)
    if (std::ranges::all_of(fields, [m](const std::byte* f) {
          return f >= m->base_ && f < m->base_ + m->size_;
        }))
      return m;
  return nullptr;
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
