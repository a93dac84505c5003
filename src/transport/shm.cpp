#include "halox/transport/shm.hpp"

#include <cstdlib>
#include <fmt/core.h>

#include "halox/common/error.hpp"
#include "halox/field_memory.hpp"
#include "halox/pack.hpp"
#include "halox/transport/node_publication.hpp"

namespace halox {

namespace {

// Below this many bytes per x-run a box goes through the outbox even when
// the reader could copy it directly (HALOX_SHM_DIRECT_MIN_RUN overrides).
size_t direct_min_run_bytes() {
  static const size_t value = [] {
    const char* env = std::getenv("HALOX_SHM_DIRECT_MIN_RUN");
    return env ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) : size_t{256};
  }();
  return value;
}

}  // namespace

shm_transport::shm_transport(const transport_context& ctx)
    : plan_(ctx.plan), fields_(ctx.fields), waits_(ctx.waits), node_(ctx.node) {
  MPI_Comm node_comm = node_.comm;
  const int node_size = node_.size;
  int me = 0;
  MPI_Comm_rank(ctx.comm, &me);
  require_on_node(ctx, "shm");
  std::string problem;

  // Direct copies need the fields of every rank of the node in one shared window.
  int all_shared = fields_.shared ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all_shared, 1, MPI_INT, MPI_MIN, node_comm);
  direct_ = all_shared != 0;

  // Layouts and field offsets, node-wide (no global gather).
  const size_t nfields = fields_.pointers.size();
  std::vector<uint64_t> my_offsets(nfields, 0);
  for (size_t f = 0; f < nfields; ++f)
    if (direct_) my_offsets[f] = fields_.shared->offset(static_cast<int>(f));
  auto layouts = gather_layouts(plan_.grid, my_offsets, node_comm);
  for (const auto& l : layouts) peer_grids_.push_back(l.grid);

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
  node_publication publication(published, node_comm, me);

  // Counters and outbox in one shared window; the outbox starts a page in.
  signals_.emplace(node_, waits_, "shm", outbox_bytes);

  // My receives: find the owner's published boxes for each message.
  for (size_t s = 0; s < plan_.stages.size() && problem.empty(); ++s)
    for (const auto& m : plan_.stages[s].recvs) {
      const int peer = node_.node_rank_of[static_cast<size_t>(m.peer)];
      auto found = publication.boxes_of(s, m, problem);
      if (!problem.empty()) break;
      peer_copy pull;
      pull.node_rank = peer;
      pull.from_grid = &peer_grids_[static_cast<size_t>(peer)];
      outbox_unpack unpack_job;
      unpack_job.node_rank = peer;
      bool first_staged = true;
      for (size_t i = 0; i < m.boxes.size(); ++i) {
        const published_box& p = *found[i];
        const auto& to = m.boxes[i];
        if (p.staged) {
          if (first_staged) unpack_job.offset = p.outbox_offset;
          first_staged = false;
          unpack_job.boxes.push_back(to);
          continue;
        }
        pull.from_fields.push_back(fields_.shared->segment_of(peer) +
                                   layouts[static_cast<size_t>(peer)]
                                       .words[static_cast<size_t>(to.field)]);
        pull.from.push_back(p.region());
        pull.to_fields.push_back(fields_.pointers[static_cast<size_t>(to.field)]);
        pull.to.push_back(to.region);
      }
      if (!pull.from.empty()) stages_[s].pulls.push_back(std::move(pull));
      if (!unpack_job.boxes.empty()) stages_[s].unpacks.push_back(std::move(unpack_job));
    }
  require_all(ctx.comm, problem);
}

void shm_transport::start(size_t stage_index) {
  std::byte* outbox = signals_->payload(node_.rank);
  for (const auto& job : stages_[stage_index].packs)
    pack(outbox + job.offset, job.boxes, fields_.pointers.data(), plan_.grid, plan_.element_bytes);
  ++step_;
  signals_->raise_ready(step_);
  for (const auto& c : plan_.stages[stage_index].copies)
    copy_boxes(c.from, c.to, fields_.pointers.data(), plan_.grid, plan_.element_bytes);
}

void shm_transport::wait(size_t stage_index) {
  for (const auto& pull : stages_[stage_index].pulls) {
    signals_->wait_ready(pull.node_rank, step_);
    for (size_t i = 0; i < pull.from.size(); ++i)
      copy_box_between(pull.from_fields[i], *pull.from_grid, pull.from[i], pull.to_fields[i],
                       plan_.grid, pull.to[i], plan_.element_bytes);
  }
  for (const auto& job : stages_[stage_index].unpacks) {
    signals_->wait_ready(job.node_rank, step_);
    unpack(signals_->payload(job.node_rank) + job.offset, job.boxes,
           fields_.pointers.data(), plan_.grid, plan_.element_bytes);
  }
  signals_->raise_done(step_);
  if (stage_index + 1 == plan_.stages.size())
    for (int reader : readers_) signals_->wait_done(reader, step_);
}

}  // namespace halox
