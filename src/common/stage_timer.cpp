#include "common/stage_timer.hpp"

#include <chrono>

namespace halox::stage_timer {

double seconds_per_tick() {
  static const double value = [] {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const uint64_t k0 = ticks_now();
    auto t1 = t0;
    while (t1 - t0 < std::chrono::milliseconds(2)) t1 = clock::now();
    const uint64_t k1 = ticks_now();
    const double seconds = std::chrono::duration<double>(t1 - t0).count();
    return k1 > k0 ? seconds / static_cast<double>(k1 - k0) : 1e-9;
  }();
  return value;
}

}  // namespace halox::stage_timer
