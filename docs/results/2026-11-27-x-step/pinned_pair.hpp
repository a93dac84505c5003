// What both scratch programs share: `bytes` of zeroed shared memory, then
// two processes, each pinned to a core of its own (me = 0 on core 0, the
// parent; me = 1 on core 1), and the counters they signal with.
#pragma once

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

struct alignas(64) counter {
  std::atomic<uint64_t> value;
};

struct pinned_pair {
  char* shared = nullptr;
  int me = 0, peer = 1;
};

inline pinned_pair start_pinned_pair(size_t bytes) {
  pinned_pair pair;
  pair.shared = static_cast<char*>(
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  std::memset(pair.shared, 0, bytes);
  pair.me = fork() == 0 ? 1 : 0;
  pair.peer = 1 - pair.me;
  cpu_set_t cores;
  CPU_ZERO(&cores);
  CPU_SET(pair.me, &cores);
  sched_setaffinity(0, sizeof cores, &cores);
  return pair;
}
