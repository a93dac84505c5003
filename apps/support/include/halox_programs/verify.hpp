// Cell-exact verification: every interior cell holds a value that names its
// global cell, its field and an epoch; every halo cell must then hold the
// value of the global cell it mirrors (periodic wrap), or keep the sentinel
// where no neighbour fills it (open boundary; edges/corners for `faces`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "halox/decomposition.hpp"
#include "halox/grid.hpp"
#include "halox/extend/plan.hpp"

namespace halox {

// An integer exactly representable in T (23 / 52 bits), from a 64-bit hash of
// (global cell, field, epoch): any misplaced region shows up.
template <class T>
T cell_value(const ivec3& global_cell, int field, int epoch);

template <class T>
constexpr T halo_sentinel() {
  return T(-1);
}

struct verify_context {
  local_grid grid;
  subdomain domain;               // where this rank's interior sits globally
  std::array<bool, 3> periodic{true, true, true};
  algorithm alg = algorithm::standard;
};

// Sets every interior cell to cell_value(.., epoch) and every halo cell to the sentinel.
template <class T>
void fill_fields(const std::vector<T*>& fields, const verify_context& ctx, int epoch);

struct mismatch {
  int field = 0;
  ivec3 local{0, 0, 0};
  ivec3 global{0, 0, 0};
  double expected = 0, found = 0;
};
std::string describe(const mismatch& m);

// Checks every allocated cell (interior unchanged, halos as described above).
// Returns at most max_reported mismatches; *total gets the full count.
template <class T>
std::vector<mismatch> check_fields(const std::vector<T*>& fields, const verify_context& ctx,
                                   int epoch, size_t max_reported, size_t* total);

}  // namespace halox
