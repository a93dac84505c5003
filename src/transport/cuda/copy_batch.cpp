#include "transport/cuda/copy_batch.hpp"

#include <algorithm>
#include <cstring>

namespace halox::device {

namespace {
size_t aligned(size_t n) {
  return (n + message_alignment - 1) / message_alignment * message_alignment;
}
}  // namespace

void copy_batch::add(const box_copy& c) {
  if (c.bytes() == 0) return;
  copies_.push_back(c);
  bytes_ += c.bytes();
}

uint64_t copy_batch::unit_bytes(const box_copy& c) {
  uint64_t bits = 16;
  for (uint64_t v :
       {reinterpret_cast<uint64_t>(c.from), reinterpret_cast<uint64_t>(c.to), uint64_t{c.run},
        c.rows > 1 ? uint64_t{c.from_row} : 0, c.rows > 1 ? uint64_t{c.to_row} : 0,
        c.planes > 1 ? uint64_t{c.from_plane} : 0, c.planes > 1 ? uint64_t{c.to_plane} : 0})
    bits |= v;
  return bits & (~bits + 1);  // the lowest set bit: at most 16
}

uint64_t copy_batch::unit_bytes() const {
  uint64_t narrowest = 16;
  for (const auto& c : copies_) narrowest = std::min(narrowest, unit_bytes(c));
  return narrowest;
}

std::vector<box_record> copy_batch::records() const {
  std::vector<box_record> out;
  out.reserve(copies_.size());
  uint64_t block = 0;
  for (const auto& c : copies_) {
    const uint64_t unit = unit_bytes(c);
    box_record r;
    r.unit_bytes = static_cast<uint32_t>(unit);
    r.from = reinterpret_cast<uint64_t>(c.from);
    r.to = reinterpret_cast<uint64_t>(c.to);
    // A single run or plane has no stride to follow: 0 keeps the unit wide.
    r.from_row = c.rows > 1 ? c.from_row : 0;
    r.to_row = c.rows > 1 ? c.to_row : 0;
    r.from_plane = c.planes > 1 ? c.from_plane : 0;
    r.to_plane = c.planes > 1 ? c.to_plane : 0;
    r.units_per_run = c.run / unit;
    r.rows = static_cast<uint32_t>(c.rows);
    r.planes = static_cast<uint32_t>(c.planes);
    r.units = r.units_per_run * r.rows * r.planes;
    r.first_block = block;
    block += (r.units + units_per_block - 1) / units_per_block;
    out.push_back(r);
  }
  return out;
}

uint64_t copy_batch::most_units() const {
  uint64_t most = 0;
  for (const auto& r : records()) most = std::max(most, r.units);
  return most;
}

uint64_t copy_batch::blocks() const {
  const auto all = records();
  return all.empty()
             ? 0
             : all.back().first_block + (all.back().units + units_per_block - 1) / units_per_block;
}

// The kernel's walk, block by block and thread by thread.
void copy_batch::run_on_host() const {
  const auto all = records();
  const uint64_t launch_blocks = blocks();
  for (uint64_t block = 0; block < launch_blocks; ++block) {
    const box_record& r =
        all[record_of_block(all.data(), static_cast<uint32_t>(all.size()), block)];
    for (uint32_t k = 0; k < units_per_thread; ++k)
      for (uint32_t thread = 0; thread < threads_per_block; ++thread) {
        const uint64_t i = unit_of(r, block, thread, k);
        if (i >= r.units) continue;
        uint64_t from = 0, to = 0;
        unit_offsets(r, i, from, to);
        std::memcpy(reinterpret_cast<std::byte*>(r.to + to),
                    reinterpret_cast<const std::byte*>(r.from + from), r.unit_bytes);
      }
  }
}

stage_layout layout_of(const stage& s) {
  stage_layout l;
  size_t cursor = 0;
  for (const auto& m : s.sends) {
    l.send_offsets.push_back(cursor);
    cursor += aligned(m.bytes);
  }
  l.send_bytes = cursor;
  l.recv_start = cursor;
  for (const auto& m : s.recvs) {
    l.recv_offsets.push_back(cursor);
    cursor += aligned(m.bytes);
  }
  l.recv_bytes = cursor - l.recv_start;
  return l;
}

copy_batch pack_batch(const stage& s, const stage_layout& layout, std::byte* area,
                      std::byte* const* fields, const exchange_plan& plan) {
  copy_batch batch;
  for (size_t m = 0; m < s.sends.size(); ++m) {
    std::byte* cursor = area + layout.send_offsets[m];
    for (const auto& fb : s.sends[m].boxes) {
      const box_copy c = pack_copy(fields[fb.field], plan.grid_of(fb.field), fb.region,
                                   plan.element_bytes_of(fb.field), cursor);
      batch.add(c);
      cursor += c.bytes();
    }
  }
  return batch;
}

copy_batch unpack_batch(const stage& s, const stage_layout& layout, const std::byte* area,
                        std::byte* const* fields, const exchange_plan& plan) {
  copy_batch batch;
  for (size_t m = 0; m < s.recvs.size(); ++m) {
    const std::byte* cursor = area + layout.recv_offsets[m];
    for (const auto& fb : s.recvs[m].boxes) {
      const box_copy c = unpack_copy(cursor, fields[fb.field], plan.grid_of(fb.field), fb.region,
                                     plan.element_bytes_of(fb.field));
      batch.add(c);
      cursor += c.bytes();
    }
  }
  return batch;
}

copy_batch local_copy_batch(const stage& s, std::byte* const* fields, const exchange_plan& plan) {
  copy_batch batch;
  for (const auto& c : s.copies)
    for (size_t i = 0; i < c.from.size(); ++i)
      batch.add(field_copy(fields[c.from[i].field], plan.grid_of(c.from[i].field),
                           c.from[i].region, fields[c.to[i].field], plan.grid_of(c.to[i].field),
                           c.to[i].region, plan.element_bytes_of(c.to[i].field)));
  return batch;
}

}  // namespace halox::device
