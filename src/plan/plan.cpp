#include "halox/plan.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "halox/common/error.hpp"

namespace halox {

field_mode parse_field_mode(const std::string& name) {
  if (name == "compact") return field_mode::compact;
  if (name == "sequence") return field_mode::sequence;
  throw usage_error(fmt::format("unknown field mode '{}' (expected compact or sequence)", name));
}

std::string to_string(field_mode m) { return m == field_mode::compact ? "compact" : "sequence"; }

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
  for (int f = first_field; f < first_field + field_count; ++f) out.push_back({f, region});
  return out;
}

size_t bytes_of(const std::vector<field_box>& boxes, size_t element_bytes) {
  size_t total = 0;
  for (const auto& b : boxes) total += static_cast<size_t>(b.region.volume()) * element_bytes;
  return total;
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
      copy.bytes = bytes_of(copy.to, element_bytes);
      out.copies.push_back(std::move(copy));
      continue;
    }
    if (!region.send.empty()) {
      message m;
      m.peer = *peer;
      m.direction = region.direction;
      m.tag = message_tag(field_slot, region.direction);
      m.boxes = boxes_for(region.send, first_field, field_count);
      m.bytes = bytes_of(m.boxes, element_bytes);
      out.sends.push_back(std::move(m));
    }
    if (!region.recv.empty()) {
      message m;
      m.peer = *peer;
      m.direction = region.direction;
      // The peer sent it toward us, i.e. toward -direction from its side.
      m.tag = message_tag(field_slot, opposite(region.direction));
      m.boxes = boxes_for(region.recv, first_field, field_count);
      m.bytes = bytes_of(m.boxes, element_bytes);
      out.recvs.push_back(std::move(m));
    }
  }
}

}  // namespace

exchange_plan make_plan(const decomposition& d, const local_grid& grid, int nfields,
                        size_t element_bytes, algorithm alg, field_mode mode,
                        int fields_per_message) {
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
  plan.fields_per_message = fields_per_message > 0 ? std::min(fields_per_message, nfields)
                            : mode == field_mode::compact ? nfields
                                                          : 1;
  // Block by block, each block through all steps: a block's halo is still in
  // cache when the next step sends it on.
  auto steps = halo_regions(grid, alg);
  for (int first = 0, slot = 0; first < nfields; first += plan.fields_per_message, ++slot)
    for (const auto& step : steps) {
      stage s;
      add_step(s, d, step, first, std::min(plan.fields_per_message, nfields - first), slot,
               element_bytes);
      plan.stages.push_back(std::move(s));
    }
  return plan;
}

}  // namespace halox
