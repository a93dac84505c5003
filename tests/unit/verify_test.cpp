#include <gtest/gtest.h>

#include <vector>

#include "halox/exchange.hpp"
#include "halox_programs/verify.hpp"

using namespace halox;

namespace {

struct one_rank_setup {
  decomposition d = make_cart_decomposition(MPI_COMM_SELF, {1, 1, 1}, {true, true, true}, false);
  local_grid g{{5, 4, 3}, halo_widths::uniform(1)};
  std::vector<std::vector<double>> storage{2, std::vector<double>(g.points())};
  std::vector<double*> fields{storage[0].data(), storage[1].data()};
  verify_context ctx{g, subdomain{{0, 0, 0}, {5, 4, 3}, {5, 4, 3}}, {true, true, true},
                     algorithm::standard};
};

TEST(Verify, ValuesAreExactAndDistinguishFieldsAndNeighbours) {
  EXPECT_NE(cell_value<double>({1, 2, 3}, 0, 0), cell_value<double>({1, 2, 3}, 1, 0));
  EXPECT_NE(cell_value<double>({1, 2, 3}, 0, 0), cell_value<double>({2, 2, 3}, 0, 0));
  EXPECT_NE(cell_value<float>({1, 2, 3}, 0, 0), cell_value<float>({1, 3, 3}, 0, 0));
  EXPECT_NE(cell_value<float>({1, 2, 3}, 0, 0), cell_value<float>({1, 2, 3}, 0, 1));
  float f = cell_value<float>({7, 8, 9}, 3, 1);
  EXPECT_EQ(f, static_cast<float>(static_cast<long>(f)));
  EXPECT_GE(f, 0.0f);
}

TEST(Verify, UnexchangedHalosFail) {
  one_rank_setup s;
  fill_fields(s.fields, s.ctx, 0);
  size_t total = 0;
  auto bad = check_fields(s.fields, s.ctx, 0, 5, &total);
  EXPECT_EQ(total, (7u * 6u * 5u - 60u) * 2u);
  EXPECT_EQ(bad.size(), 5u);
}

TEST(Verify, ExchangedHalosPassAndOneWrongCellFails) {
  one_rank_setup s;
  fill_fields(s.fields, s.ctx, 0);
  halo_exchange ex(s.d, s.g, std::span<double* const>(s.fields));
  ex.exchange();
  size_t total = 1;
  check_fields(s.fields, s.ctx, 0, 5, &total);
  EXPECT_EQ(total, 0u);
  s.fields[1][s.g.index(-1, 2, 3)] += 1;  // one corner-adjacent halo cell
  auto bad = check_fields(s.fields, s.ctx, 0, 5, &total);
  ASSERT_EQ(total, 1u);
  EXPECT_EQ(bad[0].field, 1);
  EXPECT_EQ(bad[0].local, (ivec3{-1, 2, 3}));
}

TEST(Verify, SwappedFieldsAndStaleEpochsFail) {
  one_rank_setup s;
  fill_fields(s.fields, s.ctx, 0);
  halo_exchange ex(s.d, s.g, std::span<double* const>(s.fields));
  ex.exchange();
  size_t total = 0;
  check_fields(s.fields, s.ctx, 1, 1, &total);  // wrong epoch
  EXPECT_GT(total, 0u);
  std::swap(s.fields[0], s.fields[1]);
  check_fields(s.fields, s.ctx, 0, 1, &total);
  EXPECT_GT(total, 0u);
}

TEST(Verify, FacesLeavesEdgesAndCornersAtTheSentinel) {
  one_rank_setup s;
  s.ctx.alg = algorithm::faces;
  fill_fields(s.fields, s.ctx, 0);
  halo_exchange ex(s.d, s.g, std::span<double* const>(s.fields), {algorithm::faces});
  ex.exchange();
  size_t total = 1;
  check_fields(s.fields, s.ctx, 0, 5, &total);
  EXPECT_EQ(total, 0u);
  EXPECT_EQ(s.fields[0][s.g.index(-1, -1, 0)], halo_sentinel<double>());
}

}  // namespace
