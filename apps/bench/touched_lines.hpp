// The cache lines an exchange cannot avoid: the distinct 64-byte lines of the
// fields that its plan reads (the boxes it sends and copies from) and writes
// (the boxes it receives and copies to). A halo a few cells wide across x moves
// a few bytes of each line it touches, so a memcpy of the halo's bytes is a
// floor no exchange reaches; a memcpy of these lines' bytes is one it can.
#pragma once

#include <cstddef>

#include "halox/extend/plan.hpp"

namespace halox::bench {

inline constexpr size_t cache_line_bytes = 64;

// The distinct lines the plan's boxes touch in this rank's fields, a field
// starting on a line (as halox-bench allocates them), in bytes.
struct touched_lines {
  size_t read_bytes = 0;     // of the boxes sent and copied from
  size_t written_bytes = 0;  // of the boxes received and copied to
  // What a memcpy must move to read as many lines as the exchange reads and
  // write as many as it writes: the larger of the two.
  size_t copy_bytes() const { return read_bytes > written_bytes ? read_bytes : written_bytes; }
};

touched_lines lines_touched(const exchange_plan& plan);

}  // namespace halox::bench
