// cma: on-node neighbours by cross-memory attach. The reader pulls its halo
// cells straight out of the neighbour's field memory with process_vm_readv,
// wherever the user allocated it (std::vector works): one kernel copy, no
// shared memory, no MPI message.
//
// At set-up every rank publishes to its node its pid, its layout, the
// addresses of its fields and outbox, and its send boxes (in its own
// layout). A reader turns everything it receives from one peer in one stage
// into two lists of iovecs over the same bytes: the peer's runs (remote) and
// its own (local), an x-run each, merged wherever consecutive runs touch in
// memory (boxes spanning whole rows or planes of the allocated extent become
// one run), then cut into batches of at most IOV_MAX per side. The kernel
// walks the page tables once per remote iovec (a cost per run, not per byte:
// docs/results/2026-11-27-figures-from-comments.md), so a box
// whose runs are short (a thin halo across x) is packed by its owner into a
// private outbox and read as one run into an inbox, then unpacked. Which run
// lengths go that way is measured when the transport is built, as for shm
// (single_copy.hpp; HALOX_CMA_DIRECT_MIN_RUN=N forces "runs under N bytes").
//
// Reference algorithm of stage j (the counters are node_signals, the order
// and the outbox ring those of single_copy.hpp):
//   start: pack my outbox boxes into outbox slot(j); ready[me] = seq(j)
//   wait:  for each on-node peer p of the stage:
//            wait until ready[p] >= seq(j)
//            process_vm_readv(pid[p], my halo runs + inbox, p's field runs + p's slot(j))
//            unpack the inbox
//          do my self copies; done[me] = seq(j)
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

#include "halox/extend/transport.hpp"
#include "transport/core/names.hpp"
#include "transport/common/node_publication.hpp"
#include "transport/common/node_signals.hpp"
#include "transport/common/single_copy.hpp"

namespace halox {

class cma_transport final : public single_copy_transport {
 public:
  // Collective over ctx.comm. Every peer of ctx.plan must be on this node.
  explicit cma_transport(const transport_context& ctx);
  ~cma_transport() override;  // waits until no reader still reads my outbox
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return std::string(transport_names::cma); }
  std::string settings() const override;
  void tuning_as_built(transport_tuning& tuning) const override;

 private:
  struct batch {  // one process_vm_readv
    size_t local_first = 0, local_count = 0, remote_first = 0, remote_count = 0, bytes = 0;
  };
  struct peer_read {  // everything one stage reads from one peer
    int peer = 0, node_rank = 0;
    pid_t pid = 0;
    std::vector<iovec> local, remote;
    std::vector<batch> batches;
    copy_list unpack;  // inbox -> the boxes that came through the outbox
  };
  struct stage_work {
    std::vector<peer_read> reads;
    copy_list self_copies;
  };
  struct schedule {
    owner_side owner;
    std::vector<stage_work> stages;
  };

  // Collective over the node (publishes my send boxes).
  schedule build(size_t outbox_below, std::string& problem);
  size_t measured_rule(const std::vector<size_t>& candidates);
  // Cuts r's run lists into batches of at most max_iov runs per side.
  static void cut_into_batches(peer_read& r, size_t max_iov);
  void read(const peer_read& r) const;

  std::vector<node_layout> layouts_;  // by node rank: grid, pid, addresses
  std::vector<std::byte> outbox_, inbox_;
  schedule work_;
  const schedule* active_ = &work_;  // work_, or a candidate while they are measured
  size_t outbox_below_ = 0;
  uint64_t probe_ = 0;  // a word every peer reads once at set-up
};

// Why cma cannot run here (Yama forbids it, a seccomp filter or the kernel
// refuses process_vm_readv), or empty. Cheap: no peer is involved.
std::string cma_unavailable();

}  // namespace halox
