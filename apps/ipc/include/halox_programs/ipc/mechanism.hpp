// Intra-node copy mechanisms for non-contiguous data (seed 004): an owner
// process holds a buffer cut into blocks; one or more peers copy the blocks
// into their own memory. Every mechanism has the same shape:
//
//   prepare(layout, source, destination)   collective, untimed set-up
//   copy()                                 collective, the timed data movement
//   verify(generation)                     peer-side check against the pattern
//
// copy() neither starts nor ends with a synchronisation: the caller sends the
// control messages ("data ready", "copy done") around it, so their cost is
// measured apart from the copy.
#pragma once

#include <mpi.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "halox_programs/ipc/layout.hpp"
#include "halox_programs/ipc/shared_arena.hpp"

namespace halox::ipc {

enum class mechanism_kind { shmem_np, shmem_p, cma, map_nc, map_c, mpi_dt, xpmem_nc, xpmem_c };

std::string to_string(mechanism_kind kind);  // the column name, e.g. "SHMEM_NP"
// Accepts the column name in any case, with '-' for '_'; throws usage_error.
mechanism_kind parse_mechanism(const std::string& name);
const std::vector<mechanism_kind>& all_mechanisms();  // in column order

// The ranks of one owner (rank 0 of the group) and its peers, and the owner's
// source memory: a memfd arena every peer has imported, so that the mapping
// mechanisms can map it and all mechanisms copy from the same memory.
class ipc_context {
 public:
  // Collective over group (duplicated inside). source_capacity: the largest
  // extent that will be copied. force_socket: pass descriptors over a Unix
  // socket instead of pidfd_getfd (tests the fallback).
  ipc_context(MPI_Comm group, size_t source_capacity, bool force_socket = false);
  ~ipc_context();
  ipc_context(const ipc_context&) = delete;
  ipc_context& operator=(const ipc_context&) = delete;

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_owner() const { return rank_ == 0; }
  int peer_count() const { return size_ - 1; }
  int peer_index() const { return rank_ - 1; }  // 0-based, peers only
  pid_t owner_pid() const { return owner_pid_; }
  fd_passing how_shared() const { return how_shared_; }

  // Owner: the whole source arena (read-write). Peers: header only.
  shared_arena& source_arena() { return source_; }
  // Owner: where its blocks may live; null on peers.
  std::byte* source() { return source_.data(); }
  size_t source_capacity() const { return source_capacity_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  pid_t owner_pid_ = 0;
  size_t source_capacity_ = 0;
  shared_arena source_;
  fd_passing how_shared_ = fd_passing::pidfd_getfd;
};

// Steady-clock seconds: CLOCK_MONOTONIC, one clock for all processes of a
// node, so spans of different ranks can be compared.
inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One rank's part of a copy; empty (start = +inf) when the rank did nothing.
struct copy_span {
  double start = std::numeric_limits<double>::infinity();
  double end = -std::numeric_limits<double>::infinity();
  bool did_work() const { return start <= end; }
};

class region_mapper;
class mapping_cache;

class copy_mechanism {
 public:
  explicit copy_mechanism(ipc_context& context) : context_(context) {}
  virtual ~copy_mechanism() = default;
  copy_mechanism(const copy_mechanism&) = delete;
  copy_mechanism& operator=(const copy_mechanism&) = delete;

  virtual mechanism_kind kind() const = 0;
  std::string name() const { return to_string(kind()); }

  // Collective. source (owner): the blocks, inside context.source_arena();
  // destination (peer): room for layout.extent() bytes. Both outlive the
  // copies. Builds what the layout needs; caches start empty, so the first
  // copy after prepare() is the cold one.
  void prepare(const block_layout& layout, std::byte* source, std::byte* destination);
  // Collective. Moves the owner's blocks into every peer's destination.
  copy_span copy();
  // Peer: empty when the destination holds the pattern of `generation` and the
  // copies reported no error; else what is wrong. Owner: always empty.
  std::string verify(uint64_t generation) const;
  // The first error a copy met (copies never throw: a throwing peer would
  // leave the others waiting); empty when none.
  const std::string& copy_error() const { return error_; }

 protected:
  virtual void on_prepare() = 0;
  virtual void on_copy() = 0;
  // Whether the owner's part of copy() moves data (its span then counts).
  virtual bool owner_works() const = 0;
  void fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }
  // Peer side of the mapping mechanisms (MAP_*, XPMEM_*): copy the owner's
  // blocks through the cache when there is one, else through a mapping made
  // for this copy only.
  void copy_through_mapping(region_mapper& mapper, mapping_cache* cache);

  ipc_context& context_;
  block_layout layout_;
  std::byte* source_ = nullptr;       // owner
  std::byte* destination_ = nullptr;  // peer
  // The owner's source as peers see it: offset in the arena's data, address
  // in the owner's address space.
  size_t owner_source_offset_ = 0;
  uintptr_t owner_source_address_ = 0;

 private:
  std::string error_;
};

struct mechanism_options {
  size_t max_payload = 0;      // largest layout.payload() (the bounce segment's size)
  size_t chunk_bytes = 65536;  // SHMEM_P pipeline chunk
  bool populate = true;        // MAP_*: pre-fault mappings (MAP_POPULATE)
};

struct availability {
  bool available = false;
  std::string reason;  // why not, when not
};

// Decided by this process alone (same answer on every rank of a node):
// XPMEM needs /dev/xpmem and libxpmem; the others are always built in.
availability local_availability(mechanism_kind kind);
// Collective: local_availability plus a probe where only trying tells (CMA
// reads a word of the owner). The same answer on every rank of the group.
availability probe_availability(mechanism_kind kind, ipc_context& context);

// Collective (set-up that involves the peers, e.g. sharing a bounce segment).
std::unique_ptr<copy_mechanism> make_mechanism(mechanism_kind kind, ipc_context& context,
                                               const mechanism_options& options);

}  // namespace halox::ipc
