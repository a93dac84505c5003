#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "cell_fields.hpp"
#include "halox/extend/plan.hpp"

using namespace halox;
using halox::testing_support::cell_fields;

namespace {

TEST(Plan, OneRankPeriodicIsAllLocalCopies) {
  auto d = make_cart_decomposition(MPI_COMM_SELF, {1, 1, 1}, {true, true, true}, false);
  local_grid g({4, 4, 4}, halo_widths::uniform(1));
  auto p = make_plan(d, cell_fields(g, 2, 8, algorithm::standard, field_grouping::compact));
  ASSERT_EQ(p.stages.size(), 1u);
  EXPECT_TRUE(p.stages[0].sends.empty());
  EXPECT_TRUE(p.stages[0].recvs.empty());
  EXPECT_EQ(p.stages[0].copies.size(), 26u);
  EXPECT_EQ(p.bytes_copied(), (6u * 6u * 6u - 64u) * 2u * 8u);
}

TEST(Plan, OneRankOpenBoundariesMoveNothing) {
  auto d = make_cart_decomposition(MPI_COMM_SELF, {1, 1, 1}, {false, false, false}, false);
  local_grid g({4, 4, 4}, halo_widths::uniform(2));
  for (auto a : {algorithm::standard, algorithm::staged, algorithm::faces}) {
    auto p = make_plan(d, cell_fields(g, 1, 4, a, field_grouping::sequence));
    EXPECT_EQ(p.bytes_sent() + p.bytes_copied() + p.bytes_received(), 0u);
  }
}

TEST(Plan, SequenceModeHasAStagePerFieldAndStep) {
  auto d = make_cart_decomposition(MPI_COMM_SELF, {1, 1, 1}, {true, false, true}, false);
  local_grid g({4, 5, 6}, halo_widths::uniform(1));
  auto p = make_plan(d, cell_fields(g, 3, 8, algorithm::staged, field_grouping::sequence));
  ASSERT_EQ(p.stages.size(), 9u);
  for (size_t s = 0; s < p.stages.size(); ++s)
    for (const auto& c : p.stages[s].copies)
      for (const auto& fb : c.to) EXPECT_EQ(fb.field, static_cast<int>(s / 3));
  // y is open: the y step has nothing to do.
  EXPECT_TRUE(p.stages[1].copies.empty());
}

// A message of more fields than a cache block travels block by block, each
// block through every step before the next block starts.
TEST(Plan, CompactMessagesMoveInBlocksThroughAllSteps) {
  auto d = make_cart_decomposition(MPI_COMM_SELF, {1, 1, 1}, {true, true, true}, false);
  local_grid g({4, 5, 6}, halo_widths::uniform(1));
  for (int block : {1, 2, 3, 0}) {
    plan_request r = cell_fields(g, 3, 8, algorithm::staged, field_grouping::compact);
    r.fields_per_block = block;
    auto p = make_plan(d, std::move(r));
    const int per_block = block == 0 ? 3 : block;
    EXPECT_EQ(p.fields_per_message, 3);
    EXPECT_EQ(p.fields_per_block, per_block);
    const size_t blocks = (3 + static_cast<size_t>(per_block) - 1) / static_cast<size_t>(per_block);
    ASSERT_EQ(p.stages.size(), 3 * blocks) << "blocks of " << per_block;
    for (size_t s = 0; s < p.stages.size(); ++s) {
      std::set<int> fields;
      for (const auto& c : p.stages[s].copies)
        for (const auto& fb : c.to) fields.insert(fb.field);
      const int first = static_cast<int>(s / 3) * per_block;
      std::set<int> expected;
      for (int f = first; f < std::min(first + per_block, 3); ++f) expected.insert(f);
      EXPECT_EQ(fields, expected) << "stage " << s << ", blocks of " << per_block;
    }
  }
  // cache: messages of a block each, the block sized as asked.
  plan_request cache = cell_fields(g, 5, 8, algorithm::standard, field_grouping::cache);
  cache.fields_per_block = 2;
  auto cached = make_plan(d, std::move(cache));
  EXPECT_EQ(cached.fields_per_message, 2);
  EXPECT_EQ(cached.stages.size(), 3u);
  // sequence is blocks of one, whatever the cache allows.
  plan_request sequence = cell_fields(g, 5, 8, algorithm::standard, field_grouping::sequence);
  sequence.fields_per_block = 4;
  EXPECT_EQ(make_plan(d, std::move(sequence)).stages.size(), 5u);
}

// Blocks are sized by the cache lines the boxes touch, not by the bytes they
// move: across x, a halo 1 cell wide moves 4 bytes of floats per 64-byte line.
TEST(Plan, CacheBlocksCountTheLinesTheBoxesTouch) {
  auto d = make_cart_decomposition(MPI_COMM_SELF, {1, 1, 1}, {true, true, true}, false);
  local_grid g({64, 64, 64}, halo_widths::uniform(1));
  // The x step copies 2 boxes of 64 x 64 one-cell runs: 4 x 4096 lines, 1 MiB per field.
  constexpr size_t mib = 1 << 20;
  const plan_request eight = cell_fields(g, 8, 4, algorithm::staged);
  EXPECT_EQ(cache_sized_block(d, eight, 2 * mib), 1);
  EXPECT_EQ(cache_sized_block(d, eight, 16 * mib), 4);
  EXPECT_EQ(cache_sized_block(d, eight, 64 * mib), 8);
  EXPECT_EQ(cache_sized_block(d, eight, 0), 8);
  // With x and y open only the z step moves anything: 2 x 2 planes of 64 x 64
  // floats (the x and y halos beside open boundaries are not carried), 64
  // rows each of 64-float runs, a run touching (256 - 4) + 64 bytes of lines.
  auto open_xy = make_cart_decomposition(MPI_COMM_SELF, {1, 1, 1}, {false, false, true}, false);
  const size_t z_step = 4 * 64 * (64 * 4 - 4 + 64);
  EXPECT_EQ(cache_sized_block(open_xy, cell_fields(g, 100, 4, algorithm::staged), 4 * z_step * 10),
            10);
}

TEST(Plan, TagsAreDistinctPerFieldSlotAndDirection) {
  std::set<int> tags;
  for (int slot = 0; slot < 4; ++slot)
    for (int i = 0; i < direction_count; ++i) tags.insert(message_tag(slot, direction_of(i)));
  EXPECT_EQ(tags.size(), 4u * direction_count);
}

TEST(Plan, RejectsNoFields) {
  auto d = make_cart_decomposition(MPI_COMM_SELF, {1, 1, 1}, {true, true, true}, false);
  EXPECT_THROW(make_plan(d, cell_fields(local_grid({4, 4, 4}, halo_widths::uniform(1)), 0, 8,
                                        algorithm::standard, field_grouping::compact)),
               std::exception);
}

TEST(Decomposition, OrdersNumberRanksAsNamed) {
  ivec3 dims{2, 3, 4};
  auto xyz = rank_order::parse("XYZ");
  EXPECT_EQ(linear_index({1, 0, 0}, dims, xyz), 1);
  EXPECT_EQ(linear_index({0, 1, 0}, dims, xyz), 2);
  auto zyx = rank_order::parse("zyx");
  EXPECT_EQ(zyx, rank_order::mpi_cart());
  EXPECT_EQ(linear_index({0, 0, 1}, dims, zyx), 1);
  for (const char* name : {"XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"}) {
    auto o = rank_order::parse(name);
    EXPECT_EQ(o.name(), name);
    for (int r = 0; r < 24; ++r) EXPECT_EQ(linear_index(coords_of(r, dims, o), dims, o), r);
  }
  EXPECT_THROW(rank_order::parse("XXY"), std::exception);
  EXPECT_THROW(rank_order::parse("AB"), std::exception);
}

TEST(Decomposition, SplitSpreadsTheRemainder) {
  EXPECT_EQ(split_extent(10, 3, 0), (std::pair<int, int>{0, 4}));
  EXPECT_EQ(split_extent(10, 3, 1), (std::pair<int, int>{4, 3}));
  EXPECT_EQ(split_extent(10, 3, 2), (std::pair<int, int>{7, 3}));
  EXPECT_EQ(split_extent(9, 3, 2), (std::pair<int, int>{6, 3}));
}

TEST(Decomposition, BadGridsAreRejectedBeforeCommunication) {
  EXPECT_THROW(make_cart_decomposition(MPI_COMM_SELF, {2, 1, 1}, {true, true, true}, false),
               std::exception);
  EXPECT_THROW(make_cart_decomposition(MPI_COMM_SELF, {-1, 1, 1}, {true, true, true}, false),
               std::exception);
}

}  // namespace
