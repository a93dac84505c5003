// The x step of a 2x1x1 exchange at halo 1 (64^3 floats per rank, periodic),
// two processes on two cores, the outbox in shared memory: packing and landing
// in two walks (what halox's shm transport does) against one walk that lands
// the peer's rows a few chunks behind packing its own, each chunk carrying the
// exchange's sequence number in its last cache line (no signal line of its own).
//
//   g++ -O3 -march=native -o x_faces_one_walk x_faces_one_walk.cpp
//   ./x_faces_one_walk two-walks
//   ./x_faces_one_walk one-walk ROWS_PER_CHUNK LAG_IN_CHUNKS
//
// Prints each process's median and 10th percentile of 3000 exchanges (the
// first 100 left out) and the halo cells found wrong (must be 0).
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

constexpr int n = 64, side = n + 2, rows = n * n, exchanges = 3000, skipped = 100, slots = 3;

size_t chunk_bytes(int chunk_rows) {
  return (static_cast<size_t>(chunk_rows) * 2 * sizeof(float) + 63) / 64 * 64 + 64;
}

}  // namespace

int main(int argc, char** argv) {
  const bool one_walk = argc > 1 && std::strcmp(argv[1], "one-walk") == 0;
  const int chunk_rows = argc > 2 ? std::atoi(argv[2]) : rows;
  const int lag = argc > 3 ? std::atoi(argv[3]) : 1;
  if (argc < 2 || (!one_walk && std::strcmp(argv[1], "two-walks") != 0) || chunk_rows <= 0 ||
      rows % chunk_rows != 0 || lag < 1) {
    std::fprintf(stderr, "usage: %s two-walks | one-walk ROWS_PER_CHUNK(divides 4096) LAG\n", argv[0]);
    return 2;
  }
  const int chunks = rows / chunk_rows;
  const size_t slot_bytes = chunks * chunk_bytes(chunk_rows);
  const size_t bytes = 4096 + 2 * slots * slot_bytes;
  const pinned_pair pair = start_pinned_pair(bytes);
  auto* ready = reinterpret_cast<counter*>(pair.shared);  // [0], [1]: outbox packed; [2], [3]: landed
  char* outboxes = pair.shared + 4096;
  const int me = pair.me, peer = pair.peer;

  std::vector<float> field(static_cast<size_t>(side) * side * side);
  auto index = [](int x, int y, int z) { return (static_cast<size_t>(z) * side + y) * side + x; };
  for (size_t i = 0; i < field.size(); ++i) field[i] = static_cast<float>(me * 1000000 + i);
  auto row = [&](int r) { return field.data() + index(0, 1 + r % n, 1 + r / n); };

  std::vector<double> times;
  for (int e = 0; e < exchanges; ++e) {
    const uint64_t seq = e + 1;
    char* mine = outboxes + (me * slots + e % slots) * slot_bytes;
    const char* theirs = outboxes + (peer * slots + e % slots) * slot_bytes;
    const auto start = std::chrono::steady_clock::now();
    if (!one_walk) {
      auto* out = reinterpret_cast<float*>(mine);
      for (int r = 0; r < rows; ++r) {
        out[r] = row(r)[1];
        out[rows + r] = row(r)[n];
      }
      ready[me].value.store(seq, std::memory_order_release);
      while (ready[peer].value.load(std::memory_order_acquire) < seq) __builtin_ia32_pause();
      const auto* in = reinterpret_cast<const float*>(theirs);
      for (int r = 0; r < rows; ++r) {
        row(r)[n + 1] = in[r];
        row(r)[0] = in[rows + r];
      }
    } else {
      const size_t cb = chunk_bytes(chunk_rows);
      auto land = [&](int k) {
        const char* chunk = theirs + k * cb;
        const auto* stamp = reinterpret_cast<const std::atomic<uint64_t>*>(chunk + cb - 64);
        while (stamp->load(std::memory_order_acquire) < seq) __builtin_ia32_pause();
        const auto* in = reinterpret_cast<const float*>(chunk);
        for (int i = 0; i < chunk_rows; ++i) {
          row(k * chunk_rows + i)[n + 1] = in[i];
          row(k * chunk_rows + i)[0] = in[chunk_rows + i];
        }
      };
      for (int k = 0; k < chunks; ++k) {
        char* chunk = mine + k * cb;
        auto* out = reinterpret_cast<float*>(chunk);
        for (int i = 0; i < chunk_rows; ++i) {
          out[i] = row(k * chunk_rows + i)[1];
          out[chunk_rows + i] = row(k * chunk_rows + i)[n];
        }
        reinterpret_cast<std::atomic<uint64_t>*>(chunk + cb - 64)->store(seq, std::memory_order_release);
        if (k >= lag) land(k - lag);
      }
      for (int k = std::max(0, chunks - lag); k < chunks; ++k) land(k);
    }
    // A slot is packed again 3 exchanges later: the peer must have landed it.
    ready[2 + me].value.store(seq, std::memory_order_release);
    while (ready[2 + peer].value.load(std::memory_order_acquire) + 1 < seq) __builtin_ia32_pause();
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  long wrong = 0;
  for (int r = 0; r < rows; ++r) {
    const size_t first = index(0, 1 + r % n, 1 + r / n);
    wrong += row(r)[n + 1] != static_cast<float>(peer * 1000000 + first + 1);
    wrong += row(r)[0] != static_cast<float>(peer * 1000000 + first + n);
  }
  std::sort(times.begin() + skipped, times.end());
  const size_t timed = times.size() - skipped;
  std::printf("rank %d %s rows/chunk %d lag %d: median %.2f us, p10 %.2f, wrong cells %ld\n", me,
              argv[1], one_walk ? chunk_rows : rows, one_walk ? lag : 0, times[skipped + timed / 2],
              times[skipped + timed / 10], wrong);
  if (me == 0) wait(nullptr);
  return wrong == 0 ? 0 : 1;
}
