#include "halox/plan.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "halox/common/error.hpp"

namespace halox {

field_mode parse_field_mode(const std::string& name) {
  std::vector<std::string> names;
  for (const field_mode m : all_field_modes) {
    if (to_string(m) == name) return m;
    names.push_back(to_string(m));
  }
  throw usage_error(
      fmt::format("unknown field mode '{}' (expected {})", name, fmt::join(names, ", ")));
}

std::string to_string(field_mode m) {
  switch (m) {
    case field_mode::compact: return "compact";
    case field_mode::sequence: return "sequence";
    case field_mode::cache: return "cache";
  }
  return "?";
}

element_type parse_element_type(const std::string& name) {
  if (name == "float" || name == "f32") return element_type::f32;
  if (name == "double" || name == "f64") return element_type::f64;
  throw usage_error(fmt::format("unknown type '{}' (expected float or double)", name));
}

std::string to_string(element_type t) { return t == element_type::f32 ? "float" : "double"; }

size_t element_size(element_type t) { return t == element_type::f32 ? 4 : 8; }

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

namespace {

std::vector<field_box> boxes_for(const box& region, int first_field, int field_count) {
  std::vector<field_box> out;
  for (int f = first_field; f < first_field + field_count; ++f) out.push_back({f, region, {}});
  return out;
}

size_t bytes_of(const std::vector<field_box>& boxes, size_t element_bytes) {
  size_t total = 0;
  for (const auto& b : boxes) total += static_cast<size_t>(b.region.volume()) * element_bytes;
  return total;
}

// One direction's part of a message: its box, and the direction the sender
// sends toward (the order of boxes in the message at both ends).
struct message_part {
  ivec3 direction;
  box region;
  int sender_direction;
};

// The message to (or from) `peer` with every part, field by field.
message make_message(int peer, std::vector<message_part> parts, int first_field, int field_count,
                     int field_slot, size_t element_bytes) {
  std::ranges::sort(parts, {}, &message_part::sender_direction);
  message m;
  m.peer = peer;
  m.direction = parts.front().direction;
  m.tag = message_tag(field_slot, direction_of(parts.front().sender_direction));
  for (int f = first_field; f < first_field + field_count; ++f)
    for (const auto& p : parts) m.boxes.push_back({f, p.region, p.direction});
  m.bytes = bytes_of(m.boxes, element_bytes);
  return m;
}

// Appends the messages of one algorithm step for fields [first, first+count).
void add_step(stage& out, const decomposition& d, const std::vector<halo_region>& step,
              int first_field, int field_count, int field_slot, size_t element_bytes) {
  // Lookup of the region whose send feeds a self-copy.
  auto region_toward = [&](const ivec3& direction) -> const halo_region* {
    for (const auto& r : step)
      if (r.direction == direction) return &r;
    return nullptr;
  };
  // Parts by peer, in the order the peers first occur.
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
  for (const auto& region : step) {
    auto peer = d.neighbor(region.direction);
    if (!peer) continue;  // open boundary: the halo keeps its values
    if (*peer == d.rank()) {
      // Our own cells, sent "toward -direction", land in the halo at +direction.
      const halo_region* source = region_toward(opposite(region.direction));
      if (!source || region.recv.empty()) continue;
      local_copy copy;
      copy.direction = region.direction;
      copy.from = boxes_for(source->send, first_field, field_count);
      copy.to = boxes_for(region.recv, first_field, field_count);
      for (auto& b : copy.to) b.direction = region.direction;
      copy.bytes = bytes_of(copy.to, element_bytes);
      out.copies.push_back(std::move(copy));
      continue;
    }
    const size_t slot = slot_of(*peer);
    if (!region.send.empty())
      sends[slot].push_back({region.direction, region.send, direction_index(region.direction)});
    // The peer sent it toward us, i.e. toward -direction from its side.
    if (!region.recv.empty())
      recvs[slot].push_back(
          {region.direction, region.recv, direction_index(opposite(region.direction))});
  }
  for (size_t i = 0; i < peers.size(); ++i) {
    if (!sends[i].empty())
      out.sends.push_back(
          make_message(peers[i], sends[i], first_field, field_count, field_slot, element_bytes));
    if (!recvs[i].empty())
      out.recvs.push_back(
          make_message(peers[i], recvs[i], first_field, field_count, field_slot, element_bytes));
  }
}

}  // namespace

exchange_plan make_plan(const decomposition& d, const local_grid& grid, int nfields,
                        size_t element_bytes, algorithm alg, field_mode mode,
                        int fields_per_message, int cache_block) {
  if (nfields < 1) throw usage_error(fmt::format("number of fields must be at least 1, got {}", nfields));
  if (fields_per_message < 0)
    throw usage_error(fmt::format("fields per message must not be negative, got {}", fields_per_message));
  validate_grid(grid);
  exchange_plan plan;
  plan.grid = grid;
  plan.nfields = nfields;
  plan.element_bytes = element_bytes;
  plan.alg = alg;
  plan.mode = mode;
  const int cache = cache_block > 0 ? std::min(cache_block, nfields) : nfields;
  plan.fields_per_message = fields_per_message > 0 ? std::min(fields_per_message, nfields)
                            : mode == field_mode::compact  ? nfields
                            : mode == field_mode::sequence ? 1
                                                           : cache;
  plan.fields_per_block = std::min(plan.fields_per_message, cache);
  // Block by block, each block through all steps: a block's halo is still in
  // cache when the next step sends it on. A message of fields_per_message
  // fields is the blocks of its fields, one after another.
  auto steps = halo_regions(grid, alg);
  for (int first = 0, slot = 0; first < nfields; first += plan.fields_per_message)
    for (int block = first; block < std::min(first + plan.fields_per_message, nfields);
         block += plan.fields_per_block, ++slot) {
      const int count =
          std::min({plan.fields_per_block, nfields - block, first + plan.fields_per_message - block});
      for (const auto& step : steps) {
        stage s;
        add_step(s, d, step, block, count, slot, element_bytes);
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

int cache_sized_block(const decomposition& d, const local_grid& grid, int nfields,
                      size_t element_bytes, algorithm alg, size_t cache_bytes) {
  if (cache_bytes == 0) return nfields;
  exchange_plan one = make_plan(d, grid, 1, element_bytes, alg, field_mode::sequence);
  size_t per_field = 1;
  for (const auto& st : one.stages) {
    size_t bytes = 0;
    auto add = [&](const std::vector<field_box>& boxes) {
      for (const auto& fb : boxes) bytes += touched_bytes(fb, grid, element_bytes);
    };
    for (const auto& m : st.sends) add(m.boxes);
    for (const auto& m : st.recvs) add(m.boxes);
    for (const auto& c : st.copies) {
      add(c.from);
      add(c.to);
    }
    per_field = std::max(per_field, bytes);
  }
  return static_cast<int>(
      std::clamp<size_t>(cache_bytes / 4 / per_field, 1, static_cast<size_t>(nfields)));
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
