// Options of halox-halo2d, declared once with their help text, and their
// validation: everything is checked from argv and the rank count alone, so a
// bad input fails identically on every rank before any communication.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "halox_programs/halo2d/benchmark.hpp"
#include "halox_programs/halo2d/mesh.hpp"

namespace halox::halo2d {

inline constexpr std::uint64_t max_message_bytes = std::uint64_t{16} << 20;  // 16 MiB

// As given on the command line.
struct options {
  std::vector<int> mesh;  // PX PY; empty or 0 entries: MPI_Dims_create
  bool periodic = true;
  bool reorder = false;
  std::vector<std::string> tests;  // empty: all
  std::vector<int> neighbor_counts{2, 4, 8};
  std::string min_size = "0", max_size = "1MiB";
  std::vector<std::string> sizes;  // explicit list, replaces the range
  int repetitions = 0;             // 0: chosen per size (auto_repetitions)
  int warmup = 10;
  int trials = 5;
  bool check = true;
  int digits = 6;
  std::string json;
  std::string inject_fault;  // hidden: corrupt | stale
};

void add_options(CLI::App& app, options& opts);

// Checked and resolved.
struct config {
  mesh2d mesh;
  bool mesh_from_dims_create = true;
  bool reorder = false;
  std::vector<test_kind> tests;
  std::vector<int> neighbor_counts;
  std::vector<std::size_t> sizes;  // ascending, distinct
  int repetitions = 0;             // 0: auto
  int warmup = 10, trials = 5;
  bool check = true;
  int digits = 6;
  std::string json;
  fault_kind fault = fault_kind::none;
};

// Throws usage_error. Calls MPI_Dims_create (local, no communication) only
// after checking that the requested mesh fits the ranks.
config validate(const options& opts, int ranks);

// "4096", "64k", "64KiB", "1M", "1MiB" (1 K = 1024 B); throws usage_error.
// CLI11 2.1's AsSizeValue wraps negative numbers around, hence this parser.
std::uint64_t parse_byte_size(const std::string& text, const std::string& option);
// 0 (when min is 0) and the powers of two in [min, max].
std::vector<std::size_t> power_of_two_sizes(std::uint64_t min, std::uint64_t max);

// Repetitions per timed trial when not given: about 16 MiB sent per process,
// at least 10 and at most 1000 exchanges.
int auto_repetitions(std::size_t bytes, int neighbor_count);
int repetitions_for(const config& cfg, std::size_t bytes, int neighbor_count);

}  // namespace halox::halo2d
