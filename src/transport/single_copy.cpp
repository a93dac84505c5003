#include "halox/transport/single_copy.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <cstdlib>
#include <set>

#include "halox/transport/trial.hpp"

namespace halox {

namespace {
// Longer runs are always copied directly: staging them doubles the bytes for no saving.
constexpr size_t longest_staged_run = 4096;
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

std::vector<size_t> staging_rules(const exchange_plan& plan, const field_set& fields,
                                  MPI_Comm node_comm) {
  std::set<size_t> rules;
  for (const auto& st : plan.stages)
    for (const auto& m : st.sends)
      for (const auto& fb : m.boxes) {
        const size_t run = pack_copy(fields.pointers[static_cast<size_t>(fb.field)], plan.grid,
                                     fb.region, plan.element_bytes, nullptr)
                               .run;
        if (run > 0 && run <= longest_staged_run) rules.insert(run + 1);
      }
  std::vector<size_t> out =
      agreed_union(std::vector<size_t>(rules.begin(), rules.end()), node_comm);
  out.insert(out.begin(), 0);
  return out;
}

owner_side publish_send_boxes(const exchange_plan& plan, const field_set& fields,
                              const node_membership& node, int me, size_t staged_below,
                              std::byte* outbox, size_t slot_bytes) {
  static std::atomic<uint64_t> schedules{0};
  owner_side out;
  out.id = ++schedules;
  std::vector<published_box> published;
  std::vector<bool> reader(static_cast<size_t>(node.size), false);
  std::vector<int> last_direct(static_cast<size_t>(node.size), -1);  // by reader: stage
  out.packs.resize(plan.stages.size());
  out.slot_freed_by.assign(plan.stages.size(), -1);
  out.slot_freed_before.assign(plan.stages.size(), -1);
  std::vector<int> last_user(outbox_ring, -1);  // by slot: the stage that staged there last
  size_t staging_stages = 0;
  std::vector<size_t> slot_of(plan.stages.size(), 0);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const size_t slot = staging_stages % outbox_ring;
    slot_of[s] = slot;
    size_t cursor = slot * slot_bytes;
    for (const auto& m : plan.stages[s].sends) {
      const auto r = static_cast<size_t>(node.node_rank_of[static_cast<size_t>(m.peer)]);
      reader[r] = true;
      for (size_t i = 0; i < m.boxes.size(); ++i) {
        const auto& fb = m.boxes[i];
        published_box p{static_cast<int>(s), me, m.peer, m.tag, static_cast<int>(i), fb.field};
        for (int d = 0; d < 3; ++d) {
          p.lo[d] = fb.region.lo[d];
          p.hi[d] = fb.region.hi[d];
        }
        const box_copy c = pack_copy(fields.pointers[static_cast<size_t>(fb.field)], plan.grid,
                                     fb.region, plan.element_bytes, outbox + cursor);
        p.staged = c.run < staged_below;
        if (p.staged) {
          p.outbox_offset = cursor;
          out.packs[s].add(c);
          cursor += c.bytes();
        } else if (c.bytes() > 0) {
          last_direct[r] = static_cast<int>(s);
        }
        published.push_back(p);
      }
    }
    if (!out.packs[s].empty()) {
      out.slot_freed_by[s] = last_user[slot];
      last_user[slot] = static_cast<int>(s);
      ++staging_stages;
    }
  }
  // A slot's first stage in an exchange waits for its last stage in the previous one.
  for (size_t s = 0; s < plan.stages.size(); ++s)
    if (!out.packs[s].empty() && out.slot_freed_by[s] < 0)
      out.slot_freed_before[s] = last_user[slot_of[s]];
  for (int r = 0; r < node.size; ++r) {
    if (reader[static_cast<size_t>(r)]) out.readers.push_back(r);
    if (last_direct[static_cast<size_t>(r)] >= 0)
      out.direct_reads.emplace_back(r, static_cast<size_t>(last_direct[static_cast<size_t>(r)]));
  }
  out.publication = std::make_unique<node_publication>(published, node.comm, me);
  return out;
}

std::string describe_rule(const std::string& transport, size_t staged_below,
                          const std::string& how) {
  if (staged_below == 0) return fmt::format("{}: every box direct ({})", transport, how);
  if (staged_below == stage_every_box)
    return fmt::format("{}: every box through the outbox ({})", transport, how);
  return fmt::format("{}: runs under {} B through the outbox, the rest direct ({})", transport,
                     staged_below, how);
}

long long forced_rule(const std::string& variable) {
  const char* env = std::getenv(variable.c_str());
  if (!env || !*env) return -1;
  return static_cast<long long>(std::strtoull(env, nullptr, 10));
}

fetch_ahead_choice choose_fetch_ahead(transport& t, size_t stages,
                                      const std::vector<copy_list*>& lists,
                                      const std::string& variable, MPI_Comm node_comm) {
  auto set = [&](bool on) {
    for (copy_list* l : lists) l->fetch_ahead(on);
  };
  if (const long long forced = forced_rule(variable); forced >= 0) {
    set(forced != 0);
    return {forced != 0, variable};
  }
  int fetchable =
      std::ranges::any_of(lists, [](const copy_list* l) { return l->can_fetch_ahead(); });
  MPI_Allreduce(MPI_IN_PLACE, &fetchable, 1, MPI_INT, MPI_MAX, node_comm);
  if (!fetchable) {
    set(false);
    return {false, "no strided run to fetch"};
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

void single_copy_steps::before_pack(size_t stage, const owner_side& owner) const {
  uint64_t freed = 0;
  if (const int by = owner.slot_freed_by[stage]; by >= 0) {
    freed = seq(static_cast<size_t>(by));
  } else if (completed_ > 0) {
    // Another schedule may have used the slot in any stage of the previous exchange.
    const int before = owner.id == previous_ ? owner.slot_freed_before[stage]
                                             : static_cast<int>(stages_) - 1;
    if (before >= 0) freed = completed_ - stages_ + static_cast<size_t>(before) + 1;
  }
  if (freed > 0)
    for (int r : owner.readers) signals_.wait_done(r, freed);
}

void single_copy_steps::await(size_t stage, const std::vector<int>& peers) const {
  for (int p : peers) signals_.wait_ready(p, seq(stage));
}

void single_copy_steps::done(size_t stage, const owner_side& owner) {
  signals_.raise_done(seq(stage));
  if (stage + 1 == stages_) {
    const uint64_t first = completed_;
    completed_ += stages_;
    previous_ = owner.id;
    for (const auto& [r, last] : owner.direct_reads) signals_.wait_done(r, first + last + 1);
  }
}

void single_copy_steps::drain(const owner_side& owner) const {
  // While an error unwinds, the readers may never get there.
  if (std::uncaught_exceptions() > 0) return;
  try {
    for (int r : owner.readers) signals_.wait_done(r, completed_);
  } catch (const std::exception&) {
    // A reader that timed out ends the job with its own error.
  }
}

}  // namespace halox
