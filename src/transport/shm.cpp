#include "halox/transport/shm.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

#include "halox/common/error.hpp"
#include "halox/field_memory.hpp"
#include "halox/transport/node_publication.hpp"
#include "halox/transport/trial.hpp"

namespace halox {

shm_transport::shm_transport(const transport_context& ctx)
    : plan_(ctx.plan), fields_(ctx.fields), waits_(ctx.waits), node_(ctx.node) {
  MPI_Comm_rank(ctx.comm, &me_);
  require_on_node(ctx, "shm");

  // Direct copies need the fields of every rank of the node in one shared window.
  int all_shared = fields_.shared ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all_shared, 1, MPI_INT, MPI_MIN, node_.comm);
  direct_ = all_shared != 0;

  // Layouts and field offsets, node-wide (no global gather).
  const size_t nfields = fields_.pointers.size();
  std::vector<uint64_t> my_offsets(nfields, 0);
  for (size_t f = 0; f < nfields; ++f)
    if (direct_) my_offsets[f] = fields_.shared->offset(static_cast<int>(f));
  for (auto& l : gather_layouts(plan_.grid, my_offsets, node_.comm)) {
    peer_grids_.push_back(l.grid);
    peer_words_.push_back(std::move(l.words));
  }

  slot_bytes_ = outbox_slot_bytes(plan_);
  signals_.emplace(node_, waits_, "shm", outbox_ring * slot_bytes_);
  steps_.emplace(*signals_, plan_.stages.size());

  // The send boxes must match their readers' receives (the same on every rule).
  std::string problem;
  staged_below_ = direct_ ? 0 : stage_every_box;
  work_ = build(staged_below_, problem);
  require_all(ctx.comm, problem);
  if (!direct_) {
    rule_ = "fields in private memory";
  } else if (const long long forced = forced_rule("HALOX_SHM_DIRECT_MIN_RUN"); forced >= 0) {
    staged_below_ = static_cast<size_t>(forced);
    rule_ = "HALOX_SHM_DIRECT_MIN_RUN";
    work_ = build(staged_below_, problem);
  } else if (auto candidates = staging_rules(plan_, fields_, node_.comm); candidates.size() > 1) {
    staged_below_ = measured_rule(candidates);
    rule_ = fmt::format("measured, {} rules", candidates.size());
  } else {
    rule_ = "no run to stage";
  }
  std::vector<copy_list*> lists;
  for (auto& pack : work_.owner.packs) lists.push_back(&pack);
  for (auto& w : work_.stages) lists.push_back(&w.land);
  fetch_ahead_ =
      choose_fetch_ahead(*this, plan_.stages.size(), lists, "HALOX_SHM_FETCH_AHEAD", node_.comm);
}

std::string shm_transport::settings() const {
  return describe_rule("shm", staged_below_, rule_) + "; " + describe_fetch_ahead(fetch_ahead_);
}

shm_transport::schedule shm_transport::build(size_t staged_below, std::string& problem) {
  schedule out;
  const size_t element_bytes = plan_.element_bytes;
  const auto& grid = plan_.grid;
  std::byte* const* fields = fields_.pointers.data();
  auto node_rank_of = [&](int peer) { return node_.node_rank_of[static_cast<size_t>(peer)]; };

  out.owner = publish_send_boxes(plan_, fields_, node_, me_, staged_below,
                                 signals_->payload(node_.rank), slot_bytes_);
  const node_publication& publication = *out.owner.publication;
  out.stages.resize(plan_.stages.size());

  // My receives: the owner's published box for each of mine, and my self
  // copies, field by field (the -x and +x boxes of a field land together).
  for (size_t s = 0; s < plan_.stages.size() && problem.empty(); ++s) {
    const stage& st = plan_.stages[s];
    stage_work& w = out.stages[s];
    std::vector<std::vector<const published_box*>> owner_boxes;
    for (const auto& m : st.recvs) owner_boxes.push_back(publication.boxes_of(s, m, problem));
    if (!problem.empty()) break;
    std::vector<int> fields_of_stage;
    for (const auto& m : st.recvs)
      for (const auto& b : m.boxes) fields_of_stage.push_back(b.field);
    for (const auto& c : st.copies)
      for (const auto& b : c.to) fields_of_stage.push_back(b.field);
    std::ranges::sort(fields_of_stage);
    fields_of_stage.erase(std::unique(fields_of_stage.begin(), fields_of_stage.end()),
                          fields_of_stage.end());
    for (int f : fields_of_stage) {
      for (size_t r = 0; r < st.recvs.size(); ++r) {
        const message& m = st.recvs[r];
        const int peer = node_rank_of(m.peer);
        for (size_t i = 0; i < m.boxes.size(); ++i) {
          const auto& to = m.boxes[i];
          if (to.field != f) continue;
          if (std::ranges::find(w.peers, peer) == w.peers.end()) w.peers.push_back(peer);
          const published_box& p = *owner_boxes[r][i];
          std::byte* field = fields[to.field];
          if (p.staged) {
            w.land.add(unpack_copy(signals_->payload(peer) + p.outbox_offset, field, grid,
                                   to.region, element_bytes));
          } else {
            const std::byte* there =
                fields_.shared->segment_of(peer) +
                peer_words_[static_cast<size_t>(peer)][static_cast<size_t>(p.field)];
            w.land.add(field_copy(there, peer_grids_[static_cast<size_t>(peer)], p.region(), field,
                                  grid, to.region, element_bytes));
          }
        }
      }
      for (const auto& c : st.copies)
        for (size_t i = 0; i < c.from.size(); ++i)
          if (c.to[i].field == f)
            w.land.add(field_copy(fields[c.from[i].field], grid, c.from[i].region,
                                  fields[c.to[i].field], grid, c.to[i].region, element_bytes));
    }
  }
  return out;
}

size_t shm_transport::measured_rule(const std::vector<size_t>& candidates) {
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

void shm_transport::start(size_t stage) {
  const copy_list& pack = active_->owner.packs[stage];
  if (!pack.empty()) {
    steps_->before_pack(stage, active_->owner.slot_freed_by[stage], active_->owner.readers);
    pack.run();
  }
  steps_->ready(stage);
}

void shm_transport::wait(size_t stage) {
  const stage_work& w = active_->stages[stage];
  steps_->await(stage, w.peers);
  w.land.run();
  steps_->done(stage, active_->owner.readers);
}

}  // namespace halox
