#include "halox/extend/plan.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

#include "halox/common/error.hpp"

namespace halox {

int message_tag(int field_slot, const ivec3& direction) {
  return field_slot * direction_count + direction_index(direction);
}

namespace {
template <class List>
size_t total_bytes(const std::vector<stage>& stages, List stage::*list) {
  size_t total = 0;
  for (const auto& s : stages)
    for (const auto& item : s.*list) total += item.bytes;
  return total;
}
}  // namespace

size_t exchange_plan::bytes_sent() const { return total_bytes(stages, &stage::sends); }
size_t exchange_plan::bytes_received() const { return total_bytes(stages, &stage::recvs); }
size_t exchange_plan::bytes_copied() const { return total_bytes(stages, &stage::copies); }

size_t exchange_plan::message_count() const {
  size_t total = 0;
  for (const auto& s : stages) total += s.sends.size();
  return total;
}

bool exchange_plan::uniform() const {
  for (int f : moved)
    if (!(layouts[static_cast<size_t>(f)] == first_layout())) return false;
  return true;
}

neighbour_sides sides_of(const decomposition& d) {
  neighbour_sides sides;
  for (int dim = 0; dim < 3; ++dim) {
    ivec3 down{0, 0, 0}, up{0, 0, 0};
    down[dim] = -1;
    up[dim] = +1;
    sides.lo[dim] = d.neighbor(down).has_value();
    sides.hi[dim] = d.neighbor(up).has_value();
  }
  return sides;
}

namespace {

// One direction's part of a message for one field: its box, and the
// direction the sender sends toward (the order of boxes in the message at
// both ends, field by field).
struct message_part {
  int field;
  ivec3 direction;
  box region;
  int sender_direction;
};

size_t bytes_of(const std::vector<field_box>& boxes, const exchange_plan& plan) {
  size_t total = 0;
  for (const auto& b : boxes)
    total += static_cast<size_t>(b.region.volume()) * plan.element_bytes_of(b.field);
  return total;
}

// The message to (or from) `peer` with every part, field by field.
message make_message(int peer, std::vector<message_part> parts, int field_slot,
                     const exchange_plan& plan) {
  std::ranges::stable_sort(parts, [](const message_part& a, const message_part& b) {
    return a.field != b.field ? a.field < b.field : a.sender_direction < b.sender_direction;
  });
  message m;
  m.peer = peer;
  m.direction = parts.front().direction;
  int first_sender_direction = parts.front().sender_direction;
  for (const auto& p : parts) first_sender_direction = std::min(first_sender_direction, p.sender_direction);
  m.tag = message_tag(field_slot, direction_of(first_sender_direction));
  for (const auto& p : parts) m.boxes.push_back({p.field, p.region, p.direction});
  m.bytes = bytes_of(m.boxes, plan);
  return m;
}

// Each field's regions of every step, from its own layout at the plan's depth.
using field_steps = std::vector<std::vector<halo_region>>;

// The messages and local copies of step `step` for the fields of `block`.
void add_step(stage& out, const decomposition& d, const std::vector<field_steps>& regions,
              size_t step, const std::vector<int>& block, int field_slot,
              const exchange_plan& plan) {
  std::vector<int> peers;
  std::vector<std::vector<message_part>> sends, recvs;
  auto slot_of = [&](int peer) {
    auto at = std::ranges::find(peers, peer);
    if (at != peers.end()) return static_cast<size_t>(at - peers.begin());
    peers.push_back(peer);
    sends.emplace_back();
    recvs.emplace_back();
    return peers.size() - 1;
  };
  std::vector<local_copy> copies;  // by direction, in the order they occur
  auto copy_toward = [&](const ivec3& direction) -> local_copy& {
    for (auto& c : copies)
      if (c.direction == direction) return c;
    copies.push_back({direction, {}, {}, 0});
    return copies.back();
  };
  for (int f : block) {
    const auto& step_regions = regions[static_cast<size_t>(f)][step];
    for (const auto& region : step_regions) {
      auto peer = d.neighbor(region.direction);
      if (!peer) continue;  // open boundary: the halo keeps its values
      if (*peer == d.rank()) {
        // Our own points, sent "toward -direction", land in the halo at +direction.
        const halo_region* source = nullptr;
        for (const auto& r : step_regions)
          if (r.direction == opposite(region.direction)) source = &r;
        if (!source || region.recv.empty()) continue;
        local_copy& copy = copy_toward(region.direction);
        copy.from.push_back({f, source->send, {}});
        copy.to.push_back({f, region.recv, region.direction});
        continue;
      }
      const size_t slot = slot_of(*peer);
      if (!region.send.empty())
        sends[slot].push_back(
            {f, region.direction, region.send, direction_index(region.direction)});
      // The peer sent it toward us, i.e. toward -direction from its side.
      if (!region.recv.empty())
        recvs[slot].push_back(
            {f, region.direction, region.recv, direction_index(opposite(region.direction))});
    }
  }
  for (auto& c : copies) {
    c.bytes = bytes_of(c.to, plan);
    out.copies.push_back(std::move(c));
  }
  for (size_t i = 0; i < peers.size(); ++i) {
    if (!sends[i].empty()) out.sends.push_back(make_message(peers[i], sends[i], field_slot, plan));
    if (!recvs[i].empty()) out.recvs.push_back(make_message(peers[i], recvs[i], field_slot, plan));
  }
}

std::string request_problem(const plan_request& r) {
  const int count = static_cast<int>(r.layouts.size());
  if (count < 1) return fmt::format("number of fields must be at least 1, got {}", count);
  if (r.fields_per_message < 0)
    return fmt::format("fields per message must not be negative, got {}", r.fields_per_message);
  if (r.depth < 0) return fmt::format("depth must not be negative, got {}", r.depth);
  for (size_t i = 0; i < r.moved.size(); ++i) {
    if (r.moved[i] < 0 || r.moved[i] >= count)
      return fmt::format("field index {} is not one of the exchange's {} fields", r.moved[i], count);
    if (i > 0 && r.moved[i] <= r.moved[i - 1])
      return "the fields a call moves must be listed once each, in ascending order";
  }
  return {};
}

}  // namespace

exchange_plan make_plan(const decomposition& d, plan_request request) {
  if (auto problem = request_problem(request); !problem.empty()) throw usage_error(problem);
  exchange_plan plan;
  plan.layouts = std::move(request.layouts);
  plan.moved = std::move(request.moved);
  if (plan.moved.empty())
    for (int f = 0; f < static_cast<int>(plan.layouts.size()); ++f) plan.moved.push_back(f);
  plan.depth = request.depth;
  plan.alg = request.alg;
  plan.grouping = request.grouping;
  const int nfields = static_cast<int>(plan.moved.size());
  plan.nfields = nfields;
  // Each field's regions, from the points it holds and the halo this depth fills.
  const neighbour_sides sides = sides_of(d);
  std::vector<field_steps> regions(plan.layouts.size());
  for (int f : plan.moved) {
    // A field whose shared points are kept is planned as its holders see it: the shared
    // face is held, not halo. The view addresses the same memory, with the same origin,
    // so its boxes are boxes of the field as laid out.
    field_layout l = plan.layouts[static_cast<size_t>(f)];
    l.exchanged = filled_widths(l, plan.depth);
    if (l.shared == shared_points::kept) l = holder_view(l, sides);
    const local_grid filled(l.grid.interior, l.exchanged);
    validate_grid(filled);
    regions[static_cast<size_t>(f)] = halo_regions(filled, plan.alg, sides, kept_shared_points(l));
  }
  const int cache = request.fields_per_block > 0 ? std::min(request.fields_per_block, nfields) : nfields;
  const int per_message = request.fields_per_message;
  plan.fields_per_message = per_message > 0 ? std::min(per_message, nfields)
                            : plan.grouping == field_grouping::compact  ? nfields
                            : plan.grouping == field_grouping::sequence ? 1
                                                                        : cache;
  plan.fields_per_block = std::min(plan.fields_per_message, cache);
  // Block by block, each block through all steps: a block's halo is still in
  // cache when the next step sends it on. A message of fields_per_message
  // fields is the blocks of its fields, one after another.
  const size_t steps = static_cast<size_t>(step_count(plan.alg));
  for (int first = 0, slot = 0; first < nfields; first += plan.fields_per_message)
    for (int begin = first; begin < std::min(first + plan.fields_per_message, nfields);
         begin += plan.fields_per_block, ++slot) {
      const int count = std::min({plan.fields_per_block, nfields - begin,
                                  first + plan.fields_per_message - begin});
      const std::vector<int> block(plan.moved.begin() + begin, plan.moved.begin() + begin + count);
      for (size_t step = 0; step < steps; ++step) {
        stage s;
        add_step(s, d, regions, step, block, slot, plan);
        plan.stages.push_back(std::move(s));
      }
    }
  return plan;
}

namespace {

constexpr size_t cache_line = 64;

// The cache lines a box of a field touches, in bytes: runs that stop short of
// a whole row touch a line of their own each, however few bytes they move (a
// halo 1 wide across x moves 4 bytes per 64-byte line).
size_t touched_bytes(const field_box& fb, const local_grid& grid, size_t element_bytes) {
  const box& b = fb.region;
  if (b.empty()) return 0;
  const size_t volume = static_cast<size_t>(b.volume()) * element_bytes;
  if (b.extent(0) == grid.allocated()[0]) return volume;
  const size_t run = static_cast<size_t>(b.extent(0)) * element_bytes;
  const size_t runs = static_cast<size_t>(b.extent(1)) * static_cast<size_t>(b.extent(2));
  // A run starting anywhere on an element boundary spans this many lines on average.
  return runs * ((run - element_bytes) + cache_line);
}

}  // namespace

int cache_sized_block(const decomposition& d, const plan_request& request, size_t cache_bytes) {
  const int nfields =
      static_cast<int>(request.moved.empty() ? request.layouts.size() : request.moved.size());
  if (cache_bytes == 0) return std::max(nfields, 1);
  plan_request one = request;
  one.grouping = field_grouping::sequence;
  one.fields_per_message = 0;
  one.fields_per_block = 0;
  const exchange_plan plan = make_plan(d, std::move(one));
  // The largest field's traffic in one stage (the sequence grouping: a stage is a field's step),
  // and its largest message to one peer.
  size_t per_field = 1, per_field_message = 0;
  for (const auto& st : plan.stages) {
    for (const auto& m : st.sends) per_field_message = std::max(per_field_message, m.bytes);
    size_t bytes = 0;
    auto add = [&](const std::vector<field_box>& boxes) {
      for (const auto& fb : boxes)
        bytes += touched_bytes(fb, plan.grid_of(fb.field), plan.element_bytes_of(fb.field));
    };
    for (const auto& m : st.sends) add(m.boxes);
    for (const auto& m : st.recvs) add(m.boxes);
    for (const auto& c : st.copies) {
      add(c.from);
      add(c.to);
    }
    per_field = std::max(per_field, bytes);
  }
  // Each block is a message of its own (on a node, a signal both ranks wait
  // for): blocks carry at least min_fragment_bytes where the fields have that
  // many, or the fixed cost of the fragments outweighs what the cache saves.
  const size_t fitting = cache_bytes / 4 / per_field;
  const size_t carrying = per_field_message == 0
                              ? 1
                              : (min_fragment_bytes + per_field_message - 1) / per_field_message;
  return static_cast<int>(
      std::clamp<size_t>(std::max(fitting, carrying), 1, static_cast<size_t>(nfields)));
}

std::vector<int> fields_filled(const stage& st) {
  std::vector<int> fields;
  for (const auto& m : st.recvs)
    for (const auto& b : m.boxes) fields.push_back(b.field);
  for (const auto& c : st.copies)
    for (const auto& b : c.to) fields.push_back(b.field);
  std::ranges::sort(fields);
  fields.erase(std::unique(fields.begin(), fields.end()), fields.end());
  return fields;
}

}  // namespace halox
