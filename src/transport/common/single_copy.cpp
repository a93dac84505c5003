#include "transport/common/single_copy.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <set>

#include "common/yielding_mpi.hpp"
#include "halox/extend/topology.hpp"
#include "transport/core/trial.hpp"

namespace halox {

namespace {
// Longer runs are always copied directly: packing them into the outbox doubles the bytes for no
// saving.
constexpr size_t longest_outbox_run = 4096;
size_t round_up(size_t n) {
  return (n + 63) / 64 * 64;
}
}  // namespace

size_t outbox_slot_bytes(const exchange_plan& plan) {
  size_t most = 0;
  for (const auto& st : plan.stages) {
    size_t bytes = 0;
    for (const auto& m : st.sends) bytes += m.bytes;
    most = std::max(most, round_up(bytes));
  }
  return most;
}

std::vector<size_t> outbox_rules(const exchange_plan& plan, const field_set& fields,
                                 MPI_Comm node_comm) {
  std::set<size_t> rules;
  for (const auto& st : plan.stages)
    for (const auto& m : st.sends)
      for (const auto& fb : m.boxes) {
        const size_t run =
            pack_copy(fields.pointers[static_cast<size_t>(fb.field)], plan.grid_of(fb.field),
                      fb.region, plan.element_bytes_of(fb.field), nullptr)
                .run;
        if (run > 0 && run <= longest_outbox_run) rules.insert(run + 1);
      }
  std::vector<size_t> out = agreed_union(std::vector<size_t>(rules.begin(), rules.end()),
                                         longest_outbox_run + 2, node_comm);
  out.insert(out.begin(), 0);
  return out;
}

namespace {

box_copy box_copy_of(const exchange_plan& plan, const field_set& fields, const field_box& fb,
                     std::byte* to) {
  return pack_copy(fields.pointers[static_cast<size_t>(fb.field)], plan.grid_of(fb.field),
                   fb.region, plan.element_bytes_of(fb.field), to);
}

// My outbox stages (those that pack something), in order: the k-th is stage_of[k].
std::vector<size_t> outbox_stages_of(const exchange_plan& plan, const field_set& fields,
                                     size_t outbox_below) {
  std::vector<size_t> stage_of;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    bool packs = false;
    for (const auto& m : plan.stages[s].sends)
      for (const auto& fb : m.boxes) {
        const box_copy c = box_copy_of(plan, fields, fb, nullptr);
        packs = packs || (c.run < outbox_below && c.bytes() > 0);
      }
    if (packs) stage_of.push_back(s);
  }
  return stage_of;
}

// By stage: its outbox slot; sets out.freed_back and out.freed_stage (the
// stage that used the slot last).
std::vector<size_t> assign_slots(const std::vector<size_t>& stage_of, size_t nstages,
                                 const slot_rotation& rotation, owner_side& out) {
  const size_t outbox_stages = stage_of.size();
  out.freed_back.assign(nstages, -1);
  out.freed_stage.assign(nstages, -1);
  std::vector<size_t> slot_of(nstages, 0);
  for (size_t k = 0; k < outbox_stages; ++k) {
    const size_t s = stage_of[k];
    if (rotation.rotating) {
      // Global outbox stage g = e*S + k; the slot's last user was g - ring.
      slot_of[s] = (rotation.phase * outbox_stages + k) % outbox_ring;
      size_t back = 0, previous = k;
      if (k >= outbox_ring) {
        previous = k - outbox_ring;
      } else {
        back = (outbox_ring - k + outbox_stages - 1) / outbox_stages;
        previous = k + back * outbox_stages - outbox_ring;
      }
      out.freed_back[s] = static_cast<int>(back);
      out.freed_stage[s] = static_cast<int>(stage_of[previous]);
    } else {
      slot_of[s] = k % outbox_ring;
      if (k >= outbox_ring) {
        out.freed_back[s] = 0;
        out.freed_stage[s] = static_cast<int>(stage_of[k - outbox_ring]);
      } else {
        // The previous exchange's last outbox stage with this slot.
        size_t last = k;
        while (last + outbox_ring < outbox_stages) last += outbox_ring;
        out.freed_back[s] = 1;
        out.freed_stage[s] = static_cast<int>(stage_of[last]);
      }
    }
  }
  return slot_of;
}

}  // namespace

owner_side publish_send_boxes(const exchange_plan& plan, const field_set& fields,
                              const node_membership& node, const std::vector<int>& neighbours,
                              int me, const outbox_place& outbox, const slot_rotation& rotation) {
  static std::atomic<uint64_t> rules{0};
  owner_side out;
  out.rule = rotation.rule ? rotation.rule : ++rules;
  const size_t nstages = plan.stages.size();
  const std::vector<size_t> slot_of =
      assign_slots(outbox_stages_of(plan, fields, outbox.below), nstages, rotation, out);

  std::vector<published_box> published;
  std::vector<bool> reader(static_cast<size_t>(node.size), false);
  std::vector<int> last_direct(static_cast<size_t>(node.size), -1);  // by reader: stage
  out.packs.resize(nstages);
  for (size_t s = 0; s < nstages; ++s) {
    size_t cursor = slot_of[s] * outbox.slot_bytes;
    for (const auto& m : plan.stages[s].sends) {
      const auto r = static_cast<size_t>(node.node_rank_of[static_cast<size_t>(m.peer)]);
      reader[r] = true;
      for (size_t i = 0; i < m.boxes.size(); ++i) {
        const auto& fb = m.boxes[i];
        published_box p = published_box_of(static_cast<int>(s), me, m, i);
        const box_copy c = box_copy_of(plan, fields, fb, outbox.base + cursor);
        p.in_outbox = c.run < outbox.below;
        if (p.in_outbox) {
          p.outbox_offset = cursor;
          out.packs[s].add(c);
          cursor += c.bytes();
        } else if (c.bytes() > 0) {
          last_direct[r] = static_cast<int>(s);
        }
        published.push_back(p);
      }
    }
  }
  for (int r = 0; r < node.size; ++r) {
    if (reader[static_cast<size_t>(r)]) out.readers.push_back(r);
    if (last_direct[static_cast<size_t>(r)] >= 0)
      out.direct_reads.emplace_back(r, static_cast<size_t>(last_direct[static_cast<size_t>(r)]));
  }
  out.publication = std::make_unique<node_publication>(published, node, me, neighbours);
  return out;
}

std::string describe_rule(std::string_view transport, size_t outbox_below, const std::string& how) {
  if (outbox_below == 0) return fmt::format("{}: every box direct ({})", transport, how);
  if (outbox_below == outbox_every_box)
    return fmt::format("{}: every box through the outbox ({})", transport, how);
  return fmt::format("{}: runs under {} B through the outbox, the rest direct ({})", transport,
                     outbox_below, how);
}

fetch_ahead_choice choose_fetch_ahead(transport& t, size_t stages,
                                      const std::vector<copy_list*>& lists,
                                      std::optional<bool> forced, std::string_view forced_by,
                                      MPI_Comm node_comm) {
  auto set = [&](bool on) {
    for (copy_list* l : lists) l->fetch_ahead(on);
  };
  if (forced) {
    set(*forced);
    return {*forced, std::string(forced_by)};
  }
  size_t span = 0;
  for (const copy_list* l : lists) span = std::max(span, l->fetched_span());
  // Fields larger than the L2 cache: after a time step's kernels their lines
  // come from the L3 cache or memory, where fetching ahead wins; a trial of
  // back-to-back exchanges finds them cached and would not see it
  // (docs/results/2026-12-03-depth-one-fetch-ahead.md). Else measured.
  const size_t l2 = this_machine_l2_bytes();
  // Whether some rank can fetch, and whether some rank's longest fetched end fits its L2.
  int seen[2] = {span > 0, span > 0 && (l2 == 0 || span <= l2)};
  yielding_allreduce(MPI_IN_PLACE, seen, 2, MPI_INT, MPI_MAX, node_comm);
  if (!seen[0]) {
    set(false);
    return {false, "no strided run to fetch"};
  }
  if (!seen[1]) {
    set(true);
    return {true, "the fields exceed the L2 cache"};
  }
  const size_t best = fastest_candidate(
      t, stages, 2, [&](size_t c) { set(c == 1); }, node_comm);
  set(best == 1);
  return {best == 1, "measured"};
}

std::string describe_fetch_ahead(const fetch_ahead_choice& choice) {
  return fmt::format("{} ({})", choice.on ? "strided runs fetched ahead" : "no run fetched ahead",
                     choice.how);
}

void single_copy_order::before_pack(size_t stage, const owner_side& owner) const {
  const int back = owner.freed_back[stage];
  if (back < 0) return;
  uint64_t freed = 0;
  const auto ago = static_cast<uint64_t>(back) * stages_;
  if (back == 0) {
    freed = seq(static_cast<size_t>(owner.freed_stage[stage]));
  } else if (owner.rule == rule_ && rule_runs_ >= static_cast<uint64_t>(back)) {
    freed = completed_ - ago + static_cast<uint64_t>(owner.freed_stage[stage]) + 1;
  } else {
    // Another rule may have used the slot in any stage of the exchanges before.
    freed = completed_;
  }
  if (freed > 0)
    for (int r : owner.readers) signals_.wait_done(r, freed);
}

void single_copy_order::await(size_t stage, const std::vector<int>& peers) const {
  for (int p : peers) signals_.wait_ready(p, seq(stage));
}

void single_copy_order::done(size_t stage, const owner_side& owner) {
  signals_.raise_done(seq(stage));
  if (stage + 1 == stages_) {
    const uint64_t first = completed_;
    completed_ += stages_;
    rule_runs_ = owner.rule == rule_ ? rule_runs_ + 1 : 1;
    rule_ = owner.rule;
    for (const auto& [r, last] : owner.direct_reads) signals_.wait_done(r, first + last + 1);
  }
}

void single_copy_order::drain(const owner_side& owner) const {
  // While an error unwinds, the readers may never get there.
  if (std::uncaught_exceptions() > 0) return;
  try {
    for (int r : owner.readers) signals_.wait_done(r, completed_);
  } catch (const std::exception&) {
    // A reader that timed out ends the job with its own error.
  }
}

single_copy_transport::single_copy_transport(const transport_context& ctx,
                                             std::string_view transport)
    : plan_(ctx.plan),
      fields_(ctx.fields),
      waits_(ctx.waits),
      node_(ctx.node),
      transport_(transport),
      neighbours_(node_neighbours(ctx.plan, ctx.node)) {
  MPI_Comm_rank(ctx.comm, &me_);
  require_on_node(ctx, transport_);
  slot_bytes_ = outbox_slot_bytes(plan_);
}

void single_copy_transport::start_signals(size_t payload_bytes) {
  signals_.emplace(node_, waits_, transport_, payload_bytes, neighbours_);
  order_.emplace(*signals_, plan_.stages.size());
}

std::string single_copy_transport::describe_choices(size_t outbox_below,
                                                    std::string_view extra) const {
  return describe_rule(transport_, outbox_below, how_) + std::string(extra) + "; " +
         describe_fetch_ahead(fetch_ahead_);
}

}  // namespace halox
