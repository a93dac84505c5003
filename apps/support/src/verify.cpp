#include "halox_programs/verify.hpp"

#include <fmt/core.h>

#include "halox_programs/splitmix64.hpp"

namespace halox {

namespace {

// Where local cell c of the halo takes its value from, or nothing (sentinel).
bool source_cell(const ivec3& local, const verify_context& ctx, ivec3& global) {
  int outside = 0;
  for (int d = 0; d < 3; ++d) {
    int g = ctx.domain.offset[d] + local[d];
    if (local[d] < 0 || local[d] >= ctx.grid.interior[d]) ++outside;
    if (g < 0 || g >= ctx.domain.global[d]) {
      if (!ctx.periodic[d]) return false;
      g = (g % ctx.domain.global[d] + ctx.domain.global[d]) % ctx.domain.global[d];
    }
    global[d] = g;
  }
  // `faces` fills only cells outside the interior in one dimension.
  if (ctx.alg == algorithm::faces && outside > 1) return false;
  return true;
}

}  // namespace

template <class T>
T cell_value(const ivec3& g, int field, int epoch) {
  uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(g[0]));
  key = splitmix64(key ^ (static_cast<uint64_t>(static_cast<uint32_t>(g[1])) << 21));
  key = splitmix64(key ^ (static_cast<uint64_t>(static_cast<uint32_t>(g[2])) << 42));
  key = splitmix64(key ^ (static_cast<uint64_t>(field) << 8) ^ static_cast<uint64_t>(epoch));
  constexpr int bits = std::is_same_v<T, float> ? 23 : 52;
  return static_cast<T>(key >> (64 - bits));
}

template <class T>
void fill_fields(const std::vector<T*>& fields, const verify_context& ctx, int epoch) {
  const box all = ctx.grid.allocated_box();
  for (size_t f = 0; f < fields.size(); ++f) {
    T* data = fields[f];
    for (int z = all.lo[2]; z < all.hi[2]; ++z)
      for (int y = all.lo[1]; y < all.hi[1]; ++y)
        for (int x = all.lo[0]; x < all.hi[0]; ++x) {
          ivec3 local{x, y, z};
          bool interior = ctx.grid.interior_box().contains(local);
          ivec3 g{ctx.domain.offset[0] + x, ctx.domain.offset[1] + y, ctx.domain.offset[2] + z};
          data[ctx.grid.index(x, y, z)] =
              interior ? cell_value<T>(g, static_cast<int>(f), epoch) : halo_sentinel<T>();
        }
  }
}

template <class T>
std::vector<mismatch> check_fields(const std::vector<T*>& fields, const verify_context& ctx,
                                   int epoch, size_t max_reported, size_t* total) {
  std::vector<mismatch> found;
  size_t count = 0;
  const box all = ctx.grid.allocated_box();
  for (size_t f = 0; f < fields.size(); ++f) {
    const T* data = fields[f];
    for (int z = all.lo[2]; z < all.hi[2]; ++z)
      for (int y = all.lo[1]; y < all.hi[1]; ++y)
        for (int x = all.lo[0]; x < all.hi[0]; ++x) {
          ivec3 local{x, y, z}, global{0, 0, 0};
          T expected = source_cell(local, ctx, global)
                           ? cell_value<T>(global, static_cast<int>(f), epoch)
                           : halo_sentinel<T>();
          T value = data[ctx.grid.index(x, y, z)];
          if (value != expected) {
            if (found.size() < max_reported)
              found.push_back({static_cast<int>(f), local,
                               {ctx.domain.offset[0] + x, ctx.domain.offset[1] + y,
                                ctx.domain.offset[2] + z},
                               static_cast<double>(expected), static_cast<double>(value)});
            ++count;
          }
        }
  }
  if (total) *total = count;
  return found;
}

std::string describe(const mismatch& m) {
  return fmt::format("field {} local cell ({},{},{}) (global {},{},{}): expected {}, found {}",
                     m.field, m.local[0], m.local[1], m.local[2], m.global[0], m.global[1],
                     m.global[2], m.expected, m.found);
}

template float cell_value<float>(const ivec3&, int, int);
template double cell_value<double>(const ivec3&, int, int);
template void fill_fields<float>(const std::vector<float*>&, const verify_context&, int);
template void fill_fields<double>(const std::vector<double*>&, const verify_context&, int);
template std::vector<mismatch> check_fields<float>(const std::vector<float*>&, const verify_context&,
                                                   int, size_t, size_t*);
template std::vector<mismatch> check_fields<double>(const std::vector<double*>&,
                                                    const verify_context&, int, size_t, size_t*);

}  // namespace halox
