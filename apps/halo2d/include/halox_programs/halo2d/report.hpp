// Results of halox-halo2d and the seed's table layout: a row per message size,
// a column group per test, a column per neighbour count.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "halox_programs/halo2d/mesh.hpp"

namespace halox::halo2d {

struct measurement {
  test_kind test = test_kind::all;
  int neighbors = 2;
  std::size_t bytes = 0;
  int repetitions = 0;
  // Seconds per exchange of each trial: the maximum over processes, or the
  // sender's time in the single test.
  std::vector<double> trial_seconds;
  double seconds_per_exchange = 0;  // the best trial
  // What the tables show: per exchange / neighbours, i.e. per message a process sends.
  double seconds_per_message() const { return seconds_per_exchange / neighbors; }
  // Bytes a process sends per second: bytes / seconds per message (0 for 0 B).
  double bandwidth_mb_per_s() const;
};

void to_json(nlohmann::json& j, const measurement& m);

struct table_layout {
  std::vector<test_kind> tests;
  std::vector<int> neighbor_counts;
  std::vector<std::size_t> sizes;
};

// Seconds per message with `digits` decimals ("%.6f" as in the seed); "-"
// where nothing was measured.
std::string time_table(const std::vector<measurement>& results, const table_layout& layout,
                       int digits);
// MB/s (1 MB = 10^6 B) per process; "-" for 0 B.
std::string bandwidth_table(const std::vector<measurement>& results, const table_layout& layout);

}  // namespace halox::halo2d
