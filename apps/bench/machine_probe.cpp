// The machine probe: a cache-line ping-pong between two ranks' cores in an
// MPI-3 shared window (the ranks themselves, so pinned as they are), a memcpy
// on every rank at once, and the kernel's counters of stolen and waited time.
#include "machine_probe.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>

#include "halox_programs/stats.hpp"

namespace halox::bench {

namespace {

constexpr size_t line_stride = 128;               // a pair's line and the one beside it
constexpr std::uint64_t stop_value = ~std::uint64_t{0};
constexpr std::uint64_t ready_value = std::uint64_t{1} << 62;  // the responder has arrived
constexpr int round_trips_per_batch = 100, batches = 3, warmup_round_trips = 20;
constexpr size_t probe_copy_bytes = size_t{1} << 20;

// With more ranks than cores the partner may need this core to answer: then
// waits yield now and then (elsewhere a yield would hand the core to any
// other process for a whole time slice).
thread_local bool yield_while_waiting = false;

void pause_a_little(long& spins) {
  if (yield_while_waiting && ++spins % 512 == 0) {
    std::this_thread::yield();
    return;
  }
  ++spins;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

std::atomic_ref<std::uint64_t> line_at(char* p) {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(p));
}

// The initiator's side: batches of round trips, the median batch's mean. A
// partner that lost its core ends it after ping_pong_cap_s, the round trip
// then counted as the time waited so far.
double ping(char* line) {
  auto value = line_at(line);
  long waited = 0;
  while (value.load(std::memory_order_acquire) != ready_value) pause_a_little(waited);
  std::uint64_t next = 1;
  const double start = MPI_Wtime();
  auto round_trip = [&] {
    long spins = 0;
    value.store(next, std::memory_order_release);
    while (value.load(std::memory_order_acquire) != next + 1) {
      pause_a_little(spins);
      if (spins % 64 == 0 && MPI_Wtime() - start > ping_pong_cap_s) return false;
    }
    next += 2;
    return true;
  };
  bool answered = true;
  for (int i = 0; i < warmup_round_trips && answered; ++i) answered = round_trip();
  std::vector<double> means;
  for (int b = 0; b < batches && answered && (b == 0 || MPI_Wtime() - start < ping_pong_cap_s);
       ++b) {
    const double t0 = MPI_Wtime();
    int done = 0;
    while (done < round_trips_per_batch && (answered = round_trip())) ++done;
    means.push_back((MPI_Wtime() - t0) / std::max(done, 1));
  }
  if (means.empty()) means.push_back(MPI_Wtime() - start);
  long spins = 0;
  value.store(stop_value, std::memory_order_release);
  while (value.load(std::memory_order_acquire) != 0) pause_a_little(spins);
  return summarize(means).median * 1e9;
}

// The responder's side: answers every odd value until told to stop (an answer
// never overwrites the stop).
void pong(char* line) {
  auto value = line_at(line);
  long spins = 0;
  value.store(ready_value, std::memory_order_release);
  for (;;) {
    std::uint64_t v = value.load(std::memory_order_acquire);
    if (v == stop_value) break;
    if ((v & 1) != 0) {
      value.compare_exchange_strong(v, v + 1, std::memory_order_acq_rel);
    } else {
      pause_a_little(spins);
    }
  }
  value.store(0, std::memory_order_release);
}

// This CPU's (total, steal) jiffies from /proc/stat.
std::optional<std::pair<unsigned long long, unsigned long long>> cpu_counters(int cpu) {
  std::ifstream in("/proc/stat");
  const std::string name = "cpu" + std::to_string(cpu);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string head;
    fields >> head;
    if (head != name) continue;
    unsigned long long v = 0, total = 0, steal = 0;
    for (int i = 0; i < 8 && fields >> v; ++i) {
      total += v;
      if (i == 7) steal = v;
    }
    return std::make_pair(total, steal);
  }
  return std::nullopt;
}

// The nanoseconds this process waited on a run queue (/proc/self/schedstat).
std::optional<unsigned long long> run_wait_ns() {
  std::ifstream in("/proc/self/schedstat");
  unsigned long long running = 0, waiting = 0;
  if (in >> running >> waiting) return waiting;
  return std::nullopt;
}

std::optional<double> load_average() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  if (in >> load) return load;
  return std::nullopt;
}

// Neighbour pairs of the rank grid whose ranks share a node, the closest and
// the farthest apart by CPU number (one pair where they coincide).
std::vector<probe_pair> choose_pairs(const decomposition& decomp, const std::vector<int>& cpus,
                                     const std::vector<int>& nodes) {
  std::vector<probe_pair> all;
  const ivec3 dims = decomp.dims();
  ivec3 c{};
  for (c[0] = 0; c[0] < dims[0]; ++c[0])
    for (c[1] = 0; c[1] < dims[1]; ++c[1])
      for (c[2] = 0; c[2] < dims[2]; ++c[2])
        for (int d = 0; d < 3; ++d) {
          ivec3 n = c;
          if (++n[d] == dims[d]) {
            if (!decomp.periodic()[d]) continue;
            n[d] = 0;
          }
          const int a = decomp.rank_of(c), b = decomp.rank_of(n);
          if (a == b || nodes[static_cast<size_t>(a)] != nodes[static_cast<size_t>(b)]) continue;
          all.push_back({std::min(a, b), std::max(a, b), cpus[static_cast<size_t>(std::min(a, b))],
                         cpus[static_cast<size_t>(std::max(a, b))]});
        }
  if (all.empty()) return {};
  auto key = [](const probe_pair& p) {
    return std::make_tuple(std::abs(p.cpu_a - p.cpu_b), p.rank_a, p.rank_b);
  };
  auto by_distance = [&](const probe_pair& x, const probe_pair& y) { return key(x) < key(y); };
  probe_pair nearest = *std::min_element(all.begin(), all.end(), by_distance);
  probe_pair farthest = *std::max_element(all.begin(), all.end(), by_distance);
  nearest.role = "nearest";
  farthest.role = "farthest";
  if (nearest.rank_a == farthest.rank_a && nearest.rank_b == farthest.rank_b) return {nearest};
  return {nearest, farthest};
}

}  // namespace

machine_probe::machine_probe(const decomposition& decomp)
    : comm_(decomp.comm()), rank_(decomp.rank()) {
  MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm_);
  int node_leader = rank_;
  MPI_Bcast(&node_leader, 1, MPI_INT, 0, node_comm_);
  const int mine[2] = {sched_getcpu(), node_leader};
  std::vector<int> both(2 * static_cast<size_t>(decomp.size()));
  MPI_Allgather(mine, 2, MPI_INT, both.data(), 2, MPI_INT, comm_);
  std::vector<int> cpus, nodes;
  for (size_t i = 0; i < both.size(); i += 2) {
    cpus.push_back(both[i]);
    nodes.push_back(both[i + 1]);
  }
  pairs_ = choose_pairs(decomp, cpus, nodes);

  int node_rank = 0, node_size = 1;
  MPI_Comm_rank(node_comm_, &node_rank);
  MPI_Comm_size(node_comm_, &node_size);
  yield_while_waiting = node_size > static_cast<int>(std::thread::hardware_concurrency());
  for (const auto& p : pairs_) yield_while_waiting = yield_while_waiting || p.cpu_a == p.cpu_b;
  const MPI_Aint bytes = node_rank == 0 ? static_cast<MPI_Aint>(line_stride * pairs_.size() + 64) : 0;
  char* base = nullptr;
  MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, node_comm_, &base, &window_);
  MPI_Aint size = 0;
  int unit = 0;
  MPI_Win_shared_query(window_, 0, &size, &unit, &base);
  // Line-aligned within the leader's segment.
  char* aligned = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(base) + 63) / 64 * 64);
  if (node_rank == 0) std::memset(aligned, 0, line_stride * pairs_.size());
  for (size_t p = 0; p < pairs_.size(); ++p) lines_.push_back(aligned + p * line_stride);
  MPI_Barrier(node_comm_);
  copy_from_.assign(probe_copy_bytes, 1);
  copy_to_.assign(probe_copy_bytes, 0);
}

machine_probe::~machine_probe() {
  if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
  if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
}

nlohmann::json machine_probe::pairs_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : pairs_)
    out.push_back({{"role", p.role}, {"ranks", {p.rank_a, p.rank_b}}, {"cpus", {p.cpu_a, p.cpu_b}}});
  return out;
}

// The pair meets on its line (no barrier: a rank that yields in a barrier on
// a busy machine would arrive a time slice late, and the others need not wait).
double machine_probe::round_trip_ns(size_t pair) {
  double ns = 0;
  if (rank_ == pairs_[pair].rank_a) ns = ping(lines_[pair]);
  else if (rank_ == pairs_[pair].rank_b) pong(lines_[pair]);
  return ns;
}

double machine_probe::copy_GBps() {
  MPI_Barrier(comm_);
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const double t0 = MPI_Wtime();
    std::memcpy(copy_to_.data(), copy_from_.data(), probe_copy_bytes);
    best = std::min(best, MPI_Wtime() - t0);
  }
  return best;  // seconds; the slowest rank's is turned into GB/s by the caller
}

probe_sample machine_probe::take() {
  const double entered = MPI_Wtime();
  if (taken_ == 0) started_ = entered;
  probe_sample s;
  // One reduction (max): each pair's round trip, the copy time, steal and run-queue wait.
  std::vector<double> worst(pairs_.size() + 3, -1.0);
  for (size_t p = 0; p < pairs_.size(); ++p) worst[p] = round_trip_ns(p);
  worst[pairs_.size()] = copy_GBps();
  const int on_cpu = sched_getcpu();
  const auto cpu = cpu_counters(on_cpu);
  const auto waited = run_wait_ns();
  if (cpu && waited && have_counters_) {
    // Steal is counted per CPU: a rank that moved to another CPU has no
    // interval of one CPU's counters to read it from (unknown, not negative).
    if (on_cpu == counters_cpu_ && cpu->first >= cpu_total_ && cpu->second >= cpu_steal_) {
      const double jiffies = static_cast<double>(cpu->first - cpu_total_);
      worst[pairs_.size() + 1] =
          jiffies > 0 ? std::min(1.0, static_cast<double>(cpu->second - cpu_steal_) / jiffies) : 0.0;
    }
    const double wall = entered - wall_;
    // At most all of it: the kernel books a wait when it ends, so a wait begun
    // before the interval can exceed it.
    worst[pairs_.size() + 2] =
        wall > 0 ? std::min(1.0, static_cast<double>(*waited - run_wait_ns_) * 1e-9 / wall) : 0.0;
  }
  if (cpu && waited) {
    cpu_total_ = cpu->first;
    cpu_steal_ = cpu->second;
    counters_cpu_ = on_cpu;
    run_wait_ns_ = *waited;
    wall_ = entered;
    have_counters_ = true;
  }
  // Which CPU waited most: MAXLOC's index carries the CPU, so that the summary
  // can name the core another process held.
  struct {
    double share;
    int cpu;
  } waited_most{worst[pairs_.size() + 2], on_cpu};
  MPI_Allreduce(MPI_IN_PLACE, &waited_most, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm_);
  MPI_Allreduce(MPI_IN_PLACE, worst.data(), static_cast<int>(worst.size()), MPI_DOUBLE, MPI_MAX, comm_);
  if (waited_most.share >= 0) s.run_wait_cpu = waited_most.cpu;
  s.round_trip_ns.assign(worst.begin(), worst.begin() + static_cast<long>(pairs_.size()));
  s.copy_GBps = static_cast<double>(probe_copy_bytes) / worst[pairs_.size()] / 1e9;
  if (worst[pairs_.size() + 1] >= 0) s.steal_share = worst[pairs_.size() + 1];
  if (worst[pairs_.size() + 2] >= 0) s.run_wait_share = worst[pairs_.size() + 2];
  s.load1 = load_average();
  s.at_s = entered - started_;
  s.unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  s.cost_s = MPI_Wtime() - entered;
  total_cost_s_ += s.cost_s;
  ++taken_;
  return s;
}

nlohmann::json to_json(const probe_sample& s) {
  auto optional = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return {{"at_s", s.at_s},
          {"unix_s", s.unix_s},
          {"round_trip_ns", s.round_trip_ns},
          {"copy_GBps", s.copy_GBps},
          {"steal_share", optional(s.steal_share)},
          {"run_wait_share", optional(s.run_wait_share)},
          {"run_wait_cpu", s.run_wait_cpu ? nlohmann::json(*s.run_wait_cpu) : nlohmann::json(nullptr)},
          {"load1", optional(s.load1)},
          {"cost_s", s.cost_s}};
}

}  // namespace halox::bench
