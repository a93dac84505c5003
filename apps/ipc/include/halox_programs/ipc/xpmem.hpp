// XPMEM_NC and XPMEM_C: the single copy through the XPMEM kernel module, as in
// the seed. Used only where /dev/xpmem exists and libxpmem can be loaded
// (looked up at run time with dlopen, so halox builds and runs without it).
//
// Reference algorithm:
//   owner (prepare):  segid = xpmem_make(arena data, size, XPMEM_PERMIT_MODE, 0600)
//   peer (prepare):   apid  = xpmem_get(segid, XPMEM_RDWR, XPMEM_PERMIT_MODE, NULL)
//   XPMEM_NC (peer):  view = xpmem_attach({apid, offset}, extent); copy; xpmem_detach(view)
//   XPMEM_C  (peer):  view = cache.lookup(offset, extent); copy
#pragma once

#include <cstdint>
#include <memory>

#include "halox_programs/ipc/mapping_cache.hpp"
#include "halox_programs/ipc/mechanism.hpp"

namespace halox::ipc {

// Empty when XPMEM can be used here, else why not.
std::string xpmem_unavailable_reason();

class xpmem_copy : public copy_mechanism {
 public:
  // Collective. Throws run_error on every rank when XPMEM fails.
  xpmem_copy(ipc_context& context, bool cached);
  ~xpmem_copy() override;
  mechanism_kind kind() const override {
    return cached_ ? mechanism_kind::xpmem_c : mechanism_kind::xpmem_nc;
  }

 protected:
  void on_prepare() override;
  void on_copy() override;
  bool owner_works() const override { return false; }

 private:
  class attach_mapper;
  bool cached_;
  int64_t segid_ = -1, apid_ = -1;
  std::unique_ptr<attach_mapper> mapper_;
  std::unique_ptr<mapping_cache> cache_;
};

}  // namespace halox::ipc
