// CMA: every peer reads the blocks straight from the owner's memory with
// process_vm_readv (cross-memory attach; one kernel copy, no bounce segment).
//
// Reference algorithm (peer; the owner does nothing):
//   local[i]  = {destination + i*stride, block}
//   remote[i] = {owner_source + i*stride, block}
//   for batches of at most IOV_MAX iovecs:
//     process_vm_readv(owner_pid, local[batch], remote[batch])
// The iovec lists are built in prepare() (like a committed datatype); a copy
// is only the system calls. Needs the same user and no ptrace restriction.
#pragma once

#include <sys/uio.h>

#include <vector>

#include "halox_programs/ipc/mechanism.hpp"

namespace halox::ipc {

class cma_copy : public copy_mechanism {
 public:
  explicit cma_copy(ipc_context& context) : copy_mechanism(context) {}
  mechanism_kind kind() const override { return mechanism_kind::cma; }

 protected:
  void on_prepare() override;
  void on_copy() override;
  bool owner_works() const override { return false; }

 private:
  std::vector<iovec> local_, remote_;
  size_t batch_ = 1024;  // IOV_MAX
};

// Collective: empty when a peer can read the owner's memory with
// process_vm_readv, else why not (e.g. "Operation not permitted").
std::string probe_cma(ipc_context& context);

}  // namespace halox::ipc
