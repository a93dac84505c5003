#include "halox/extend/pack.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "pack/walk_rules.hpp"

using namespace halox;

namespace {

// The reference algorithm of pack.hpp, cell by cell.
template <class T>
std::vector<T> reference_pack(const std::vector<field_box>& boxes, const std::vector<T*>& fields,
                              const local_grid& g) {
  std::vector<T> out;
  for (const auto& fb : boxes)
    for (int z = fb.region.lo[2]; z < fb.region.hi[2]; ++z)
      for (int y = fb.region.lo[1]; y < fb.region.hi[1]; ++y)
        for (int x = fb.region.lo[0]; x < fb.region.hi[0]; ++x)
          out.push_back(fields[static_cast<size_t>(fb.field)][g.index(x, y, z)]);
  return out;
}

template <class T>
void check_round_trip(const local_grid& g, int nfields) {
  std::vector<std::vector<T>> storage(static_cast<size_t>(nfields), std::vector<T>(g.points()));
  std::vector<T*> fields;
  std::vector<std::byte*> bytes;
  for (int f = 0; f < nfields; ++f) {
    std::iota(storage[static_cast<size_t>(f)].begin(), storage[static_cast<size_t>(f)].end(),
              static_cast<T>(f * 100000));
    fields.push_back(storage[static_cast<size_t>(f)].data());
    bytes.push_back(reinterpret_cast<std::byte*>(fields.back()));
  }
  for (auto a : {algorithm::standard, algorithm::staged})
    for (const auto& step : halo_regions(g, a))
      for (const auto& r : step) {
        std::vector<field_box> boxes;
        for (int f = nfields - 1; f >= 0; --f) boxes.push_back({f, r.send});
        auto expected = reference_pack(boxes, fields, g);
        std::vector<T> buffer(expected.size());
        size_t written =
            pack(reinterpret_cast<std::byte*>(buffer.data()), boxes, bytes.data(), g, sizeof(T));
        ASSERT_EQ(written, expected.size() * sizeof(T));
        ASSERT_EQ(buffer, expected) << "pack " << to_string(r.send);
        // Unpack into the receive box, then the receive box packs to the same bytes.
        std::vector<field_box> targets;
        for (int f = nfields - 1; f >= 0; --f) targets.push_back({f, r.recv});
        if (r.recv.volume() != r.send.volume()) continue;
        unpack(reinterpret_cast<std::byte*>(buffer.data()), targets, bytes.data(), g, sizeof(T));
        ASSERT_EQ(reference_pack(targets, fields, g), expected) << "unpack " << to_string(r.recv);
      }
}

TEST(Pack, MatchesTheReferenceForEveryRegionDouble) {
  for (int h : {1, 2, 3, 5, 8, 9})
    check_round_trip<double>(local_grid({9, 10, 11}, halo_widths::uniform(h)), 3);
}

TEST(Pack, MatchesTheReferenceForEveryRegionFloat) {
  for (int h : {1, 3, 4, 7, 16, 17})
    check_round_trip<float>(local_grid({17, 18, 19}, halo_widths::uniform(h)), 2);
}

TEST(Pack, AsymmetricHalos) {
  check_round_trip<double>(local_grid({6, 7, 5}, {{0, 2, 1}, {3, 0, 2}}), 2);
}

TEST(Pack, CopyBoxesEqualsPackThenUnpack) {
  local_grid g({8, 6, 5}, halo_widths::uniform(2));
  std::vector<double> a(g.points()), b(g.points());
  std::iota(a.begin(), a.end(), 1.0);
  b = a;
  std::byte* fa[1] = {reinterpret_cast<std::byte*>(a.data())};
  std::byte* fb[1] = {reinterpret_cast<std::byte*>(b.data())};
  const auto regions = halo_regions(g, algorithm::standard).front();
  for (const auto& r : regions) {
    std::vector<field_box> from{{0, r.send}};
    // Fill the halo on the opposite side, as a self-neighbour does.
    box to = r.recv;
    for (const auto& o : regions)
      if (o.direction == opposite(r.direction)) to = o.recv;
    std::vector<field_box> into{{0, to}};
    copy_boxes(from, into, fa, g, sizeof(double));
    std::vector<std::byte> buffer(static_cast<size_t>(r.send.volume()) * sizeof(double));
    pack(buffer.data(), from, fb, g, sizeof(double));
    unpack(buffer.data(), into, fb, g, sizeof(double));
  }
  EXPECT_EQ(a, b);
}

// Copies of one shape walk their rows together (up to four at a time) and
// still move every cell where it belongs: the x faces, edges and corners of
// a field (pairs of one shape) into one field, and each of them into five
// fields in a row (a group of four and one of one).
TEST(Pack, CopiesWalkingTogetherEqualTheReference) {
  local_grid g({9, 7, 6}, halo_widths::uniform(2));
  std::vector<double> source(g.points());
  std::iota(source.begin(), source.end(), 1.0);
  const auto* from = reinterpret_cast<const std::byte*>(source.data());
  constexpr size_t targets = 5;
  std::vector<std::vector<double>> got(targets + 1, std::vector<double>(g.points(), -1.0));
  std::vector<double> expected(g.points(), -1.0);
  copy_list list;
  size_t copies = 0;
  const auto regions = halo_regions(g, algorithm::standard).front();
  for (const auto& r : regions) {
    if (r.direction[0] == 0) continue;
    list.add(field_copy(from, g, r.send, reinterpret_cast<std::byte*>(got[targets].data()), g,
                        r.send, sizeof(double)));
    for (size_t t = 0; t < targets; ++t)
      list.add(field_copy(from, g, r.send, reinterpret_cast<std::byte*>(got[t].data()), g, r.send,
                          sizeof(double)));
    for (int z = r.send.lo[2]; z < r.send.hi[2]; ++z)
      for (int y = r.send.lo[1]; y < r.send.hi[1]; ++y)
        for (int x = r.send.lo[0]; x < r.send.hi[0]; ++x)
          expected[g.index(x, y, z)] = source[g.index(x, y, z)];
    ++copies;
  }
  ASSERT_EQ(copies, 18u);
  list.run();
  for (const auto& field : got) EXPECT_EQ(field, expected);
}

// Packs go box after box (copy_list::add); the buffer holds every box in
// order, cell by cell as the reference loop packs them (the x faces, edges
// and corners of a field, runs of 8 to 40 bytes).
TEST(Pack, PacksGoBoxAfterBoxAndEqualTheReference) {
  for (int h : {1, 2, 5}) {
    local_grid g({11, 7, 6}, halo_widths::uniform(h));
    std::vector<double> source(g.points());
    std::iota(source.begin(), source.end(), 1.0);
    std::vector<double> expected;
    std::vector<field_box> boxes;
    const auto regions = halo_regions(g, algorithm::standard).front();
    for (const auto& r : regions) {
      if (r.direction[0] == 0) continue;
      for (int z = r.send.lo[2]; z < r.send.hi[2]; ++z)
        for (int y = r.send.lo[1]; y < r.send.hi[1]; ++y)
          for (int x = r.send.lo[0]; x < r.send.hi[0]; ++x)
            expected.push_back(source[g.index(x, y, z)]);
      boxes.push_back({0, r.send});
    }
    std::vector<double> got(expected.size(), -1.0);
    std::byte* const fields[] = {reinterpret_cast<std::byte*>(source.data())};
    copy_list packs;
    add_pack(packs, reinterpret_cast<std::byte*>(got.data()), boxes, fields, g, sizeof(double));
    packs.run();
    EXPECT_EQ(got, expected) << "halo " << h;
    EXPECT_EQ(packs.walks(), boxes.size()) << "halo " << h;
  }
}

// Fetching ahead is offered for strided runs of 16..256 bytes only, and a
// list that fetches ahead (pack, unpack, field to field, groups of one and
// of several, runs that end at the last row of the allocation) moves the
// same bytes as one that does not.
TEST(Pack, FetchingAheadMovesTheSameBytes) {
  for (int h : {1, 2, 5, 9, 33}) {
    local_grid g({40, 9, 7}, halo_widths::uniform(h));
    std::vector<double> source(g.points());
    std::iota(source.begin(), source.end(), 1.0);
    const auto* from = reinterpret_cast<const std::byte*>(source.data());
    const auto regions = halo_regions(g, algorithm::standard).front();
    std::vector<double> plain(g.points(), -1.0), fetched(g.points(), -1.0);
    std::vector<double> plain_buffer(g.points(), -1.0), fetched_buffer(g.points(), -1.0);
    auto fill = [&](std::vector<double>& field, std::vector<double>& buffer, bool fetch_ahead) {
      copy_list copies, packs;
      size_t offset = 0;
      for (const auto& r : regions) {
        // each x face into the opposite halo, as a periodic dimension of one rank does
        box to = r.recv;
        for (const auto& o : regions)
          if (o.direction == opposite(r.direction)) to = o.recv;
        copies.add(field_copy(from, g, r.send, reinterpret_cast<std::byte*>(field.data()), g, to,
                              sizeof(double)));
        packs.add(pack_copy(from, g, r.send, sizeof(double),
                            reinterpret_cast<std::byte*>(buffer.data()) + offset));
        offset += static_cast<size_t>(r.send.volume()) * sizeof(double);
      }
      const size_t run = static_cast<size_t>(h) * sizeof(double);
      const bool offered =
          run >= walk_rules::fetched_runs.first && run <= walk_rules::fetched_runs.second;
      EXPECT_EQ(copies.can_fetch_ahead(), offered) << "halo " << h;
      EXPECT_EQ(packs.can_fetch_ahead(), offered) << "halo " << h;
      copies.fetch_ahead(fetch_ahead);
      packs.fetch_ahead(fetch_ahead);
      EXPECT_EQ(copies.fetches_ahead(), fetch_ahead);
      copies.run();
      packs.run();
    };
    fill(plain, plain_buffer, false);
    fill(fetched, fetched_buffer, true);
    EXPECT_EQ(fetched, plain) << "halo " << h;
    EXPECT_EQ(fetched_buffer, plain_buffer) << "halo " << h;
    EXPECT_NE(std::count(plain.begin(), plain.end(), -1.0), static_cast<long>(plain.size()));
    // Contiguous copies are never offered.
    copy_list whole;
    const box planes{{-h, -h, 0}, {40 + h, 9 + h, 2}};
    whole.add(field_copy(from, g, planes, reinterpret_cast<std::byte*>(plain.data()), g, planes,
                         sizeof(double)));
    EXPECT_FALSE(whole.can_fetch_ahead());
  }
}

// fetched_span is the extent of the strided end that would be fetched ahead
// (what the transports compare with the L2 cache): an x face's source spans
// its field's planes and rows; its contiguous buffer end, a y face's long runs
// and an empty list none.
TEST(Pack, FetchedSpanIsTheExtentOfTheFetchedEnd) {
  local_grid g({40, 9, 7}, halo_widths::uniform(1));  // allocated 42 x 11 x 9
  std::vector<double> field(g.points()), buffer(g.points());
  auto* f = reinterpret_cast<std::byte*>(field.data());
  auto* b = reinterpret_cast<std::byte*>(buffer.data());
  const size_t row = 42 * sizeof(double), plane = 11 * row;
  copy_list x_face;
  x_face.add(pack_copy(f, g, box{{0, 0, 0}, {1, 9, 7}}, sizeof(double), b));
  EXPECT_EQ(x_face.fetched_span(), 6 * plane + 8 * row + sizeof(double));
  copy_list y_face;  // runs of 320 bytes: beyond walk_rules::fetched_runs
  y_face.add(pack_copy(f, g, box{{0, 0, 0}, {40, 1, 7}}, sizeof(double), b));
  EXPECT_EQ(y_face.fetched_span(), 0u);
  EXPECT_FALSE(y_face.can_fetch_ahead());
  EXPECT_EQ(copy_list{}.fetched_span(), 0u);
}

// Runs of up to 16 bytes landed into strided rows are read before they are
// written, eight rows at a time, fetching ahead or not (pack.cpp): with 1 to
// 4 copies walking together and row counts on both sides of the block, every
// cell lands where the reference puts it and nothing else is written; longer
// runs (the other walks) the same.
template <class T>
void check_landed_runs(int width, bool fetch_ahead) {
  for (int rows : {1, 7, 8, 9, 16, 23}) {
    local_grid g({5, rows, 3}, halo_widths::uniform(width));
    const box face{{-width, 0, 0}, {0, rows, 3}};  // the -x halo
    for (size_t copies = 1; copies <= 4; ++copies) {
      std::vector<std::vector<T>> fields(copies, std::vector<T>(g.points(), T(-1)));
      std::vector<T> buffer(copies * static_cast<size_t>(face.volume()));
      std::iota(buffer.begin(), buffer.end(), T(1));
      copy_list list;
      for (size_t c = 0; c < copies; ++c)
        list.add(unpack_copy(reinterpret_cast<const std::byte*>(buffer.data()) +
                                 c * static_cast<size_t>(face.volume()) * sizeof(T),
                             reinterpret_cast<std::byte*>(fields[c].data()), g, face, sizeof(T)));
      ASSERT_EQ(list.walks(), 1u) << "the copies walk together";
      list.fetch_ahead(fetch_ahead);
      list.run();
      for (size_t c = 0; c < copies; ++c) {
        std::vector<T> expected(g.points(), T(-1));
        size_t i = c * static_cast<size_t>(face.volume());
        for (int z = 0; z < 3; ++z)
          for (int y = 0; y < rows; ++y)
            for (int x = -width; x < 0; ++x) expected[g.index(x, y, z)] = buffer[i++];
        ASSERT_EQ(fields[c], expected) << "width " << width << ", rows " << rows << ", copy " << c
                                       << " of " << copies << ", fetching ahead " << fetch_ahead;
      }
    }
  }
}

TEST(Pack, LandedShortRunsEqualTheReference) {
  for (bool fetch_ahead : {false, true}) {
    for (int width = 1; width <= 5; ++width) check_landed_runs<float>(width, fetch_ahead);
    for (int width = 1; width <= 3; ++width) check_landed_runs<double>(width, fetch_ahead);
  }
}

// Boxes of whole planes merge into one long run, between two layouts and
// from any first plane.
TEST(Pack, LongRunsEqualTheReference) {
  local_grid g({130, 129, 6}, halo_widths::uniform(1));
  std::vector<float> source(g.points()), got(g.points(), -1.0f);
  std::iota(source.begin(), source.end(), 1.0f);
  for (int first_plane : {0, 1, 2}) {
    std::fill(got.begin(), got.end(), -1.0f);
    const box planes{{-1, -1, first_plane}, {131, 130, first_plane + 3}};  // 3 whole planes
    copy_list list;
    list.add(field_copy(reinterpret_cast<const std::byte*>(source.data()), g, planes,
                        reinterpret_cast<std::byte*>(got.data()), g, planes, sizeof(float)));
    list.run();
    ASSERT_GE(list.bytes(), size_t{64} << 10);
    for (int z = -1; z < 7; ++z)
      for (int y = -1; y < 130; ++y)
        for (int x = -1; x < 131; ++x) {
          const size_t i = g.index(x, y, z);
          ASSERT_EQ(got[i], planes.contains({x, y, z}) ? source[i] : -1.0f)
              << x << "," << y << "," << z << " planes from " << first_plane;
        }
  }
}

}  // namespace
