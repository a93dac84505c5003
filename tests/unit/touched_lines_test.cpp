// halox-bench's floor of the lines: the distinct cache lines a plan reads and writes.
#include <gtest/gtest.h>

#include "cell_fields.hpp"
#include "touched_lines.hpp"

using namespace halox;
using halox::testing_support::cell_fields;
using halox::bench::lines_touched;

namespace {

exchange_plan one_rank_plan(const ivec3& interior, const halo_widths& halo, size_t element,
                            const std::array<bool, 3>& periodic, algorithm alg) {
  auto d = make_cart_decomposition(MPI_COMM_SELF, {1, 1, 1}, periodic, false);
  return make_plan(
      d, cell_fields(local_grid(interior, halo), 1, element, alg, field_grouping::sequence));
}

// Rows of 16 floats are one line each: a z halo of one plane per side reads
// two planes of 4 rows and writes two, as many lines as bytes.
TEST(TouchedLines, WholeRowsTouchTheirBytes) {
  const halo_widths z_only{{0, 0, 1}, {0, 0, 1}};
  const auto plan = one_rank_plan({16, 4, 4}, z_only, 4, {false, false, true}, algorithm::standard);
  const auto lines = lines_touched(plan);
  EXPECT_EQ(lines.read_bytes, 2u * 4u * 64u);
  EXPECT_EQ(lines.written_bytes, 2u * 4u * 64u);
  EXPECT_EQ(lines.copy_bytes(), plan.bytes_copied());
}

// A row of 1 + 14 + 1 floats is one line: the x halo's 8 bytes per row read
// and write that one line, 8x the halo's bytes.
TEST(TouchedLines, AnXHaloOfOneFloatTouchesALinePerRow) {
  const halo_widths x_only{{1, 0, 0}, {1, 0, 0}};
  const auto plan = one_rank_plan({14, 3, 2}, x_only, 4, {true, false, false}, algorithm::faces);
  const auto lines = lines_touched(plan);
  EXPECT_EQ(lines.read_bytes, 6u * 64u);
  EXPECT_EQ(lines.written_bytes, 6u * 64u);
  EXPECT_EQ(plan.bytes_copied(), 6u * 2u * 4u);
}

// Per-side widths: a halo below only, 2 doubles wide, in rows of 8 + 2
// doubles (80 bytes): rows start 16 bytes further into a line each time, so
// the written runs of rows 0..3 (bytes 0, 80, 160, 240) lie in lines 0, 1, 2
// and 3 and the read runs (the last 2 doubles: bytes 64, 144, 224, 304) in
// lines 1, 2, 3 and 4.
TEST(TouchedLines, PerSideWidthsCountTheLinesOfEachRow) {
  const halo_widths below{{2, 0, 0}, {0, 0, 0}};
  const auto plan = one_rank_plan({8, 4, 1}, below, 8, {true, false, false}, algorithm::staged);
  const auto lines = lines_touched(plan);
  EXPECT_EQ(lines.written_bytes, 4u * 64u);
  EXPECT_EQ(lines.read_bytes, 4u * 64u);
}

}  // namespace
