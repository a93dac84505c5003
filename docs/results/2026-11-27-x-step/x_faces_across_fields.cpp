// The x steps of a 2x1x1 exchange at halo 5 x 8 fields (64^3 floats per
// rank, periodic), field by field as shm/staged/sequence runs them, two
// processes on two cores, an outbox ring of 3 slots in shared memory: each
// field packed, then landed (what halox's shm transport does), against landing
// field f in the same walk as packing field f + 1, so that the reads of one
// field (from L3: 8 fields do not fit L2) overlap the peer's rows crossing cores.
//
//   g++ -O3 -march=native -o x_faces_across_fields x_faces_across_fields.cpp
//   ./x_faces_across_fields in-turn
//   ./x_faces_across_fields overlapped
//
// Prints each process's median and 10th percentile of 400 exchanges (the
// first 20 left out) and the halo cells found wrong (must be 0).
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pinned_pair.hpp"

namespace {

constexpr int n = 64, halo = 5, side = n + 2 * halo, rows = n * n, fields = 8;
constexpr int exchanges = 400, skipped = 20, slots = 3;
constexpr size_t run_bytes = halo * sizeof(float);

}  // namespace

int main(int argc, char** argv) {
  const bool overlapped = argc > 1 && std::strcmp(argv[1], "overlapped") == 0;
  if (argc < 2 || (!overlapped && std::strcmp(argv[1], "in-turn") != 0)) {
    std::fprintf(stderr, "usage: %s in-turn | overlapped\n", argv[0]);
    return 2;
  }
  const size_t slot_bytes = (static_cast<size_t>(rows) * 2 * run_bytes + 4095) / 4096 * 4096;
  const size_t bytes = 4096 + 2 * slots * slot_bytes;
  const pinned_pair pair = start_pinned_pair(bytes);
  auto* signal = reinterpret_cast<counter*>(pair.shared);  // [0], [1]: packed; [2], [3]: landed
  char* outboxes = pair.shared + 4096;
  const int me = pair.me, peer = pair.peer;

  auto index = [](int x, int y, int z) { return (static_cast<size_t>(z) * side + y) * side + x; };
  std::vector<std::vector<float>> field(fields, std::vector<float>(index(0, 0, side)));
  auto value = [](int rank, int f, size_t i) { return static_cast<float>(rank * 10000000 + f * 1000000 + i); };
  for (int f = 0; f < fields; ++f)
    for (size_t i = 0; i < field[f].size(); ++i) field[f][i] = value(me, f, i);
  auto row = [&](int f, int r) { return field[f].data() + index(0, halo + r % n, halo + r / n); };
  auto slot = [&](int rank, uint64_t step) { return outboxes + (rank * slots + (step - 1) % slots) * slot_bytes; };
  auto slot_free = [&](uint64_t step) {
    if (step > slots)
      while (signal[2 + peer].value.load(std::memory_order_acquire) < step - slots) __builtin_ia32_pause();
  };
  auto pack_row = [&](int f, int r, float* out) {
    std::memcpy(out + r * 2 * halo, row(f, r) + halo, run_bytes);
    std::memcpy(out + r * 2 * halo + halo, row(f, r) + n, run_bytes);
  };
  auto land_row = [&](int f, int r, const float* in) {
    std::memcpy(row(f, r) + n + halo, in + r * 2 * halo, run_bytes);
    std::memcpy(row(f, r), in + r * 2 * halo + halo, run_bytes);
  };
  auto packed = [&](uint64_t step) { signal[me].value.store(step, std::memory_order_release); };
  auto await_peer = [&](uint64_t step) {
    while (signal[peer].value.load(std::memory_order_acquire) < step) __builtin_ia32_pause();
  };

  std::vector<double> times;
  uint64_t steps = 0;
  for (int e = 0; e < exchanges; ++e) {
    const auto start = std::chrono::steady_clock::now();
    if (!overlapped) {
      for (int f = 0; f < fields; ++f) {
        const uint64_t step = ++steps;
        slot_free(step);
        auto* out = reinterpret_cast<float*>(slot(me, step));
        for (int r = 0; r < rows; ++r) pack_row(f, r, out);
        packed(step);
        await_peer(step);
        const auto* in = reinterpret_cast<const float*>(slot(peer, step));
        for (int r = 0; r < rows; ++r) land_row(f, r, in);
        signal[2 + me].value.store(step, std::memory_order_release);
      }
    } else {
      const uint64_t first = steps + 1;
      slot_free(first);
      for (int r = 0; r < rows; ++r) pack_row(0, r, reinterpret_cast<float*>(slot(me, first)));
      packed(first);
      for (int f = 0; f < fields; ++f) {
        const uint64_t step = ++steps;
        await_peer(step);
        const auto* in = reinterpret_cast<const float*>(slot(peer, step));
        if (f + 1 < fields) {
          slot_free(step + 1);
          auto* out = reinterpret_cast<float*>(slot(me, step + 1));
          for (int r = 0; r < rows; ++r) {
            pack_row(f + 1, r, out);
            land_row(f, r, in);
          }
          packed(step + 1);
        } else {
          for (int r = 0; r < rows; ++r) land_row(f, r, in);
        }
        signal[2 + me].value.store(step, std::memory_order_release);
      }
    }
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  long wrong = 0;
  for (int f = 0; f < fields; ++f)
    for (int r = 0; r < rows; ++r) {
      const size_t first = index(0, halo + r % n, halo + r / n);
      for (int k = 0; k < halo; ++k) {
        wrong += row(f, r)[n + halo + k] != value(peer, f, first + halo + k);
        wrong += row(f, r)[k] != value(peer, f, first + n + k);
      }
    }
  std::sort(times.begin() + skipped, times.end());
  const size_t timed = times.size() - skipped;
  std::printf("rank %d %s: median %.1f us, p10 %.1f, wrong cells %ld\n", me, argv[1],
              times[skipped + timed / 2], times[skipped + timed / 10], wrong);
  if (me == 0) wait(nullptr);
  return wrong == 0 ? 0 : 1;
}
