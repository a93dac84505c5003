// SHMEM_NP and SHMEM_P: copy-in by the owner into a shared bounce segment,
// copy-out by every peer (two copies, the classic shared-memory path).
//
// Reference algorithm (SHMEM_NP: one chunk = the whole buffer):
//   owner:  wait until done[p] == seq-1 for every peer   (the bounce segment is free)
//           for c in chunks: pack the blocks of chunk c into bounce[c]
//                            ready[c] = seq
//   peer:   for c in chunks: wait until ready[c] == seq
//                            unpack bounce[c] into the blocks
//           done[me] = seq
// With several chunks (SHMEM_P) the peers copy chunk c out while the owner
// copies chunk c+1 in. Flags are atomics in the segment's control area, one
// cache line each; waits spin briefly, then yield.
#pragma once

#include "halox_programs/ipc/mechanism.hpp"

namespace halox::ipc {

class shmem_copy : public copy_mechanism {
 public:
  // Collective. chunk_bytes 0: not pipelined (SHMEM_NP).
  shmem_copy(ipc_context& context, size_t max_payload, size_t chunk_bytes);
  mechanism_kind kind() const override {
    return pipelined() ? mechanism_kind::shmem_p : mechanism_kind::shmem_np;
  }
  bool pipelined() const { return chunk_bytes_ != 0; }

 protected:
  void on_prepare() override;
  void on_copy() override;
  bool owner_works() const override { return true; }

 private:
  std::atomic<uint64_t>& ready(size_t chunk);
  std::atomic<uint64_t>& done(int peer);

  size_t max_payload_, chunk_bytes_;
  size_t max_chunks_ = 1;
  size_t chunk_ = 0, chunks_ = 1;  // of the prepared layout
  uint64_t sequence_ = 0;
  shared_arena bounce_;
};

}  // namespace halox::ipc
