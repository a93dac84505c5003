#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "halox/pack.hpp"

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
  std::vector<std::vector<T>> storage(static_cast<size_t>(nfields), std::vector<T>(g.cells()));
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
        size_t written = pack(reinterpret_cast<std::byte*>(buffer.data()), boxes, bytes.data(), g, sizeof(T));
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
  std::vector<double> a(g.cells()), b(g.cells());
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

}  // namespace
