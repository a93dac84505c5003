#include "halox_programs/ipc/cma.hpp"

#include <fmt/core.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "halox/common/error.hpp"

namespace halox::ipc {

void cma_copy::on_prepare() {
  local_.clear();
  remote_.clear();
  long iov_max = ::sysconf(_SC_IOV_MAX);
  batch_ = iov_max > 0 ? static_cast<size_t>(iov_max) : 1024;
  if (context_.is_owner()) return;
  local_.resize(layout_.count);
  remote_.resize(layout_.count);
  for (size_t i = 0; i < layout_.count; ++i) {
    local_[i] = {destination_ + layout_.offset(i), layout_.block};
    remote_[i] = {reinterpret_cast<void*>(owner_source_address_ + layout_.offset(i)),
                  layout_.block};
  }
}

void cma_copy::on_copy() {
  if (context_.is_owner()) return;
  const pid_t owner = context_.owner_pid();
  for (size_t first = 0; first < local_.size(); first += batch_) {
    size_t n = std::min(batch_, local_.size() - first);
    ssize_t expected = static_cast<ssize_t>(n * layout_.block);
    ssize_t got = ::process_vm_readv(owner, local_.data() + first, n, remote_.data() + first, n, 0);
    // A short read means an iovec the kernel refused; the data is incomplete.
    if (got != expected) {
      fail(fmt::format("process_vm_readv read {} of {} bytes: {}", got, expected,
                       got < 0 ? std::strerror(errno) : "short read"));
      return;
    }
  }
}

std::string probe_cma(ipc_context& context) {
  uint64_t address = 0;
  if (context.is_owner()) address = reinterpret_cast<uintptr_t>(context.source());
  MPI_Bcast(&address, 1, MPI_UINT64_T, 0, context.comm());
  std::string problem;
  if (!context.is_owner()) {
    uint64_t word = 0;
    iovec local{&word, sizeof word};
    iovec remote{reinterpret_cast<void*>(address), sizeof word};
    if (::process_vm_readv(context.owner_pid(), &local, 1, &remote, 1, 0) !=
        static_cast<ssize_t>(sizeof word))
      problem = fmt::format("process_vm_readv: {}", std::strerror(errno));
  }
  return agree_on_error(context.comm(), problem);
}

}  // namespace halox::ipc
