// Hooks that split an exchange's stages into copying, waiting and the rest
// (halox/exchange_profile.hpp), for the transports and the exchange.
//
// The exchange opens a stage_scope around start(0) and one around wait()
// (stage after stage) when it records; inside, a part_span charges its
// extent to one part, the time between spans goes to "other". Nested spans:
// the innermost charges, except that a wait inside a wait keeps the outer
// wait's part (node_signals knows whom it waits for; the wait policy under it
// does not), and a copy inside a pack stays a pack (the copy lists do not
// know which side runs them). Without a recording exchange a span is one
// predictable branch. Each charge reads the time stamp counter once, which
// takes 20-60 ns (a virtual machine may trap it): the few spans of a stage
// add a few hundred ns to the smallest exchanges, which is why recording is
// off unless asked for.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#else
#include <chrono>
#endif

namespace halox::stage_timer {

// pack: an owner's copies of what it sends (into an outbox or a message);
// copy: every other copy (landing, unpacking, copies within the rank).
enum part : unsigned { pack = 0, copy = 1, wait_peers = 2, wait_readers = 3, other = 4, parts = 5 };

inline uint64_t ticks_now() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// Seconds per tick of ticks_now (measured once per process, over about 2 ms).
double seconds_per_tick();

// Ticks by stage and part: of the exchange under way, summed over the
// recorded ones, and each recorded exchange's (the first kept_exchanges).
struct recorder {
  using row = std::vector<std::array<uint64_t, parts>>;  // by stage
  static constexpr size_t kept_exchanges = size_t{1} << 16;
  explicit recorder(size_t stages) : ticks(stages), sums(stages) {}
  // After the last stage of an exchange.
  void finish_exchange() {
    for (size_t s = 0; s < ticks.size(); ++s)
      for (unsigned p = 0; p < parts; ++p) sums[s][p] += ticks[s][p];
    if (exchanges < kept_exchanges) history.insert(history.end(), ticks.begin(), ticks.end());
    ++exchanges;
    for (auto& t : ticks) t = {};
  }
  row ticks, sums;
  std::vector<std::array<uint64_t, parts>> history;  // exchange after exchange, stage by stage
  uint64_t exchanges = 0;
};

// The stage under way, if it records. One per process: exchanges record on
// one thread at a time (a plain global keeps the idle check one load).
struct active_stage {
  recorder* rec = nullptr;
  size_t stage = 0;
  unsigned current = other;
  uint64_t mark = 0;
};
inline active_stage active;

// Charges the time since the last switch to the current part; `next` takes over.
inline void switch_to(unsigned next) {
  const uint64_t t = ticks_now();
  active.rec->ticks[active.stage][active.current] += t - active.mark;
  active.mark = t;
  active.current = next;
}

class stage_scope {
 public:
  // `rec` null: not recording.
  stage_scope(recorder* rec, size_t stage) {
    if (!rec) return;
    if (rec->ticks.size() <= stage) return;
    active = {rec, stage, other, ticks_now()};
  }
  ~stage_scope() {
    if (!active.rec) return;
    switch_to(other);
    active.rec = nullptr;
  }
  // The next stage starts where this one ends: one clock read for both.
  void next(size_t stage) {
    if (!active.rec || active.rec->ticks.size() <= stage) return;
    switch_to(other);
    active.stage = stage;
  }
  stage_scope(const stage_scope&) = delete;
  stage_scope& operator=(const stage_scope&) = delete;
};

class part_span {
 public:
  explicit part_span(unsigned p) {
    if (!active.rec) return;
    saved_ = active.current;
    const bool in_wait = saved_ == wait_peers || saved_ == wait_readers;
    if (in_wait && (p == wait_peers || p == wait_readers)) return;  // the outer wait knows better
    if (saved_ == pack && p == copy) return;
    on_ = true;
    switch_to(p);
  }
  ~part_span() {
    if (on_ && active.rec) switch_to(saved_);
  }
  part_span(const part_span&) = delete;
  part_span& operator=(const part_span&) = delete;

 private:
  bool on_ = false;
  unsigned saved_ = other;
};

}  // namespace halox::stage_timer
