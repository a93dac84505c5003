#include "transport/node/shm.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>

#include "common/stage_timer.hpp"
#include "common/yielding_mpi.hpp"
#include "halox/common/error.hpp"
#include "halox/field_memory.hpp"
#include "transport/common/node_publication.hpp"
#include "transport/core/names.hpp"
#include "transport/core/trial.hpp"

namespace halox {

shm_transport::shm_transport(const transport_context& ctx)
    : single_copy_transport(ctx, transport_names::shm) {
  // Direct copies need the fields of every rank of the node in one shared window,
  // allocated for the same grouping of ranks into nodes (else they are copied).
  int same = MPI_UNEQUAL;
  if (fields_.shared) MPI_Comm_compare(fields_.shared->node_comm(), node_.comm, &same);
  int all_shared = same == MPI_IDENT || same == MPI_CONGRUENT ? 1 : 0;
  yielding_allreduce(MPI_IN_PLACE, &all_shared, 1, MPI_INT, MPI_MIN, node_.comm);
  direct_ = all_shared != 0;

  // Layouts and field offsets, node-wide (no global gather).
  const size_t nfields = fields_.pointers.size();
  std::vector<uint64_t> my_offsets(nfields, 0);
  for (size_t f = 0; f < nfields; ++f)
    if (direct_) my_offsets[f] = fields_.shared->offset_of(fields_.pointers[f]);
  for (auto& l : gather_layouts(plan_, my_offsets, node_, neighbours_)) {
    peer_grids_.push_back(std::move(l.grids));
    peer_words_.push_back(std::move(l.words));
  }

  start_signals(outbox_ring * slot_bytes_);  // the payload is the outbox

  // The send boxes must match their readers' receives (the same on every rule).
  std::string problem;
  rule_.outbox_below = direct_ ? 0 : outbox_every_box;
  work_ = build(rule_, problem);
  require_all(ctx.comm, problem);
  int node_has_messages = 0;
  for (const auto& st : plan_.stages) node_has_messages |= st.sends.empty() ? 0 : 1;
  yielding_allreduce(MPI_IN_PLACE, &node_has_messages, 1, MPI_INT, MPI_MAX, node_.comm);
  if (!direct_) {
    how_ = "fields in private memory";
  } else {
    // Each variable pins its half of the rule; the rest is measured.
    std::vector<std::string> forced_by;
    std::vector<size_t> lengths;
    const shm_tuning& tuning = ctx.tuning.shm;
    if (tuning.direct_min_run) {
      lengths = {*tuning.direct_min_run};
      forced_by.push_back("tuning.shm.direct_min_run");
    } else {
      lengths =
          node_has_messages ? outbox_rules(plan_, fields_, node_.comm) : std::vector<size_t>{0};
    }
    std::vector<bool> pushes{false};
    if (node_has_messages) pushes.push_back(true);
    if (tuning.push) {
      pushes = {*tuning.push};
      forced_by.push_back("tuning.shm.push");
    }
    std::vector<rule> candidates;
    for (bool push : pushes)
      for (size_t below : lengths) candidates.push_back({below, push});
    const std::string forced = fmt::format("{}", fmt::join(forced_by, ", "));
    if (candidates.size() > 1) {
      rule_ = measured_rule(candidates);
      how_ = fmt::format("measured, {} rules{}{}", candidates.size(), forced.empty() ? "" : "; ",
                         forced);
    } else {
      rule_ = candidates.front();
      work_ = build(rule_, problem);
      how_ = forced.empty() ? "no run to pack into the outbox" : forced;
    }
  }
  std::vector<copy_list*> lists;
  for (auto& phase : work_) {
    for (auto& pack : phase.owner.packs) lists.push_back(&pack);
    for (auto& w : phase.stages) {
      lists.push_back(&w.land);
      lists.push_back(&w.push);
    }
  }
  fetch_ahead_ = choose_fetch_ahead(*this, plan_.stages.size(), lists, ctx.tuning.shm.fetch_ahead,
                                    "tuning.shm.fetch_ahead", node_.comm);
}

shm_transport::~shm_transport() {
  if (order_ && !active_->empty()) order_->drain(active_->front().owner);
}

std::string shm_transport::settings() const {
  return describe_choices(
      rule_.outbox_below,
      rule_.push ? "; owners write direct boxes into the readers' halos (push)" : "");
}

void shm_transport::tuning_as_built(transport_tuning& tuning) const {
  if (direct_) {  // in private memory every box goes through the outbox, nothing measured
    tuning.shm.direct_min_run = rule_.outbox_below;
    tuning.shm.push = rule_.push;
  }
  tuning.shm.fetch_ahead = fetch_ahead_.on;
}

shm_transport::phases shm_transport::build(const rule& choice, std::string& problem) {
  phases out;
  out.push_back(build_phase(choice, 0, 0, problem));
  // Phases differ only in the slots of outbox boxes: where nobody on the node
  // packs into the outbox under this rule, one schedule serves every exchange.
  int packs_something =
      std::ranges::any_of(out.front().owner.packs, [](const copy_list& p) { return !p.empty(); });
  yielding_allreduce(MPI_IN_PLACE, &packs_something, 1, MPI_INT, MPI_MAX, node_.comm);
  for (size_t phase = 1; packs_something && phase < outbox_ring; ++phase)
    out.push_back(build_phase(choice, phase, out.front().owner.rule, problem));
  return out;
}

shm_transport::schedule shm_transport::build_phase(const rule& choice, size_t phase,
                                                   uint64_t rule_id, std::string& problem) {
  schedule out;
  std::byte* const* fields = fields_.pointers.data();
  auto node_rank_of = [&](int peer) { return node_.node_rank_of[static_cast<size_t>(peer)]; };

  out.owner = publish_send_boxes(plan_, fields_, node_, neighbours_, me_,
                                 {choice.outbox_below, signals_->payload(node_.rank), slot_bytes_},
                                 {.rotating = true, .phase = phase, .rule = rule_id});
  const node_publication& publication = *out.owner.publication;
  out.stages.resize(plan_.stages.size());
  if (choice.push) {
    add_pushes(choice, out, problem);
    out.owner.direct_reads.clear();  // I write my direct boxes myself
  }

  // My receives: the owner's published box for each of mine, and my self
  // copies, field by field (the -x and +x boxes of a field land together).
  for (size_t s = 0; s < plan_.stages.size() && problem.empty(); ++s) {
    const stage& st = plan_.stages[s];
    stage_work& w = out.stages[s];
    std::vector<std::vector<const published_box*>> owner_boxes;
    for (const auto& m : st.recvs) owner_boxes.push_back(publication.boxes_of(s, m, problem));
    if (!problem.empty()) break;
    for (int f : fields_filled(st)) {
      for (size_t r = 0; r < st.recvs.size(); ++r) {
        const message& m = st.recvs[r];
        const int peer = node_rank_of(m.peer);
        for (size_t i = 0; i < m.boxes.size(); ++i) {
          const auto& to = m.boxes[i];
          if (to.field != f) continue;
          const published_box& p = *owner_boxes[r][i];
          if (!(choice.push && !p.in_outbox) && std::ranges::find(w.peers, peer) == w.peers.end())
            w.peers.push_back(peer);
          std::byte* field = fields[to.field];
          const local_grid& grid = plan_.grid_of(to.field);
          const size_t element_bytes = plan_.element_bytes_of(to.field);
          if (choice.push && !p.in_outbox) {
            if (std::ranges::find(w.pushers, peer) == w.pushers.end()) w.pushers.push_back(peer);
          } else if (p.in_outbox) {
            w.land.add(unpack_copy(signals_->payload(peer) + p.outbox_offset, field, grid,
                                   to.region, element_bytes));
          } else {
            const std::byte* there =
                fields_.shared->segment_of(peer) +
                peer_words_[static_cast<size_t>(peer)][static_cast<size_t>(p.field)];
            w.land.add(field_copy(
                there, peer_grids_[static_cast<size_t>(peer)][static_cast<size_t>(p.field)],
                p.region(), field, grid, to.region, element_bytes));
          }
        }
      }
      for (const auto& c : st.copies)
        for (size_t i = 0; i < c.from.size(); ++i)
          if (c.to[i].field == f)
            w.land.add(field_copy(fields[c.from[i].field], plan_.grid_of(c.from[i].field),
                                  c.from[i].region, fields[c.to[i].field],
                                  plan_.grid_of(c.to[i].field), c.to[i].region,
                                  plan_.element_bytes_of(c.to[i].field)));
    }
  }
  return out;
}

void shm_transport::add_pushes(const rule& choice, schedule& out, std::string& problem) {
  std::byte* const* fields = fields_.pointers.data();
  // My receive boxes, published to their owners (who write them).
  std::vector<published_box> mine;
  for (size_t s = 0; s < plan_.stages.size(); ++s)
    for (const auto& m : plan_.stages[s].recvs)
      for (size_t i = 0; i < m.boxes.size(); ++i) {
        published_box p{static_cast<int>(s), me_, m.peer, m.tag, static_cast<int>(i),
                        m.boxes[i].field};
        for (int d = 0; d < 3; ++d) {
          p.lo[d] = m.boxes[i].region.lo[d];
          p.hi[d] = m.boxes[i].region.hi[d];
        }
        mine.push_back(p);
      }
  const node_publication receivers(mine, node_, me_, neighbours_);
  for (size_t s = 0; s < plan_.stages.size(); ++s) {
    const auto& sends = plan_.stages[s].sends;
    std::vector<std::vector<const published_box*>> theirs;  // by message, the receiver's boxes
    for (const auto& m : sends) theirs.push_back(receivers.boxes_of(s, m, problem));
    if (!problem.empty()) return;
    stage_work& w = out.stages[s];
    // Field by field, as the reader lands them.
    for (int f : plan_.moved)
      for (size_t r = 0; r < sends.size(); ++r) {
        const message& m = sends[r];
        const int peer = node_.node_rank_of[static_cast<size_t>(m.peer)];
        for (size_t i = 0; i < m.boxes.size(); ++i) {
          const auto& from = m.boxes[i];
          const local_grid& grid = plan_.grid_of(f);
          if (from.field != f ||
              pack_copy(fields[f], grid, from.region, plan_.element_bytes_of(f), nullptr).run <
                  choice.outbox_below)
            continue;
          if (std::ranges::find(w.targets, peer) == w.targets.end()) w.targets.push_back(peer);
          std::byte* there = fields_.shared->segment_of(peer) +
                             peer_words_[static_cast<size_t>(peer)][static_cast<size_t>(f)];
          w.push.add(field_copy(fields[f], grid, from.region, there,
                                peer_grids_[static_cast<size_t>(peer)][static_cast<size_t>(f)],
                                theirs[r][i]->region(), plan_.element_bytes_of(f)));
        }
      }
  }
}

shm_transport::rule shm_transport::measured_rule(const std::vector<rule>& candidates) {
  std::string problem;
  std::vector<phases> schedules;
  for (const rule& r : candidates) schedules.push_back(build(r, problem));
  const size_t best = fastest_candidate(
      *this, plan_.stages.size(), candidates.size(), [&](size_t c) { active_ = &schedules[c]; },
      node_.comm);
  work_ = std::move(schedules[best]);
  active_ = &work_;
  return candidates[best];
}

void shm_transport::start(size_t stage) {
  if (stage == 0) current_ = &(*active_)[order_->exchanges() % active_->size()];
  const copy_list& pack = current_->owner.packs[stage];
  if (!pack.empty()) {
    order_->before_pack(stage, current_->owner);
    const stage_timer::part_span packing(stage_timer::pack);
    pack.run();
  }
  order_->ready(stage);
  const stage_work& w = current_->stages[stage];
  if (!w.targets.empty()) {
    // Their halos for this stage are free once they are in it.
    order_->await(stage, w.targets);
    w.push.run();
    order_->pushed(stage);
  }
}

void shm_transport::wait(size_t stage) {
  const stage_work& w = current_->stages[stage];
  order_->await(stage, w.peers);
  order_->await_pushed(stage, w.pushers);
  w.land.run();
  order_->done(stage, current_->owner);
}

}  // namespace halox
