#include "transport/node/cma.hpp"

#include <fmt/core.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "common/stage_timer.hpp"
#include "halox/common/error.hpp"
#include "halox/extend/pack.hpp"
#include "transport/core/names.hpp"
#include "transport/core/trial.hpp"
#include "transport/common/node_publication.hpp"

namespace halox {

namespace {

constexpr const char* yama_path = "/proc/sys/kernel/yama/ptrace_scope";
// The kernel caps one call at MAX_RW_COUNT (2 GiB - a page) and silently reads less.
constexpr size_t max_batch_bytes = size_t{1} << 30;
// What every rank publishes beside its layout, then one address per field.
enum word : size_t { word_pid, word_probe_address, word_probe_value, word_outbox, word_fields };

// Yama's ptrace_scope, or -1 without Yama.
int yama_ptrace_scope() {
  std::ifstream in(yama_path);
  int scope = -1;
  return in >> scope ? scope : -1;
}

bool has_cap_sys_ptrace() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("CapEff:", 0) == 0)
      return (std::strtoull(line.c_str() + 7, nullptr, 16) >> CAP_SYS_PTRACE) & 1;
  return false;
}

uintptr_t address(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

// Appends `bytes` at `at` to runs, extending the last run when they touch.
void append_run(std::vector<iovec>& runs, uintptr_t at, size_t bytes) {
  if (bytes == 0) return;
  if (!runs.empty() && address(runs.back().iov_base) + runs.back().iov_len == at)
    runs.back().iov_len += bytes;
  else
    runs.push_back({reinterpret_cast<void*>(at), bytes});
}

// Appends the x-runs of box b of the field at `field` (laid out as grid) in
// pack order; whole rows and planes of the allocated extent merge.
void append_box(std::vector<iovec>& runs, uintptr_t field, const local_grid& grid, const box& b,
                size_t element_bytes) {
  if (b.empty()) return;
  const size_t run = static_cast<size_t>(b.extent(0)) * element_bytes;
  for (int z = b.lo[2]; z < b.hi[2]; ++z)
    for (int y = b.lo[1]; y < b.hi[1]; ++y)
      append_run(runs, field + grid.index(b.lo[0], y, z) * element_bytes, run);
}

std::string ptrace_advice() {
  const int scope = yama_ptrace_scope();
  std::string yama =
      scope < 0 ? std::string("Yama is not active")
                : fmt::format("Yama ptrace_scope is {} in {}; 0 or 1 allow it", scope, yama_path);
  return fmt::format(
      "all ranks must run as the same user with ptrace permission ({}; in a "
      "container grant CAP_SYS_PTRACE, e.g. docker run --cap-add SYS_PTRACE)",
      yama);
}

// Empty when a word of the peer's memory reads back as the peer published it;
// otherwise what failed, with a hint.
std::string probe_peer(int me, int peer, const std::vector<uint64_t>& words) {
  const auto pid = static_cast<pid_t>(words[word_pid]);
  uint64_t value = 0;
  iovec local{&value, sizeof value};
  iovec remote{reinterpret_cast<void*>(words[word_probe_address]), sizeof value};
  errno = 0;
  const ssize_t got = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (got == static_cast<ssize_t>(sizeof value) && value == words[word_probe_value]) return {};
  const int error = errno;
  std::string what, hint;
  if (got == static_cast<ssize_t>(sizeof value) || error == ESRCH) {
    what = got == static_cast<ssize_t>(sizeof value) ? fmt::format("pid {} is another process", pid)
                                                     : fmt::format("no process {}", pid);
    hint = "the ranks of a node must share a PID namespace (one container per node, or --pid=host)";
  } else {
    what = fmt::format("process_vm_readv: {}", std::strerror(error));
    hint = error == EPERM || error == EACCES ? ptrace_advice()
           : error == ENOSYS ? "this kernel has no cross-memory attach (CONFIG_CROSS_MEMORY_ATTACH)"
                             : "the kernel refused the read";
  }
  return fmt::format(
      "rank {}: transport {} cannot read the memory of rank {} (pid {}): {}; {}; "
      "use another on-node transport (e.g. {})",
      me, transport_names::cma, peer, pid, what, hint, transport_names::shm);
}

}  // namespace

std::string cma_unavailable() {
  static const std::string why = []() -> std::string {
    uint64_t word = 1, copy = 0;
    iovec local{&copy, sizeof copy}, remote{&word, sizeof word};
    if (::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) != sizeof word)
      return fmt::format(
          "process_vm_readv fails even within this process ({}): a seccomp filter "
          "or a kernel without cross-memory attach",
          std::strerror(errno));
    const int scope = yama_ptrace_scope();
    if (scope >= 3)
      return fmt::format("Yama ptrace_scope is {} ({}): no process may read another's memory",
                         scope, yama_path);
    if (scope == 2 && !has_cap_sys_ptrace())
      return fmt::format(
          "Yama ptrace_scope is 2 ({}): reading another process's memory needs "
          "CAP_SYS_PTRACE",
          yama_path);
    return {};
  }();
  return why;
}

cma_transport::cma_transport(const transport_context& ctx)
    : single_copy_transport(ctx, transport_names::cma) {
  outbox_.resize(outbox_ring * slot_bytes_);
  size_t inbox_bytes = 0;  // the most a stage receives
  for (const auto& st : plan_.stages) {
    size_t bytes = 0;
    for (const auto& m : st.recvs) bytes += m.bytes;
    inbox_bytes = std::max(inbox_bytes, bytes);
  }
  inbox_.resize(inbox_bytes);

  // Who I am to my node. Under Yama scope 1 only ancestors may read a
  // process, so every rank admits its peers, as MPI libraries' CMA paths do.
  probe_ = (std::random_device{}() | uint64_t{1}) ^ (static_cast<uint64_t>(::getpid()) << 32);
  std::vector<uint64_t> words{static_cast<uint64_t>(::getpid()), address(&probe_), probe_,
                              address(outbox_.data())};
  for (auto* f : fields_.pointers) words.push_back(address(f));
  if (yama_ptrace_scope() == 1 && !has_cap_sys_ptrace())
    ::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  layouts_ = gather_layouts(plan_, words, node_, neighbours_);

  // One trial read from every peer I read from: a refusal fails here, on
  // every rank, rather than in the first exchange.
  std::string problem;
  std::vector<bool> probed(static_cast<size_t>(node_.size), false);
  for (const auto& s : plan_.stages)
    for (const auto& m : s.recvs) {
      const auto r = static_cast<size_t>(node_.node_rank_of[static_cast<size_t>(m.peer)]);
      if (probed[r] || !problem.empty()) continue;
      probed[r] = true;
      problem = probe_peer(me_, m.peer, layouts_[r].words);
    }
  require_all(ctx.comm, problem);

  start_signals();
  // The send boxes must match their readers' receives (the same on every rule).
  work_ = build(outbox_below_, problem);
  require_all(ctx.comm, problem);
  if (ctx.tuning.cma.direct_min_run) {
    outbox_below_ = *ctx.tuning.cma.direct_min_run;
    how_ = "tuning.cma.direct_min_run";
    work_ = build(outbox_below_, problem);
  } else if (auto candidates = outbox_rules(plan_, fields_, node_.comm); candidates.size() > 1) {
    outbox_below_ = measured_rule(candidates);
    how_ = fmt::format("measured, {} rules", candidates.size());
  } else {
    how_ = "no run to pack into the outbox";
  }
  std::vector<copy_list*> lists;
  for (auto& pack : work_.owner.packs) lists.push_back(&pack);
  for (auto& w : work_.stages) {
    lists.push_back(&w.self_copies);
    for (auto& r : w.reads) lists.push_back(&r.unpack);
  }
  fetch_ahead_ = choose_fetch_ahead(*this, plan_.stages.size(), lists, ctx.tuning.cma.fetch_ahead,
                                    "tuning.cma.fetch_ahead", node_.comm);
}

cma_transport::~cma_transport() {
  if (order_) order_->drain(active_->owner);
}

void cma_transport::tuning_as_built(transport_tuning& tuning) const {
  tuning.cma.direct_min_run = outbox_below_;
  tuning.cma.fetch_ahead = fetch_ahead_.on;
}

std::string cma_transport::settings() const {
  return describe_choices(outbox_below_);
}

size_t cma_transport::measured_rule(const std::vector<size_t>& candidates) {
  std::string problem;
  std::vector<schedule> schedules;
  for (size_t rule : candidates) schedules.push_back(build(rule, problem));
  const size_t best = fastest_candidate(
      *this, plan_.stages.size(), candidates.size(), [&](size_t c) { active_ = &schedules[c]; },
      node_.comm);
  work_ = std::move(schedules[best]);
  active_ = &work_;
  return candidates[best];
}

cma_transport::schedule cma_transport::build(size_t outbox_below, std::string& problem) {
  schedule out;
  out.owner = publish_send_boxes(plan_, fields_, node_, neighbours_, me_,
                                 {outbox_below, outbox_.data(), slot_bytes_});
  const node_publication& publication = *out.owner.publication;
  out.stages.resize(plan_.stages.size());
  const long iov_max = ::sysconf(_SC_IOV_MAX);
  const size_t max_iov = iov_max > 0 ? static_cast<size_t>(iov_max) : 1024;
  std::byte* const* fields = fields_.pointers.data();

  // Per stage and peer: the owner's runs (remote) and mine (local), the same
  // bytes in the same order: the direct boxes, then the outbox ones in the
  // owner's outbox order (one run there, one in my inbox).
  for (size_t s = 0; s < plan_.stages.size() && problem.empty(); ++s) {
    const stage& st = plan_.stages[s];
    auto& reads = out.stages[s].reads;
    std::map<int, size_t> read_of;  // node rank -> index in reads
    // per read: outbox offset, my box
    std::vector<std::vector<std::pair<uint64_t, field_box>>> via_outbox;
    for (const auto& m : st.recvs) {
      const auto owner_boxes = publication.boxes_of(s, m, problem);
      if (!problem.empty()) break;
      const int from = node_.node_rank_of[static_cast<size_t>(m.peer)];
      const auto& owner = layouts_[static_cast<size_t>(from)];
      auto [entry, fresh] = read_of.try_emplace(from, reads.size());
      if (fresh) {
        reads.emplace_back();
        reads.back().peer = m.peer;
        reads.back().node_rank = from;
        reads.back().pid = static_cast<pid_t>(owner.words[word_pid]);
        via_outbox.emplace_back();
      }
      peer_read& r = reads[entry->second];
      for (size_t i = 0; i < m.boxes.size(); ++i) {
        const published_box& p = *owner_boxes[i];
        const field_box& to = m.boxes[i];
        if (p.in_outbox) {
          via_outbox[entry->second].emplace_back(p.outbox_offset, to);
          continue;
        }
        const size_t element_bytes = plan_.element_bytes_of(to.field);
        append_box(r.remote, owner.words[word_fields + static_cast<size_t>(p.field)],
                   owner.grid_of(p.field), p.region(), element_bytes);
        append_box(r.local, address(fields[to.field]), plan_.grid_of(to.field), to.region,
                   element_bytes);
      }
    }
    size_t cursor = 0;  // in my inbox
    for (size_t k = 0; k < reads.size(); ++k) {
      peer_read& r = reads[k];
      const auto& owner = layouts_[static_cast<size_t>(r.node_rank)];
      std::stable_sort(via_outbox[k].begin(), via_outbox[k].end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& [offset, to] : via_outbox[k]) {
        const size_t element_bytes = plan_.element_bytes_of(to.field);
        const size_t bytes = static_cast<size_t>(to.region.volume()) * element_bytes;
        append_run(r.remote, owner.words[word_outbox] + offset, bytes);
        append_run(r.local, address(inbox_.data()) + cursor, bytes);
        r.unpack.add(unpack_copy(inbox_.data() + cursor, fields[to.field],
                                 plan_.grid_of(to.field), to.region, element_bytes));
        cursor += bytes;
      }
      cut_into_batches(r, max_iov);
    }
    add_local_copies(out.stages[s].self_copies, st.copies, fields, plan_);
  }
  return out;
}

void cma_transport::cut_into_batches(peer_read& r, size_t max_iov) {
  std::vector<iovec> local, remote;
  batch current;
  size_t i = 0, j = 0, used_local = 0, used_remote = 0;  // runs, and bytes taken of them
  auto close = [&] {
    r.batches.push_back(current);
    current = {local.size(), 0, remote.size(), 0, 0};
  };
  while (i < r.local.size() && j < r.remote.size()) {
    if (current.bytes == max_batch_bytes) close();
    const size_t take =
        std::min({r.local[i].iov_len - used_local, r.remote[j].iov_len - used_remote,
                  max_batch_bytes - current.bytes});
    const uintptr_t at_local = address(r.local[i].iov_base) + used_local;
    const uintptr_t at_remote = address(r.remote[j].iov_base) + used_remote;
    auto continues = [](const std::vector<iovec>& runs, size_t count, uintptr_t at) {
      return count > 0 && address(runs.back().iov_base) + runs.back().iov_len == at;
    };
    if ((!continues(local, current.local_count, at_local) && current.local_count == max_iov) ||
        (!continues(remote, current.remote_count, at_remote) && current.remote_count == max_iov))
      close();
    current.local_count += continues(local, current.local_count, at_local) ? 0 : 1;
    append_run(local, at_local, take);
    current.remote_count += continues(remote, current.remote_count, at_remote) ? 0 : 1;
    append_run(remote, at_remote, take);
    current.bytes += take;
    if ((used_local += take) == r.local[i].iov_len) ++i, used_local = 0;
    if ((used_remote += take) == r.remote[j].iov_len) ++j, used_remote = 0;
  }
  if (current.bytes > 0) r.batches.push_back(current);
  r.local = std::move(local);
  r.remote = std::move(remote);
}

void cma_transport::read(const peer_read& r) const {
  const stage_timer::part_span copying(stage_timer::copy);
  for (const auto& b : r.batches) {
    const ssize_t got = ::process_vm_readv(r.pid, r.local.data() + b.local_first, b.local_count,
                                           r.remote.data() + b.remote_first, b.remote_count, 0);
    // Only this rank knows, and its peers may wait for it: end the job as a
    // timeout does.
    if (got != static_cast<ssize_t>(b.bytes))
      throw timeout_error(
          fmt::format("rank {}: process_vm_readv from rank {} (pid {}) read {} of "
                      "{} bytes{}",
                      me_, r.peer, r.pid, got, b.bytes,
                      got < 0 ? fmt::format(": {}", std::strerror(errno)) : ""));
  }
}

void cma_transport::start(size_t stage) {
  const copy_list& pack = active_->owner.packs[stage];
  if (!pack.empty()) {
    order_->before_pack(stage, active_->owner);
    const stage_timer::part_span packing(stage_timer::pack);
    pack.run();
  }
  order_->ready(stage);
}

void cma_transport::wait(size_t stage) {
  const stage_work& w = active_->stages[stage];
  for (const auto& r : w.reads) {
    order_->await(stage, r.node_rank);
    read(r);
    r.unpack.run();
  }
  w.self_copies.run();
  order_->done(stage, active_->owner);
}

}  // namespace halox
