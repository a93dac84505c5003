// Waiting on a flag in shared memory. Spins briefly (the common case: the
// writer is running on another core), then yields, because ranks may
// outnumber cores and a spinning waiter would starve the writer it waits for.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>

namespace halox::ipc {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Returns once flag >= value (sequence numbers only grow).
inline void wait_at_least(const std::atomic<uint64_t>& flag, uint64_t value) {
  constexpr int spins_before_yield = 256;
  int spins = 0;
  while (flag.load(std::memory_order_acquire) < value) {
    if (++spins < spins_before_yield)
      cpu_relax();
    else
      sched_yield();
  }
}

}  // namespace halox::ipc
