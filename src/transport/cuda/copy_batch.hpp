// The copies of one kernel launch (a stage's packs, its unpacks, its local
// copies, or cuda-ipc's reads from the neighbours' fields), built once on the
// host from pack.hpp's box copies and run many times. Building needs no GPU:
// the addresses are only added to, never read.
//
// A stage of device memory moves through a message area laid out as
// stage_layout says: all its send messages first, then all its receives, each
// message at an offset aligned to 256 bytes, so that the sends leave, and the
// receives arrive, in one contiguous copy each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/cuda/box_records.hpp"
#include "halox/extend/pack.hpp"
#include "halox/extend/plan.hpp"

namespace halox::device {

class copy_batch {
 public:
  void add(const box_copy& c);  // copies of no bytes are left out
  bool empty() const { return copies_.empty(); }
  size_t size() const { return copies_.size(); }
  size_t bytes() const { return bytes_; }
  // The widest unit (16, 8, 4, 2 or 1 bytes) that divides every run, stride
  // and address of one copy, and the narrowest of those over the batch.
  static uint64_t unit_bytes(const box_copy& c);
  uint64_t unit_bytes() const;
  // The records as the kernel reads them, each counted in its own copy's
  // units, with the blocks of a launch assigned (box_records.hpp).
  std::vector<box_record> records() const;
  uint64_t most_units() const;  // of one record
  uint64_t blocks() const;      // of the launch
  // The kernel's arithmetic on the host, for memory the CPU can address.
  void run_on_host() const;

 private:
  std::vector<box_copy> copies_;
  size_t bytes_ = 0;
};

inline constexpr size_t message_alignment = 256;

struct stage_layout {
  std::vector<size_t> send_offsets, recv_offsets;  // from the start of the area
  size_t send_bytes = 0;                           // the sends' part, from offset 0
  size_t recv_start = 0, recv_bytes = 0;           // the receives' part
  size_t total() const { return recv_start + recv_bytes; }
};
stage_layout layout_of(const stage& s);

// The packs of a stage's sends into `area` (laid out as `layout`), the
// unpacks of its receives out of it, and its local copies.
// Each field is laid out as the plan says.
copy_batch pack_batch(const stage& s, const stage_layout& layout, std::byte* area,
                      std::byte* const* fields, const exchange_plan& plan);
copy_batch unpack_batch(const stage& s, const stage_layout& layout, const std::byte* area,
                        std::byte* const* fields, const exchange_plan& plan);
copy_batch local_copy_batch(const stage& s, std::byte* const* fields, const exchange_plan& plan);

}  // namespace halox::device
