// Pack/unpack kernels against memcpy of the same bytes, measured side by side.
//
// The face a 64^3 sub-domain sends toward -x, -y or -z with halo width h,
// inside its real field (rows of 64 + 2h elements): the x face is 64 x 64
// runs of h elements at a stride of a row, the y face 64 planes of h runs of
// 64, the z face h whole planes.
// Counters: kernel_GBps (pack or unpack), memcpy_GBps (contiguous copy of the
// same bytes, same buffers) and vs_memcpy = kernel bandwidth / memcpy bandwidth.
//
// self_copy_x: the x step of a periodic dimension of one rank (each field's
// -x and +x faces copied to the opposite halo, one walk over the rows), over
// 1 field (cached) or 8 fields one after another (the 8 fields of halo 5 do
// not fit the cache), against memcpy of the same bytes between buffers of
// the same total size.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "halox/extend/pack.hpp"

namespace {

using namespace halox;

// Times `kernel` and `copy` (a memcpy of the same bytes) one after the other
// in every iteration, and reports both bandwidths and their ratio.
template <class Kernel, class Copy>
void time_against_memcpy(benchmark::State& state, size_t bytes, Kernel kernel, Copy copy) {
  using clock = std::chrono::steady_clock;
  double kernel_seconds = 0, memcpy_seconds = 0;
  for (auto _ : state) {
    auto t0 = clock::now();
    kernel();
    auto t1 = clock::now();
    copy();
    auto t2 = clock::now();
    benchmark::ClobberMemory();
    kernel_seconds += std::chrono::duration<double>(t1 - t0).count();
    memcpy_seconds += std::chrono::duration<double>(t2 - t1).count();
  }
  const double moved = static_cast<double>(bytes) * static_cast<double>(state.iterations());
  state.counters["kernel_GBps"] = moved / kernel_seconds / 1e9;
  state.counters["memcpy_GBps"] = moved / memcpy_seconds / 1e9;
  state.counters["vs_memcpy"] = memcpy_seconds / kernel_seconds;
  state.counters["bytes"] = static_cast<double>(bytes);
}

template <class T, bool Unpack>
void run_kernel(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0)), h = static_cast<int>(state.range(1));
  local_grid grid({64, 64, 64}, halo_widths::uniform(h));
  std::vector<T> field(grid.points(), T(1));
  std::byte* fields[1] = {reinterpret_cast<std::byte*>(field.data())};
  box face{{0, 0, 0}, {64, 64, 64}};
  face.hi[dim] = h;
  std::vector<field_box> boxes{{0, face}};
  const size_t bytes = packed_bytes(boxes, sizeof(T));
  std::vector<std::byte> buffer(bytes), contiguous_src(bytes, std::byte{2});

  time_against_memcpy(
      state, bytes,
      [&] {
        if constexpr (Unpack)
          unpack(buffer.data(), boxes, fields, grid, sizeof(T));
        else
          pack(buffer.data(), boxes, fields, grid, sizeof(T));
      },
      [&] {
        std::memcpy(buffer.data(), contiguous_src.data(), bytes);
        benchmark::DoNotOptimize(buffer.data());
      });
}

// Args: face dimension (0 = x, 1 = y, 2 = z), halo width.
void run_lengths(benchmark::internal::Benchmark* b) {
  b->ArgNames({"face", "halo"});
  for (int dim : {0, 1, 2})
    for (int h : {1, 2, 5}) b->Args({dim, h});
}

void pack_double(benchmark::State& s) { run_kernel<double, false>(s); }
void unpack_double(benchmark::State& s) { run_kernel<double, true>(s); }
void pack_float(benchmark::State& s) { run_kernel<float, false>(s); }
void unpack_float(benchmark::State& s) { run_kernel<float, true>(s); }

template <class T>
void self_copy_x(benchmark::State& state) {
  const int h = static_cast<int>(state.range(0)), nfields = static_cast<int>(state.range(1));
  local_grid grid({64, 64, 64}, halo_widths::uniform(h));
  std::vector<std::vector<T>> fields(static_cast<size_t>(nfields), std::vector<T>(grid.points(), T(1)));
  std::vector<std::vector<T>> from(fields.size(), std::vector<T>(grid.points(), T(2))), to = from;
  copy_list faces;
  const auto steps = halo_regions(grid, algorithm::staged);
  size_t bytes = 0;
  for (auto& f : fields) {
    auto* base = reinterpret_cast<std::byte*>(f.data());
    for (const auto& r : steps.front()) {  // x step: -x and +x
      const box* source = nullptr;
      for (const auto& o : steps.front())
        if (o.direction == opposite(r.direction)) source = &o.send;
      faces.add(field_copy(base, grid, *source, base, grid, r.recv, sizeof(T)));
      bytes += static_cast<size_t>(r.recv.volume()) * sizeof(T);
    }
  }
  const size_t per_field = bytes / fields.size();
  time_against_memcpy(state, bytes, [&] { faces.run(); }, [&] {
    for (size_t f = 0; f < fields.size(); ++f) std::memcpy(to[f].data(), from[f].data(), per_field);
  });
}

void self_copy_x_double(benchmark::State& s) { self_copy_x<double>(s); }
void self_copy_x_float(benchmark::State& s) { self_copy_x<float>(s); }

void fields_and_halos(benchmark::internal::Benchmark* b) {
  b->ArgNames({"halo", "fields"});
  for (int h : {1, 5})
    for (int f : {1, 8}) b->Args({h, f});
}

BENCHMARK(self_copy_x_double)->Apply(fields_and_halos)->UseRealTime();
BENCHMARK(self_copy_x_float)->Apply(fields_and_halos)->UseRealTime();
BENCHMARK(pack_double)->Apply(run_lengths)->UseRealTime();
BENCHMARK(unpack_double)->Apply(run_lengths)->UseRealTime();
BENCHMARK(pack_float)->Apply(run_lengths)->UseRealTime();
BENCHMARK(unpack_float)->Apply(run_lengths)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
