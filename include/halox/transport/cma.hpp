// cma: on-node neighbours by cross-memory attach. The reader pulls its halo
// cells straight out of the neighbour's field memory with process_vm_readv,
// wherever the user allocated it (std::vector works): one kernel copy, no
// shared memory, no MPI message.
//
// At set-up every rank publishes to its node its pid, its layout, the
// addresses of its fields and its send boxes (in its own layout). A reader
// turns everything it receives from one peer in one step into two lists of
// iovecs over the same bytes: the peer's runs (remote) and its own halo runs
// (local), an x-run each, merged wherever consecutive runs touch in memory
// (boxes spanning whole rows or planes of the allocated extent become one
// run), then cut into batches of at most IOV_MAX per side, splitting a run
// where a batch ends inside it. The kernel walks the page tables once per
// remote iovec (0.1-0.3 us each), so a box whose merged runs are short (a thin
// halo across x) is packed by its owner into a private outbox and read as one
// run into an inbox, then unpacked (HALOX_CMA_DIRECT_MIN_RUN sets the run
// length below which boxes go that way).
//
// Reference algorithm for step k (k counts stages over all exchanges):
//   start: pack staged boxes into my outbox; do self copies
//          ready[me] = k                      (my cells for step k are final)
//   wait:  for each on-node peer p of the step:
//            wait until ready[p] >= k
//            process_vm_readv(pid[p], my halo runs + inbox, p's field runs + p's outbox)
//            unpack the inbox
//          done[me] = k
//   after the last step: wait until done[p] >= k for every peer p that reads
//          my cells (nobody still reads them when the caller may change them)
// The counters are node_signals; the step rules are those of shm.
//
// The kernel allows the read between processes of the same user with ptrace
// permission (Yama's ptrace_scope, CAP_SYS_PTRACE in containers); set-up tries
// one read from every peer and fails on every rank with a hint if refused.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "halox/transport.hpp"
#include "halox/transport/node_signals.hpp"

namespace halox {

class cma_transport final : public transport {
 public:
  // Collective over ctx.comm. Every peer of ctx.plan must be on this node.
  explicit cma_transport(const transport_context& ctx);
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return "cma"; }

 private:
  struct batch {  // one process_vm_readv
    size_t local_first = 0, local_count = 0, remote_first = 0, remote_count = 0, bytes = 0;
  };
  struct staged_part {  // boxes packed by their owner, read as one run into my inbox
    std::vector<field_box> boxes;
    size_t offset = 0;  // in my outbox (packing), or in my inbox (unpacking)
  };
  struct peer_read {  // everything one step reads from one peer
    int peer = 0, node_rank = 0;
    pid_t pid = 0;
    std::vector<iovec> local, remote;
    std::vector<batch> batches;
    staged_part unpack;
  };
  struct stage_work {
    staged_part pack;
    std::vector<peer_read> reads;
  };

  // Cuts r's run lists into batches of at most max_iov runs per side.
  static void cut_into_batches(peer_read& r, size_t max_iov);
  void read(const peer_read& r) const;

  const exchange_plan& plan_;
  const field_set& fields_;
  std::vector<stage_work> stages_;
  std::vector<int> readers_;  // node ranks that read my cells
  std::vector<std::byte> outbox_, inbox_;
  std::optional<node_signals> signals_;
  uint64_t probe_ = 0;  // a word every peer reads once at set-up
  uint64_t step_ = 0;
  int me_ = 0;
};

// Why cma cannot run here (Yama forbids it, a seccomp filter or the kernel
// refuses process_vm_readv), or empty. Cheap: no peer is involved.
std::string cma_unavailable();

}  // namespace halox
