// How copy_list walks its copies: which copies walk together, which runs are
// fetched ahead, when the next plane is fetched. These rules were chosen by
// measurement; the figures and the commands are in docs/results/ (the files
// named below), not here.
#pragma once

#include <cstddef>
#include <utility>

#include "halox/extend/pack.hpp"

namespace halox::walk_rules {

// Runs of this many bytes, a row apart, touch cache lines of their own that
// the hardware prefetcher misses: with fetch_ahead, run() asks for them a
// few rows early. Landings of runs up to 16 bytes read their rows first
// instead (pack.cpp). From 8 bytes: a depth-1 x face of doubles copied in
// place between two fields gained from it; 4-byte runs showed no gain
// (docs/results/2026-12-03-depth-one-fetch-ahead.md).
inline constexpr std::pair<size_t, size_t> fetched_runs{8, 256};

// Copies of the same shape walked together, at most.
inline constexpr int max_together = 4;

// Runs this long in several planes have the next plane's source fetched
// while a plane copies, always: the hardware prefetcher follows a run but
// not the jump to the next plane; shorter runs did not gain from it
// (docs/results/2026-11-25-amd-epyc-2core.md).
inline constexpr size_t next_plane_min_run = 1024;

}  // namespace halox::walk_rules

namespace halox {

struct copy_list::group {
  int count = 0;
  size_t run = 0;
  int rows = 0, planes = 0;
  bool next_plane = false;  // runs of next_plane_min_run or more in several planes
  const std::byte* from[walk_rules::max_together] = {};
  std::byte* to[walk_rules::max_together] = {};
  size_t from_row[walk_rules::max_together] = {}, from_plane[walk_rules::max_together] = {};
  size_t to_row[walk_rules::max_together] = {}, to_plane[walk_rules::max_together] = {};
};

}  // namespace halox
