// MAP_NC and MAP_C: the XPMEM-style single copy without XPMEM. The owner's
// buffer lives in a memfd arena whose descriptor every peer has imported
// (pidfd_getfd or SCM_RIGHTS); a peer maps the owner's pages into its own
// address space and copies the blocks with plain loads and stores.
//
// Reference algorithm (peer; the owner does nothing):
//   MAP_NC:  view = mmap(arena_fd, owner_offset, extent)      every copy
//            copy_blocks(destination, view)
//            munmap(view)
//   MAP_C:   view = cache.lookup(owner_offset, extent)        hit: no system call
//            copy_blocks(destination, view)
// The cache compares the owner's arena epoch on every look-up and drops its
// mappings when the owner repurposed memory; the first copy after prepare()
// maps (cold), the later ones hit.
#pragma once

#include <memory>

#include "halox_programs/ipc/mapping_cache.hpp"
#include "halox_programs/ipc/mechanism.hpp"

namespace halox::ipc {

class map_copy : public copy_mechanism {
 public:
  map_copy(ipc_context& context, bool cached, bool populate);
  mechanism_kind kind() const override {
    return cached_ ? mechanism_kind::map_c : mechanism_kind::map_nc;
  }
  const mapping_cache* cache() const { return cache_.get(); }

 protected:
  void on_prepare() override;
  void on_copy() override;
  bool owner_works() const override { return false; }

 private:
  bool cached_;
  memfd_mapper mapper_;
  std::unique_ptr<mapping_cache> cache_;  // peers of MAP_C
};

}  // namespace halox::ipc
