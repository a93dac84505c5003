// Pack/unpack kernels against memcpy of the same bytes, measured side by side.
//
// A box of 64 x 64 x-runs of N elements inside a field whose rows are N + 10
// elements long (a halo of 5 on each side), the shape of the x-slab of a
// 64^3 sub-domain for N = halo width and of y/z slabs for N >= 64.
// Counters: bytes_per_second (pack), memcpy_GBps (contiguous copy of the same
// bytes, same buffers) and vs_memcpy = pack bandwidth / memcpy bandwidth.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "halox/pack.hpp"

namespace {

using namespace halox;

template <class T, bool Unpack>
void run_kernel(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  local_grid grid({n, 64, 64}, {{5, 0, 0}, {5, 0, 0}});
  std::vector<T> field(grid.cells(), T(1));
  std::byte* fields[1] = {reinterpret_cast<std::byte*>(field.data())};
  std::vector<field_box> boxes{{0, box{{0, 0, 0}, {n, 64, 64}}}};
  const size_t bytes = packed_bytes(boxes, sizeof(T));
  std::vector<std::byte> buffer(bytes), contiguous_src(bytes, std::byte{2});

  using clock = std::chrono::steady_clock;
  double kernel_seconds = 0, memcpy_seconds = 0;
  for (auto _ : state) {
    auto t0 = clock::now();
    if constexpr (Unpack)
      unpack(buffer.data(), boxes, fields, grid, sizeof(T));
    else
      pack(buffer.data(), boxes, fields, grid, sizeof(T));
    auto t1 = clock::now();
    std::memcpy(buffer.data(), contiguous_src.data(), bytes);
    auto t2 = clock::now();
    benchmark::DoNotOptimize(buffer.data());
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

void run_lengths(benchmark::internal::Benchmark* b) {
  for (int n : {1, 2, 4, 5, 8, 16, 32, 64, 128, 256}) b->Arg(n);
}

void pack_double(benchmark::State& s) { run_kernel<double, false>(s); }
void unpack_double(benchmark::State& s) { run_kernel<double, true>(s); }
void pack_float(benchmark::State& s) { run_kernel<float, false>(s); }
void unpack_float(benchmark::State& s) { run_kernel<float, true>(s); }

BENCHMARK(pack_double)->Apply(run_lengths)->UseRealTime();
BENCHMARK(unpack_double)->Apply(run_lengths)->UseRealTime();
BENCHMARK(pack_float)->Apply(run_lengths)->UseRealTime();
BENCHMARK(unpack_float)->Apply(run_lengths)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
