#include "halox/transport/shm.hpp"

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fmt/core.h>

#include "halox/common/error.hpp"
#include "halox/field_memory.hpp"
#include "halox/pack.hpp"
#include "halox/transport/mpi_p2p.hpp"

namespace halox {

namespace {

// What every rank of a node tells the others once: its place and layout.
struct rank_layout {
  int comm_rank = 0;
  int interior[3] = {0, 0, 0};
  int halo_lo[3] = {0, 0, 0};
  int halo_hi[3] = {0, 0, 0};
};

constexpr size_t control_slot = 128;  // ready and done on separate cache lines

// Below this many bytes per x-run a box goes through the outbox. Runs are
// judged by the box alone, so sender and receiver always agree.
size_t direct_min_run_bytes() {
  static const size_t value = [] {
    const char* env = std::getenv("HALOX_SHM_DIRECT_MIN_RUN");
    return env ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) : size_t{256};
  }();
  return value;
}

bool goes_through_outbox(const box& b, size_t element_bytes) {
  return static_cast<size_t>(b.extent(0)) * element_bytes < direct_min_run_bytes();
}

struct outbox_entry {
  int stage = 0, sender = 0, receiver = 0, tag = 0;
  uint64_t offset = 0;
};

uint64_t load_acquire(const uint64_t* p) {
  return std::atomic_ref<const uint64_t>(*p).load(std::memory_order_acquire);
}
void store_release(uint64_t* p, uint64_t v) {
  std::atomic_ref<uint64_t>(*p).store(v, std::memory_order_release);
}

}  // namespace

shm_transport::shm_transport(const exchange_plan& plan, MPI_Comm comm,
                             const std::vector<std::byte*>& fields)
    : plan_(plan), fields_(fields) {
  // All fields must live in one node-shared window on every rank.
  const shared_field_memory* memory = nullptr;
  std::vector<uint64_t> offsets;
  std::string problem;
  for (auto* f : fields) {
    auto where = shared_field_memory::find(f);
    if (!where.memory || (memory && where.memory != memory)) {
      problem = "transport shm needs all fields in one halox::shared_field_memory";
      break;
    }
    memory = where.memory;
    offsets.push_back(where.offset);
  }
  require_all(comm, problem);

  // Collectives on the memory's node communicator are ordered like any other
  // use of it, so no duplicate is needed (setup stays cheap when oversubscribed).
  node_comm_ = memory->node_comm();
  int node_size = 1;
  MPI_Comm_rank(node_comm_, &node_rank_);
  MPI_Comm_size(node_comm_, &node_size);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  oversubscribed_ = cores > 0 && node_size > cores;

  // Node-local exchange of layouts and field offsets (no global gather).
  rank_layout mine;
  MPI_Comm_rank(comm, &mine.comm_rank);
  for (int d = 0; d < 3; ++d) {
    mine.interior[d] = plan.grid.interior[d];
    mine.halo_lo[d] = plan.grid.halo.lo[d];
    mine.halo_hi[d] = plan.grid.halo.hi[d];
  }
  // One gather: [layout][offset of each field] per rank.
  const size_t nfields = fields.size();
  const size_t record = sizeof(rank_layout) + nfields * sizeof(uint64_t);
  std::vector<std::byte> my_record(record), records(record * static_cast<size_t>(node_size));
  std::memcpy(my_record.data(), &mine, sizeof(rank_layout));
  std::memcpy(my_record.data() + sizeof(rank_layout), offsets.data(), nfields * sizeof(uint64_t));
  MPI_Allgather(my_record.data(), static_cast<int>(record), MPI_BYTE, records.data(),
                static_cast<int>(record), MPI_BYTE, node_comm_);
  std::vector<rank_layout> layouts(static_cast<size_t>(node_size));
  std::vector<uint64_t> all_offsets(nfields * static_cast<size_t>(node_size));
  for (size_t r = 0; r < static_cast<size_t>(node_size); ++r) {
    std::memcpy(&layouts[r], records.data() + r * record, sizeof(rank_layout));
    std::memcpy(all_offsets.data() + r * nfields, records.data() + r * record + sizeof(rank_layout),
                nfields * sizeof(uint64_t));
  }
  std::vector<int> node_rank_of_comm_rank;  // -1: off node
  int comm_size = 1;
  MPI_Comm_size(comm, &comm_size);
  node_rank_of_comm_rank.assign(static_cast<size_t>(comm_size), -1);
  for (int r = 0; r < node_size; ++r) {
    const auto& l = layouts[static_cast<size_t>(r)];
    node_rank_of_comm_rank[static_cast<size_t>(l.comm_rank)] = r;
    peer_grids_.emplace_back(ivec3{l.interior[0], l.interior[1], l.interior[2]},
                             halo_widths{{l.halo_lo[0], l.halo_lo[1], l.halo_lo[2]},
                                         {l.halo_hi[0], l.halo_hi[1], l.halo_hi[2]}});
  }

  // My outbox: the short-run boxes of every on-node message, stage by stage.
  const size_t element_bytes = plan.element_bytes;
  std::vector<outbox_entry> my_entries;
  size_t outbox_bytes = 0;
  stages_.resize(plan.stages.size());
  for (size_t s = 0; s < plan.stages.size(); ++s)
    for (const auto& m : plan.stages[s].sends) {
      if (node_rank_of_comm_rank[static_cast<size_t>(m.peer)] < 0) continue;
      outbox_pack pack_job;
      for (const auto& fb : m.boxes)
        if (goes_through_outbox(fb.region, element_bytes)) pack_job.boxes.push_back(fb);
      if (pack_job.boxes.empty()) continue;
      pack_job.offset = outbox_bytes;
      my_entries.push_back({static_cast<int>(s), mine.comm_rank, m.peer, m.tag, outbox_bytes});
      outbox_bytes += (packed_bytes(pack_job.boxes, element_bytes) + 63) / 64 * 64;
      stages_[s].packs.push_back(std::move(pack_job));
    }
  int entry_count = static_cast<int>(my_entries.size());
  std::vector<int> counts(static_cast<size_t>(node_size)), displs(static_cast<size_t>(node_size));
  MPI_Allgather(&entry_count, 1, MPI_INT, counts.data(), 1, MPI_INT, node_comm_);
  int total_entries = 0;
  for (int r = 0; r < node_size; ++r) {
    displs[static_cast<size_t>(r)] = total_entries * static_cast<int>(sizeof(outbox_entry));
    total_entries += counts[static_cast<size_t>(r)];
    counts[static_cast<size_t>(r)] *= static_cast<int>(sizeof(outbox_entry));
  }
  std::vector<outbox_entry> all_entries(static_cast<size_t>(total_entries));
  MPI_Allgatherv(my_entries.data(), entry_count * static_cast<int>(sizeof(outbox_entry)), MPI_BYTE,
                 all_entries.data(), counts.data(), displs.data(), MPI_BYTE, node_comm_);

  // Counters and outbox in one shared window; the outbox starts a page in.
  const size_t outbox_start = 4096;
  void* control_base = nullptr;
  MPI_Win_allocate_shared(static_cast<MPI_Aint>(outbox_start + outbox_bytes), 1, MPI_INFO_NULL,
                          node_comm_, &control_base, &control_window_);
  for (int r = 0; r < node_size; ++r) {
    MPI_Aint size = 0;
    int unit = 1;
    void* base = nullptr;
    MPI_Win_shared_query(control_window_, r, &size, &unit, &base);
    control_.push_back(static_cast<uint64_t*>(base));
    outbox_.push_back(static_cast<std::byte*>(base) + outbox_start);
  }
  store_release(control_[static_cast<size_t>(node_rank_)], 0);
  store_release(control_[static_cast<size_t>(node_rank_)] + 8, 0);

  // Split the plan: on-node receives become pulls, the rest stays MPI.
  const int steps = step_count(plan.alg);
  remote_plan_ = std::make_unique<exchange_plan>(plan);
  std::vector<bool> reader(static_cast<size_t>(node_size), false);
  std::string mismatch;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    auto& remote_stage = remote_plan_->stages[s];
    remote_stage.copies.clear();
    std::erase_if(remote_stage.sends, [&](const message& m) {
      return node_rank_of_comm_rank[static_cast<size_t>(m.peer)] >= 0;
    });
    std::erase_if(remote_stage.recvs, [&](const message& m) {
      return node_rank_of_comm_rank[static_cast<size_t>(m.peer)] >= 0;
    });
    // Whoever we would send to reads our cells instead.
    for (const auto& m : plan.stages[s].sends)
      if (int peer = node_rank_of_comm_rank[static_cast<size_t>(m.peer)]; peer >= 0)
        reader[static_cast<size_t>(peer)] = true;
    stage_copies& copies = stages_[s];
    const int step = static_cast<int>(s) % steps;
    for (const auto& m : plan.stages[s].recvs) {
      int peer = node_rank_of_comm_rank[static_cast<size_t>(m.peer)];
      if (peer < 0) continue;
      const local_grid& peer_grid = peer_grids_[static_cast<size_t>(peer)];
      // The peer sends toward us, i.e. toward -direction, in the same step.
      const auto peer_steps = halo_regions(peer_grid, plan.alg);
      const halo_region* source = nullptr;
      for (const auto& r : peer_steps[static_cast<size_t>(step)])
        if (r.direction == opposite(m.direction)) source = &r;
      outbox_unpack unpack_job;
      unpack_job.node_rank = peer;
      for (const auto& fb : m.boxes)
        if (goes_through_outbox(fb.region, element_bytes)) unpack_job.boxes.push_back(fb);
      if (!unpack_job.boxes.empty()) {
        bool found = false;
        for (const auto& e : all_entries)
          if (e.stage == static_cast<int>(s) && e.sender == m.peer &&
              e.receiver == mine.comm_rank && e.tag == m.tag) {
            found = true;
            unpack_job.offset = e.offset;
          }
        if (!found)
          mismatch = fmt::format("rank {}: no outbox entry from rank {} (tag {})", mine.comm_rank,
                                 m.peer, m.tag);
      }
      peer_copy pull;
      pull.node_rank = peer;
      pull.from_grid = &peer_grids_[static_cast<size_t>(peer)];
      std::byte* peer_segment = memory->segment_of(peer);
      for (const auto& fb : m.boxes) {
        if (goes_through_outbox(fb.region, element_bytes)) continue;
        if (!source || source->send.volume() != fb.region.volume()) {
          mismatch = fmt::format("rank {}: neighbour layout does not match for direction ({},{},{})",
                                 mine.comm_rank, m.direction[0], m.direction[1], m.direction[2]);
          break;
        }
        pull.from_fields.push_back(peer_segment +
                                   all_offsets[static_cast<size_t>(peer) * nfields +
                                               static_cast<size_t>(fb.field)]);
        pull.from.push_back(source->send);
        pull.to_fields.push_back(fields[static_cast<size_t>(fb.field)]);
        pull.to.push_back(fb.region);
      }
      if (!pull.from.empty()) copies.pulls.push_back(std::move(pull));
      if (!unpack_job.boxes.empty()) copies.unpacks.push_back(std::move(unpack_job));
    }
  }
  require_all(comm, mismatch);
  for (int r = 0; r < node_size; ++r)
    if (reader[static_cast<size_t>(r)]) readers_.push_back(r);
  remote_ = std::make_unique<mpi_p2p_transport>(*remote_plan_, comm, fields_);
  MPI_Barrier(node_comm_);  // counters are zero everywhere before the first step
}

shm_transport::~shm_transport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  remote_.reset();
  if (!finalized) {
    MPI_Win_free(&control_window_);
  }
}

void shm_transport::spin_until(int node_rank, bool ready, uint64_t value) const {
  const uint64_t* counter = control_[static_cast<size_t>(node_rank)] + (ready ? 0 : 8);
  for (unsigned spins = 0; load_acquire(counter) < value; ++spins) {
    // Oversubscribed ranks must yield or the peer we wait for never runs.
    if (oversubscribed_ || spins > 4096) sched_yield();
  }
}

void shm_transport::start(size_t stage_index) {
  std::byte* outbox = outbox_[static_cast<size_t>(node_rank_)];
  for (const auto& job : stages_[stage_index].packs)
    pack(outbox + job.offset, job.boxes, fields_.data(), plan_.grid, plan_.element_bytes);
  ++step_;
  store_release(control_[static_cast<size_t>(node_rank_)], step_);
  remote_->start(stage_index);
  for (const auto& c : plan_.stages[stage_index].copies)
    copy_boxes(c.from, c.to, fields_.data(), plan_.grid, plan_.element_bytes);
}

void shm_transport::wait(size_t stage_index) {
  for (const auto& pull : stages_[stage_index].pulls) {
    spin_until(pull.node_rank, true, step_);
    for (size_t i = 0; i < pull.from.size(); ++i)
      copy_box_between(pull.from_fields[i], *pull.from_grid, pull.from[i], pull.to_fields[i],
                       plan_.grid, pull.to[i], plan_.element_bytes);
  }
  for (const auto& job : stages_[stage_index].unpacks) {
    spin_until(job.node_rank, true, step_);
    unpack(outbox_[static_cast<size_t>(job.node_rank)] + job.offset, job.boxes, fields_.data(),
           plan_.grid, plan_.element_bytes);
  }
  remote_->wait(stage_index);
  store_release(control_[static_cast<size_t>(node_rank_)] + 8, step_);
  if (stage_index + 1 == plan_.stages.size())
    for (int reader : readers_) spin_until(reader, false, step_);
}

}  // namespace halox
