#include "halox/transport/shm.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fmt/core.h>
#include <map>
#include <tuple>

#include "halox/common/error.hpp"
#include "halox/field_memory.hpp"
#include "halox/pack.hpp"

namespace halox {

namespace {

// What every rank of a node tells the others once: its layout.
struct rank_layout {
  int interior[3] = {0, 0, 0};
  int halo_lo[3] = {0, 0, 0};
  int halo_hi[3] = {0, 0, 0};
};

// One box an owner sends on the node, as it publishes it to its readers.
struct published_box {
  int stage = 0, sender = 0, receiver = 0, tag = 0, index = 0, field = 0;
  int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  int staged = 0;               // packed into the owner's outbox
  uint64_t outbox_offset = 0;   // where, when staged
};

constexpr size_t control_slot = 128;  // ready and done on separate cache lines
constexpr size_t outbox_start = 4096;
constexpr int ready_counter = 0, done_counter = 1;

// Below this many bytes per x-run a box goes through the outbox even when
// the reader could copy it directly (HALOX_SHM_DIRECT_MIN_RUN overrides).
size_t direct_min_run_bytes() {
  static const size_t value = [] {
    const char* env = std::getenv("HALOX_SHM_DIRECT_MIN_RUN");
    return env ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) : size_t{256};
  }();
  return value;
}

uint64_t load_acquire(const uint64_t* p) {
  return std::atomic_ref<const uint64_t>(*p).load(std::memory_order_acquire);
}
void store_release(uint64_t* p, uint64_t v) {
  std::atomic_ref<uint64_t>(*p).store(v, std::memory_order_release);
}

template <class T>
std::vector<T> allgatherv(const std::vector<T>& mine, MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  int bytes = static_cast<int>(mine.size() * sizeof(T));
  std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
  MPI_Allgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<size_t>(r)] = total;
    total += counts[static_cast<size_t>(r)];
  }
  std::vector<T> all(static_cast<size_t>(total) / sizeof(T));
  MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE,
                 comm);
  return all;
}

}  // namespace

shm_transport::shm_transport(const transport_context& ctx)
    : plan_(ctx.plan), fields_(ctx.fields), waits_(ctx.waits), node_(ctx.node) {
  MPI_Comm node_comm = node_.comm;
  const int node_size = node_.size;
  int me = 0;
  MPI_Comm_rank(ctx.comm, &me);
  std::string problem;
  for (const auto& s : plan_.stages)
    for (const auto* list : {&s.sends, &s.recvs})
      for (const auto& m : *list)
        if (!node_.on_node(m.peer))
          problem = fmt::format("transport shm reaches only ranks of the same node, but rank {} "
                                "is not on rank {}'s node",
                                m.peer, me);
  require_all(ctx.comm, problem);

  comm_rank_of_node_rank_.resize(static_cast<size_t>(node_size));
  for (size_t r = 0; r < node_.node_rank_of.size(); ++r)
    if (node_.node_rank_of[r] >= 0)
      comm_rank_of_node_rank_[static_cast<size_t>(node_.node_rank_of[r])] = static_cast<int>(r);

  // Direct copies need the fields of every rank of the node in one shared window.
  int all_shared = fields_.shared ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all_shared, 1, MPI_INT, MPI_MIN, node_comm);
  direct_ = all_shared != 0;

  // Layouts and field offsets, node-wide (no global gather).
  const size_t nfields = fields_.pointers.size();
  std::vector<std::byte> my_record(sizeof(rank_layout) + nfields * sizeof(uint64_t));
  rank_layout mine;
  for (int d = 0; d < 3; ++d) {
    mine.interior[d] = plan_.grid.interior[d];
    mine.halo_lo[d] = plan_.grid.halo.lo[d];
    mine.halo_hi[d] = plan_.grid.halo.hi[d];
  }
  std::memcpy(my_record.data(), &mine, sizeof(rank_layout));
  for (size_t f = 0; f < nfields; ++f) {
    uint64_t offset = direct_ ? fields_.shared->offset(static_cast<int>(f)) : 0;
    std::memcpy(my_record.data() + sizeof(rank_layout) + f * sizeof(uint64_t), &offset, sizeof offset);
  }
  auto records = allgatherv(my_record, node_comm);
  std::vector<uint64_t> offsets(nfields * static_cast<size_t>(node_size));
  for (size_t r = 0; r < static_cast<size_t>(node_size); ++r) {
    rank_layout l;
    std::memcpy(&l, records.data() + r * my_record.size(), sizeof l);
    std::memcpy(offsets.data() + r * nfields, records.data() + r * my_record.size() + sizeof l,
                nfields * sizeof(uint64_t));
    peer_grids_.emplace_back(ivec3{l.interior[0], l.interior[1], l.interior[2]},
                             halo_widths{{l.halo_lo[0], l.halo_lo[1], l.halo_lo[2]},
                                         {l.halo_hi[0], l.halo_hi[1], l.halo_hi[2]}});
  }

  // My send boxes, published: direct when the reader can copy them well,
  // otherwise packed into my outbox, message by message.
  const size_t element_bytes = plan_.element_bytes;
  std::vector<published_box> published;
  size_t outbox_bytes = 0;
  stages_.resize(plan_.stages.size());
  std::vector<bool> reader(static_cast<size_t>(node_size), false);
  for (size_t s = 0; s < plan_.stages.size(); ++s)
    for (const auto& m : plan_.stages[s].sends) {
      reader[static_cast<size_t>(node_.node_rank_of[static_cast<size_t>(m.peer)])] = true;
      outbox_pack job;
      job.offset = outbox_bytes;
      size_t cursor = outbox_bytes;
      for (size_t i = 0; i < m.boxes.size(); ++i) {
        const auto& fb = m.boxes[i];
        published_box p{static_cast<int>(s), me, m.peer, m.tag, static_cast<int>(i), fb.field};
        for (int d = 0; d < 3; ++d) {
          p.lo[d] = fb.region.lo[d];
          p.hi[d] = fb.region.hi[d];
        }
        const size_t run = static_cast<size_t>(fb.region.extent(0)) * element_bytes;
        p.staged = !direct_ || run < direct_min_run_bytes();
        if (p.staged) {
          p.outbox_offset = cursor;
          cursor += static_cast<size_t>(fb.region.volume()) * element_bytes;
          job.boxes.push_back(fb);
        }
        published.push_back(p);
      }
      if (!job.boxes.empty()) {
        outbox_bytes = (cursor + 63) / 64 * 64;
        stages_[s].packs.push_back(std::move(job));
      }
    }
  for (int r = 0; r < node_size; ++r)
    if (reader[static_cast<size_t>(r)]) readers_.push_back(r);
  auto all_published = allgatherv(published, node_comm);

  // Counters and outbox in one shared window; the outbox starts a page in.
  void* control_base = nullptr;
  MPI_Win_allocate_shared(static_cast<MPI_Aint>(outbox_start + outbox_bytes), 1, MPI_INFO_NULL,
                          node_comm, &control_base, &control_window_);
  for (int r = 0; r < node_size; ++r) {
    MPI_Aint size = 0;
    int unit = 1;
    void* base = nullptr;
    MPI_Win_shared_query(control_window_, r, &size, &unit, &base);
    control_.push_back(static_cast<uint64_t*>(base));
    outbox_.push_back(static_cast<std::byte*>(base) + outbox_start);
  }
  store_release(control_[static_cast<size_t>(node_.rank)], 0);
  store_release(control_[static_cast<size_t>(node_.rank)] + control_slot / 8, 0);

  // My receives: find the owner's published boxes for each message.
  std::map<std::tuple<int, int, int>, std::vector<const published_box*>> to_me;  // stage, sender, tag
  for (const auto& p : all_published)
    if (p.receiver == me) to_me[{p.stage, p.sender, p.tag}].push_back(&p);
  for (size_t s = 0; s < plan_.stages.size() && problem.empty(); ++s)
    for (const auto& m : plan_.stages[s].recvs) {
      const int peer = node_.node_rank_of[static_cast<size_t>(m.peer)];
      auto found = to_me.find({static_cast<int>(s), m.peer, m.tag});
      if (found == to_me.end() || found->second.size() != m.boxes.size()) {
        problem = fmt::format("rank {}: rank {} publishes no matching boxes for direction "
                              "({},{},{}) in stage {}",
                              me, m.peer, m.direction[0], m.direction[1], m.direction[2], s);
        break;
      }
      peer_copy pull;
      pull.node_rank = peer;
      pull.from_grid = &peer_grids_[static_cast<size_t>(peer)];
      outbox_unpack unpack_job;
      unpack_job.node_rank = peer;
      bool first_staged = true;
      for (size_t i = 0; i < m.boxes.size(); ++i) {
        const published_box& p = *found->second[i];
        box from{{p.lo[0], p.lo[1], p.lo[2]}, {p.hi[0], p.hi[1], p.hi[2]}};
        const auto& to = m.boxes[i];
        if (p.index != static_cast<int>(i) || p.field != to.field ||
            from.volume() != to.region.volume()) {
          problem = fmt::format("rank {}: the boxes of rank {} do not match mine for direction "
                                "({},{},{}); do the ranks agree on the sub-domain sizes?",
                                me, m.peer, m.direction[0], m.direction[1], m.direction[2]);
          break;
        }
        if (p.staged) {
          if (first_staged) unpack_job.offset = p.outbox_offset;
          first_staged = false;
          unpack_job.boxes.push_back(to);
          continue;
        }
        pull.from_fields.push_back(fields_.shared->segment_of(peer) +
                                   offsets[static_cast<size_t>(peer) * nfields +
                                           static_cast<size_t>(to.field)]);
        pull.from.push_back(from);
        pull.to_fields.push_back(fields_.pointers[static_cast<size_t>(to.field)]);
        pull.to.push_back(to.region);
      }
      if (!pull.from.empty()) stages_[s].pulls.push_back(std::move(pull));
      if (!unpack_job.boxes.empty()) stages_[s].unpacks.push_back(std::move(unpack_job));
    }
  try {
    require_all(ctx.comm, problem);
  } catch (...) {
    MPI_Win_free(&control_window_);
    throw;
  }
  MPI_Barrier(node_comm);  // counters are zero everywhere before the first step
}

shm_transport::~shm_transport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // Freeing is collective: while an error found on this rank alone unwinds
  // (a timeout), the peers may never join, and the job is ending anyway.
  if (!finalized && control_window_ != MPI_WIN_NULL && std::uncaught_exceptions() == 0)
    MPI_Win_free(&control_window_);
}

void shm_transport::wait_for(int node_rank, int counter, uint64_t value) const {
  const uint64_t* flag = control_[static_cast<size_t>(node_rank)] + counter * (control_slot / 8);
  if (load_acquire(flag) >= value) return;
  waits_.spin_until([&] { return load_acquire(flag) >= value; },
                    [&] {
                      return fmt::format("rank {} to be {} with step {} (shm)",
                                         comm_rank_of_node_rank_[static_cast<size_t>(node_rank)],
                                         counter == ready_counter ? "ready" : "done", value);
                    });
}

void shm_transport::start(size_t stage_index) {
  std::byte* outbox = outbox_[static_cast<size_t>(node_.rank)];
  for (const auto& job : stages_[stage_index].packs)
    pack(outbox + job.offset, job.boxes, fields_.pointers.data(), plan_.grid, plan_.element_bytes);
  ++step_;
  store_release(control_[static_cast<size_t>(node_.rank)], step_);
  for (const auto& c : plan_.stages[stage_index].copies)
    copy_boxes(c.from, c.to, fields_.pointers.data(), plan_.grid, plan_.element_bytes);
}

void shm_transport::wait(size_t stage_index) {
  for (const auto& pull : stages_[stage_index].pulls) {
    wait_for(pull.node_rank, ready_counter, step_);
    for (size_t i = 0; i < pull.from.size(); ++i)
      copy_box_between(pull.from_fields[i], *pull.from_grid, pull.from[i], pull.to_fields[i],
                       plan_.grid, pull.to[i], plan_.element_bytes);
  }
  for (const auto& job : stages_[stage_index].unpacks) {
    wait_for(job.node_rank, ready_counter, step_);
    unpack(outbox_[static_cast<size_t>(job.node_rank)] + job.offset, job.boxes,
           fields_.pointers.data(), plan_.grid, plan_.element_bytes);
  }
  store_release(control_[static_cast<size_t>(node_.rank)] + control_slot / 8, step_);
  if (stage_index + 1 == plan_.stages.size())
    for (int reader : readers_) wait_for(reader, done_counter, step_);
}

}  // namespace halox
