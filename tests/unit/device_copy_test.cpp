// The device box lists and the kernels' index arithmetic, run on the host
// (copy_batch::run_on_host executes box_records.hpp's unit_offsets, the
// function the CUDA kernel calls) against the host kernels of pack.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "transport/cuda/copy_batch.hpp"
#include "halox/decomposition.hpp"
#include "halox/extend/pack.hpp"
#include "cell_fields.hpp"
#include "halox/extend/plan.hpp"

using namespace halox;
using namespace halox::device;
using halox::testing_support::cell_fields;

namespace {

// nfields fields of the grid's size, each cell a distinct byte pattern; `shift`
// bytes past a 64-byte boundary to reach unaligned units.
struct field_storage {
  std::vector<std::vector<std::byte>> storage;
  std::vector<std::byte*> pointers;
  field_storage(const local_grid& g, int nfields, size_t element_bytes, size_t shift, int seed) {
    for (int f = 0; f < nfields; ++f) {
      storage.emplace_back(g.points() * element_bytes + 64 + shift);
      auto base = reinterpret_cast<uintptr_t>(storage.back().data());
      pointers.push_back(reinterpret_cast<std::byte*>((base + 63) / 64 * 64 + shift));
      for (size_t i = 0; i < g.points() * element_bytes; ++i)
        pointers.back()[i] = static_cast<std::byte>(
            (i * 131 + static_cast<size_t>(f) * 17 + static_cast<size_t>(seed)) & 0xff);
    }
  }
  // The fields' bytes (the padding around them differs between allocations).
  bool same_fields(const field_storage& other, size_t bytes) const {
    for (size_t f = 0; f < pointers.size(); ++f)
      if (std::memcmp(pointers[f], other.pointers[f], bytes) != 0) return false;
    return true;
  }
};

// One stage whose messages carry the regions of a step: sends to and receives
// from a peer per direction, every field in each (as the plan lists them).
stage stage_of(const std::vector<halo_region>& step, int nfields, size_t element_bytes) {
  stage s;
  int tag = 0;
  for (const auto& r : step) {
    message send{0, tag, r.direction, {}, 0}, recv{0, tag++, r.direction, {}, 0};
    for (int f = 0; f < nfields; ++f) {
      send.boxes.push_back({f, r.send, r.direction});
      recv.boxes.push_back({f, r.recv, r.direction});
    }
    send.bytes = packed_bytes(send.boxes, element_bytes);
    recv.bytes = packed_bytes(recv.boxes, element_bytes);
    s.sends.push_back(std::move(send));
    s.recvs.push_back(std::move(recv));
  }
  return s;
}

// The fields' layouts as a plan carries them (nothing else set): every field as g.
exchange_plan layouts_as(const local_grid& g, int nfields, size_t element_bytes) {
  exchange_plan plan;
  plan.layouts = testing_support::cell_layouts(g, element_bytes, static_cast<size_t>(nfields));
  return plan;
}

struct shape {
  ivec3 interior;
  halo_widths halo;
};

const shape shapes[] = {
    {{8, 7, 6}, halo_widths::uniform(1)},
    {{9, 8, 10}, halo_widths::uniform(3)},
    {{6, 6, 6}, {{1, 2, 0}, {2, 1, 3}}},
    {{16, 6, 5}, {{5, 5, 5}, {5, 5, 5}}},
};

}  // namespace

TEST(DeviceCopies, PackBatchEqualsHostPack) {
  for (const auto& sh : shapes)
    for (size_t element_bytes : {size_t{4}, size_t{8}})
      for (size_t shift : {size_t{0}, size_t{4}})
        for (auto a : {algorithm::standard, algorithm::staged, algorithm::faces})
          for (const auto& step : halo_regions(local_grid(sh.interior, sh.halo), a)) {
            const local_grid g(sh.interior, sh.halo);
            const int nfields = 3;
            field_storage fields(g, nfields, element_bytes, shift, 1);
            const stage s = stage_of(step, nfields, element_bytes);
            const stage_layout layout = layout_of(s);
            std::vector<std::byte> kernel(layout.total() + 16, std::byte{0x5a}), host = kernel;
            const copy_batch batch =
                pack_batch(s, layout, kernel.data(), fields.pointers.data(),
                           layouts_as(g, nfields, element_bytes));
            batch.run_on_host();
            for (size_t m = 0; m < s.sends.size(); ++m) {
              EXPECT_EQ(layout.send_offsets[m] % message_alignment, 0u);
              const size_t written = pack(host.data() + layout.send_offsets[m], s.sends[m].boxes,
                                          fields.pointers.data(), g, element_bytes);
              EXPECT_EQ(written, s.sends[m].bytes);
            }
            ASSERT_EQ(kernel, host) << "algorithm " << to_string(a) << ", " << element_bytes
                                    << "-byte elements, shift " << shift;
            size_t sent = 0;
            for (const auto& m : s.sends) sent += m.bytes;
            EXPECT_EQ(batch.bytes(), sent);
            EXPECT_LE(sent, layout.send_bytes);
            EXPECT_EQ(batch.unit_bytes() % (shift ? 4 : element_bytes), 0u);
          }
}

TEST(DeviceCopies, UnpackBatchEqualsHostUnpack) {
  for (const auto& sh : shapes)
    for (size_t element_bytes : {size_t{4}, size_t{8}})
      for (auto a : {algorithm::standard, algorithm::staged})
        for (const auto& step : halo_regions(local_grid(sh.interior, sh.halo), a)) {
          const local_grid g(sh.interior, sh.halo);
          const int nfields = 2;
          field_storage kernel(g, nfields, element_bytes, 0, 2),
              host(g, nfields, element_bytes, 0, 2);
          const stage s = stage_of(step, nfields, element_bytes);
          const stage_layout layout = layout_of(s);
          std::vector<std::byte> area(layout.total());
          for (size_t i = 0; i < area.size(); ++i)
            area[i] = static_cast<std::byte>((i * 7 + 3) & 0xff);
          unpack_batch(s, layout, area.data(), kernel.pointers.data(),
                       layouts_as(g, nfields, element_bytes))
              .run_on_host();
          for (size_t m = 0; m < s.recvs.size(); ++m)
            unpack(area.data() + layout.recv_offsets[m], s.recvs[m].boxes, host.pointers.data(), g,
                   element_bytes);
          ASSERT_TRUE(kernel.same_fields(host, g.points() * element_bytes))
              << "algorithm " << to_string(a) << ", " << element_bytes << "-byte elements";
          // The receives start where the sends end, each message aligned.
          EXPECT_EQ(layout.recv_start, layout.send_bytes);
          for (size_t off : layout.recv_offsets) EXPECT_EQ(off % message_alignment, 0u);
        }
}

// A dimension of one rank with periodic wrap: the plan's local copies, as the
// device runs them, equal copy_boxes on the host, stage by stage.
TEST(DeviceCopies, LocalCopyBatchesOfThePlanEqualHostCopies) {
  auto d = make_cart_decomposition(MPI_COMM_SELF, {1, 1, 1}, {true, true, true}, false);
  for (const auto& sh : shapes)
    for (size_t element_bytes : {size_t{4}, size_t{8}})
      for (auto a : {algorithm::standard, algorithm::staged, algorithm::faces})
        for (auto grouping : {field_grouping::compact, field_grouping::sequence}) {
          const local_grid g(sh.interior, sh.halo);
          const int nfields = 3;
          const exchange_plan plan =
              make_plan(d, cell_fields(g, nfields, element_bytes, a, grouping));
          field_storage kernel(g, nfields, element_bytes, 0, 3),
              host(g, nfields, element_bytes, 0, 3);
          size_t copied = 0;
          for (const auto& s : plan.stages) {
            const copy_batch batch = local_copy_batch(s, kernel.pointers.data(), plan);
            batch.run_on_host();
            copied += batch.bytes();
            for (const auto& c : s.copies)
              copy_boxes(c.from, c.to, host.pointers.data(), g, element_bytes);
          }
          ASSERT_TRUE(kernel.same_fields(host, g.points() * element_bytes))
              << to_string(a) << " " << to_string(grouping);
          EXPECT_EQ(copied, plan.bytes_copied());
        }
}

TEST(DeviceCopies, UnitIsTheWidestThatDividesEverything) {
  const local_grid g({8, 8, 8}, halo_widths::uniform(1));
  field_storage fields(g, 1, 8, 0, 4);
  std::vector<std::byte> buffer(4096 + 64);
  auto* aligned =
      reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(buffer.data()) + 63) / 64 * 64);
  // A z face of whole planes: one run of 10 x 10 doubles, 16-byte aligned at both ends.
  copy_batch whole;
  whole.add(pack_copy(fields.pointers[0], g, {{-1, -1, 0}, {9, 9, 1}}, 8, aligned));
  EXPECT_EQ(whole.unit_bytes(), 16u);
  ASSERT_EQ(whole.records().size(), 1u);
  EXPECT_EQ(whole.records()[0].units, 10u * 10u * 8u / 16u);
  // An x face of one double per row: 8-byte units.
  copy_batch x_face;
  x_face.add(pack_copy(fields.pointers[0], g, {{0, 0, 0}, {1, 8, 8}}, 8, aligned));
  EXPECT_EQ(x_face.unit_bytes(), 8u);
  EXPECT_EQ(x_face.most_units(), 64u);
  // An x face of one float per row: 4-byte units.
  copy_batch floats;
  floats.add(pack_copy(fields.pointers[0], g, {{0, 0, 0}, {1, 8, 8}}, 4, aligned));
  EXPECT_EQ(floats.unit_bytes(), 4u);
  // A field 2 bytes past alignment: 2-byte units.
  copy_batch odd;
  odd.add(pack_copy(fields.pointers[0] + 2, g, {{0, 0, 0}, {8, 8, 1}}, 8, aligned));
  EXPECT_EQ(odd.unit_bytes(), 2u);
  // In one launch each record keeps its own unit: a narrow x face does not
  // narrow the whole planes beside it.
  copy_batch mixed;
  mixed.add(pack_copy(fields.pointers[0], g, {{-1, -1, 0}, {9, 9, 1}}, 8, aligned));
  mixed.add(pack_copy(fields.pointers[0], g, {{0, 0, 0}, {1, 8, 8}}, 4, aligned + 1024));
  EXPECT_EQ(mixed.unit_bytes(), 4u);
  ASSERT_EQ(mixed.records().size(), 2u);
  EXPECT_EQ(mixed.records()[0].unit_bytes, 16u);
  EXPECT_EQ(mixed.records()[0].units, 10u * 10u * 8u / 16u);
  EXPECT_EQ(mixed.records()[1].unit_bytes, 4u);
  EXPECT_EQ(mixed.records()[1].units, 64u);
  // Copies of nothing are left out.
  copy_batch none;
  none.add(pack_copy(fields.pointers[0], g, {{0, 0, 0}, {0, 8, 8}}, 8, aligned));
  EXPECT_TRUE(none.empty());
}

// Every block of a launch falls in the record whose units it copies, and the
// blocks of a record are as many as its units need.
TEST(DeviceCopies, BlocksOfALaunchCoverEveryRecord) {
  const local_grid g({40, 36, 30}, halo_widths::uniform(5));
  field_storage fields(g, 2, 8, 0, 5);
  const stage s = stage_of(halo_regions(g, algorithm::standard).front(), 2, 8);
  const stage_layout layout = layout_of(s);
  std::vector<std::byte> area(layout.total());
  const copy_batch batch = pack_batch(s, layout, area.data(), fields.pointers.data(), layouts_as(g, 2, 8));
  const auto records = batch.records();
  ASSERT_EQ(records.size(), 26u * 2u);
  uint64_t block = 0;
  for (size_t r = 0; r < records.size(); ++r) {
    EXPECT_EQ(records[r].first_block, block);
    const uint64_t blocks = (records[r].units + units_per_block - 1) / units_per_block;
    for (uint64_t b = block; b < block + blocks; ++b) {
      ASSERT_EQ(record_of_block(records.data(), static_cast<uint32_t>(records.size()), b), r);
      EXPECT_LT(unit_of(records[r], b, 0, 0), records[r].units);
    }
    block += blocks;
  }
  EXPECT_EQ(batch.blocks(), block);
  // The largest record (a z face of whole rows) needs many blocks, a corner one.
  EXPECT_GT(batch.most_units(), units_per_block);
}
