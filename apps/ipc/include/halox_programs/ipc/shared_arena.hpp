// Memory that other processes of the node can map: a memfd, shared by file
// descriptor. The owner creates it; peers import the descriptor and map the
// parts they need. A later shared-memory halo transport reuses it as is.
//
// File layout:  [header page][control area][data]
//   header  — magic, sizes, and the epoch that mapping caches check;
//   control — flags and counters of whoever uses the arena (e.g. pipelining);
//   data    — the payload, page-aligned so any page range can be mapped.
#pragma once

#include <mpi.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace halox::ipc {

struct arena_header {
  uint64_t magic;
  uint64_t control_offset, control_bytes;
  uint64_t data_offset, data_bytes;
  // Bumped by the owner when it repurposes data memory; peers holding cached
  // mappings compare it on every look-up and drop them when it moved.
  std::atomic<uint64_t> epoch;
};

size_t page_size();
size_t round_up_to_page(size_t bytes);

class shared_arena {
 public:
  // Owner: a new memfd of data_bytes (+ control_bytes), mapped read-write.
  static shared_arena create(const std::string& name, size_t data_bytes, size_t control_bytes = 0);
  // Peer: takes ownership of an imported descriptor. Maps the header and the
  // control area; the data only when map_data (otherwise map ranges on demand).
  static shared_arena import(int fd, bool map_data);

  shared_arena() = default;
  shared_arena(shared_arena&& other) noexcept;
  shared_arena& operator=(shared_arena&& other) noexcept;
  shared_arena(const shared_arena&) = delete;
  shared_arena& operator=(const shared_arena&) = delete;
  ~shared_arena();

  int fd() const { return fd_; }
  bool is_owner() const { return owner_; }
  size_t data_bytes() const { return header_ ? header_->data_bytes : 0; }
  // File offset of data byte 0 (page-aligned): what mmap of a data range needs.
  size_t data_offset() const { return header_ ? header_->data_offset : 0; }
  // Null on a peer that did not map the data.
  std::byte* data() const { return data_; }
  std::byte* control() const { return control_; }
  size_t control_bytes() const { return header_ ? header_->control_bytes : 0; }

  uint64_t epoch() const { return header_->epoch.load(std::memory_order_acquire); }
  const std::atomic<uint64_t>* epoch_word() const { return &header_->epoch; }
  // Owner: tells every cache that its mappings of this arena are stale.
  void invalidate() { header_->epoch.fetch_add(1, std::memory_order_acq_rel); }

 private:
  void release() noexcept;
  int fd_ = -1;
  bool owner_ = false;
  std::byte* base_ = nullptr;  // header + control (+ data when mapped)
  size_t mapped_bytes_ = 0;
  arena_header* header_ = nullptr;
  std::byte* control_ = nullptr;
  std::byte* data_ = nullptr;
};

// How a descriptor reached the peers.
enum class fd_passing { pidfd_getfd, unix_socket };
std::string to_string(fd_passing how);

// The pid of the process connected on a Unix socket when it runs as this user
// and is one of `expected`, else -1. An abstract socket is reachable by any
// local process: the kernel's word on who connected (SO_PEERCRED) decides who
// may receive a descriptor of our memory.
pid_t trusted_socket_peer(int connection, std::span<const pid_t> expected);

struct shared_fd {
  int fd = -1;  // the root's own descriptor on the root, a new one elsewhere
  fd_passing how = fd_passing::pidfd_getfd;
};

// Collective over comm: every rank obtains root's descriptor `fd`. Tries
// pidfd_getfd (Linux >= 5.6, same user) and falls back to SCM_RIGHTS over an
// abstract Unix socket; all ranks agree on the path. Throws run_error on all
// ranks when neither works. force_socket skips pidfd_getfd (tests the fallback).
shared_fd share_fd(MPI_Comm comm, int root, int fd, bool force_socket = false);

}  // namespace halox::ipc
