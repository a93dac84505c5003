// node_signals hands out payloads whose pages are already in place: an
// outbox ring whose pages fault in during the first exchanges makes those
// exchanges slower, and a measured choice that times freshly built exchanges
// then passes over the transport that is fastest once warm
// (docs/results/2026-11-28-auto-cold-outbox.md).
// Counted in page faults, not timed.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/resource.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "halox/extend/transport.hpp"
#include "halox/extend/wait_policy.hpp"
#include "transport/common/node_signals.hpp"

using namespace halox;

namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace

TEST(NodeSignals, PayloadPagesAreInPlaceWhenBuilt) {
  node_membership node = make_node_membership(MPI_COMM_WORLD, 0);
  wait_policy waits{.timeout_seconds = 60, .comm = MPI_COMM_WORLD};
  constexpr size_t payload_bytes = size_t{4} << 20;  // 1024 pages of 4 KiB
  std::vector<int> everyone;
  for (int r = 0; r < node.size; ++r) everyone.push_back(r);
  {
    node_signals signals(node, waits, "test", payload_bytes, everyone);
    MPI_Barrier(node.comm);
    const long before = minor_faults();
    std::memset(signals.payload(node.rank), 1, payload_bytes);  // as a writer packs its outbox
    unsigned sum = 0;
    for (int r = 0; r < node.size; ++r)  // as readers copy out of the outboxes
      for (size_t at = 0; at < payload_bytes; at += 64)
        sum += static_cast<unsigned>(signals.payload(r)[at]);
    const long faults = minor_faults() - before;
    EXPECT_LT(faults, 64) << "pages of the payloads faulted in after construction (" << sum << ")";
    MPI_Barrier(node.comm);
  }
  MPI_Comm_free(&node.comm);
}
