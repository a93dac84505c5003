#include "transport/common/node_signals.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <exception>

#include "common/stage_timer.hpp"
#include "common/yielding_mpi.hpp"
#include "halox/common/error.hpp"
#include "halox/field_memory.hpp"

namespace halox {

namespace {

constexpr size_t counter_slot = 128;    // ready, done and pushed on separate cache lines
constexpr size_t payload_start = 4096;  // the payload starts a page in
constexpr int ready_counter = 0, done_counter = 1, pushed_counter = 2;
constexpr const char* counter_names[] = {"ready", "done", "pushed"};

// Reads a byte of every page, so that this process maps them.
void map_payload(const std::byte* payload, size_t bytes) {
  const long page = sysconf(_SC_PAGESIZE);
  const size_t step = page > 0 ? static_cast<size_t>(page) : 4096;
  unsigned sum = 0;
  for (size_t at = 0; at < bytes; at += step)
    sum += static_cast<unsigned>(*static_cast<const volatile std::byte*>(payload + at));
  (void)sum;
}

uint64_t load_acquire(const uint64_t* p) {
  return std::atomic_ref<const uint64_t>(*p).load(std::memory_order_acquire);
}
void store_release(uint64_t* p, uint64_t v) {
  std::atomic_ref<uint64_t>(*p).store(v, std::memory_order_release);
}

}  // namespace

node_signals::node_signals(const node_membership& node, const wait_policy& waits,
                           std::string transport, size_t payload_bytes,
                           const std::vector<int>& read_from)
    : waits_(waits), transport_(std::move(transport)), me_(node.rank) {
  // Timeouts name exchange ranks, as every other wait does.
  comm_rank_of_.resize(static_cast<size_t>(node.size));
  for (size_t r = 0; r < node.node_rank_of.size(); ++r)
    if (node.node_rank_of[r] >= 0)
      comm_rank_of_[static_cast<size_t>(node.node_rank_of[r])] = static_cast<int>(r);
  // Agreed over the whole exchange, so that no node goes on alone.
  const MPI_Comm everyone = waits.comm != MPI_COMM_NULL ? waits.comm : node.comm;
  if (auto space = node_shared_memory_space(everyone, node.comm, payload_start + payload_bytes);
      !space.fits)
    throw usage_error(describe_shortage(space, transport_ + "'s outbox and signals"));
  void* base = nullptr;
  MPI_Win_allocate_shared(static_cast<MPI_Aint>(payload_start + payload_bytes), 1, MPI_INFO_NULL,
                          node.comm, &base, &window_);
  // Each rank's payload is its own size (its outbox): read a peer's by the
  // size it allocated, not by this rank's.
  std::vector<size_t> payload_sizes;
  for (int r = 0; r < node.size; ++r) {
    MPI_Aint size = 0;
    int unit = 1;
    void* segment = nullptr;
    MPI_Win_shared_query(window_, r, &size, &unit, &segment);
    counters_.push_back(static_cast<uint64_t*>(segment));
    payload_.push_back(static_cast<std::byte*>(segment) + payload_start);
    payload_sizes.push_back(
        static_cast<size_t>(size) > payload_start ? static_cast<size_t>(size) - payload_start : 0);
  }
  for (int counter : {ready_counter, done_counter, pushed_counter})
    store_release(counters_[static_cast<size_t>(me_)] + counter * (counter_slot / 8), 0);
  // Fault the pages in now, not in the first exchanges: each slot of an
  // outbox ring would otherwise cost its writer and readers a page fault per
  // page the first time round, and a measured choice that times freshly
  // built exchanges would pass over the transport.
  std::memset(payload_[static_cast<size_t>(me_)], 0, payload_bytes);
  yielding_barrier(node.comm);  // counters are zero, payloads allocated, before the first stage
  for (int r : read_from)
    map_payload(payload_[static_cast<size_t>(r)], payload_sizes[static_cast<size_t>(r)]);
}

node_signals::~node_signals() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // Freeing is collective: while an error found on this rank alone unwinds
  // (a timeout), the peers may never join, and the job is ending anyway.
  if (!finalized && window_ != MPI_WIN_NULL && std::uncaught_exceptions() == 0)
    MPI_Win_free(&window_);
}

void node_signals::raise_ready(uint64_t seq) {
  store_release(counters_[static_cast<size_t>(me_)] + ready_counter * (counter_slot / 8), seq);
}

void node_signals::raise_done(uint64_t seq) {
  store_release(counters_[static_cast<size_t>(me_)] + done_counter * (counter_slot / 8), seq);
}

void node_signals::raise_pushed(uint64_t seq) {
  store_release(counters_[static_cast<size_t>(me_)] + pushed_counter * (counter_slot / 8), seq);
}

void node_signals::wait_ready(int node_rank, uint64_t seq) const {
  wait_for(node_rank, ready_counter, seq);
}

void node_signals::wait_done(int node_rank, uint64_t seq) const {
  wait_for(node_rank, done_counter, seq);
}

void node_signals::wait_pushed(int node_rank, uint64_t seq) const {
  wait_for(node_rank, pushed_counter, seq);
}

void node_signals::wait_for(int node_rank, int counter, uint64_t seq) const {
  const uint64_t* flag = counters_[static_cast<size_t>(node_rank)] + counter * (counter_slot / 8);
  if (load_acquire(flag) >= seq) return;
  const stage_timer::part_span waiting(counter == done_counter ? stage_timer::wait_readers
                                                               : stage_timer::wait_peers);
  waits_.spin_until([&] { return load_acquire(flag) >= seq; },
                    [&] {
                      return fmt::format("rank {} to be {} with stage number {} ({})",
                                         comm_rank_of_[static_cast<size_t>(node_rank)],
                                         counter_names[counter], seq, transport_);
                    });
}

}  // namespace halox
