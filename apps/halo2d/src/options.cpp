#include "halox_programs/halo2d/options.hpp"

#include <fmt/core.h>
#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "halox_programs/cli.hpp"
#include "halox_programs/help_json.hpp"
#include "halox/common/error.hpp"

namespace halox::halo2d {

void add_options(CLI::App& app, options& opts) {
  app.add_option("--mesh", opts.mesh,
                 "PX PY: the process mesh (0 = chosen by MPI_Dims_create; default: both chosen)")
      ->expected(2);
  app.add_flag("--periodic,!--no-periodic", opts.periodic,
               "wrap the mesh in both dimensions (default on: every process has all neighbours)");
  app.add_flag("--reorder", opts.reorder, "let MPI_Cart_create renumber the ranks (default off)");
  std::vector<std::string> tests;
  for (const auto test : all_tests) tests.emplace_back(name_of(test));
  app.add_option("--tests", opts.tests,
                 "comma list of tests: " + test_names() + " (default: all of them)")
      ->check(declared_values(tests));
  app.add_option("--neighbors,--neighbours", opts.neighbor_counts,
                 "comma list of neighbour counts: 2 (1-D), 4 (star), 8 (box)")
      ->delimiter(',')
      ->check(declared_values({"2", "4", "8"}))
      ->capture_default_str();
  auto* min_size = app.add_option("--min-size", opts.min_size,
                                  "smallest message of the power-of-two range (B, or 4KiB, 1MiB)")
                       ->type_name("SIZE")
                       ->capture_default_str();
  auto* max_size = app.add_option("--max-size", opts.max_size,
                                  "largest message of the power-of-two range (at most 16MiB)")
                       ->type_name("SIZE")
                       ->capture_default_str();
  app.add_option("--sizes", opts.sizes, "comma list of message sizes instead of the range")
      ->type_name("SIZE")
      ->excludes(min_size)
      ->excludes(max_size);
  app.add_option("--nrep", opts.repetitions,
                 "exchanges per timed trial (default: about 16 MiB per process, 10..1000)")
      ->check(CLI::TypeValidator<int>().description(""))
      ->check(CLI::Range(1, 100000000));
  app.add_option("--warmup", opts.warmup, "untimed exchanges before the trials of each size")
      ->check(CLI::TypeValidator<int>().description(""))
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  app.add_option("--trials", opts.trials, "timed trials per size; the best one is reported")
      ->check(CLI::TypeValidator<int>().description(""))
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_flag("--check,!--no-check", opts.check,
               "verify every received byte (default on; --no-check for timing-only runs)");
  app.add_option("--digits", opts.digits, "decimals of the seconds in the time table")
      ->check(CLI::TypeValidator<int>().description(""))
      ->check(CLI::Range(1, 12))
      ->capture_default_str();
  app.add_option("--json", opts.json, "append one JSON object for this run to FILE");
  // Debugging aid for the verification itself: senders corrupt or reuse stale
  // content on purpose, and the run must fail.
  app.add_option("--inject-fault", opts.inject_fault, "corrupt | stale")->group("");
}

std::uint64_t parse_byte_size(const std::string& text, const std::string& option) {
  auto not_a_size = [&] {
    return usage_error(fmt::format(
        "{}: '{}' is not a message size (expected a byte count such as 4096, 64KiB or 1MiB)",
        option, text));
  };
  size_t pos = 0;
  while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos < text.size() && text[pos] == '-')
    throw usage_error(
        fmt::format("{}: '{}' is negative; sizes are byte counts >= 0", option, text));
  if (pos == text.size() || !std::isdigit(static_cast<unsigned char>(text[pos])))
    throw not_a_size();
  std::uint64_t value = 0;
  bool overflow = false;
  for (; pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])); ++pos) {
    auto digit = static_cast<std::uint64_t>(text[pos] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) overflow = true;
    value = overflow ? value : value * 10 + digit;
  }
  std::string unit;
  for (; pos < text.size(); ++pos)
    if (!std::isspace(static_cast<unsigned char>(text[pos])))
      unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[pos])));
  std::uint64_t factor = 0;
  if (unit.empty() || unit == "b") factor = 1;
  for (auto [prefix, scale] : {std::pair{'k', 1ULL << 10}, {'m', 1ULL << 20}, {'g', 1ULL << 30}})
    if (unit == std::string{prefix} || unit == std::string{prefix, 'b'} ||
        unit == std::string{prefix, 'i'} || unit == std::string{prefix, 'i', 'b'})
      factor = scale;
  if (factor == 0) throw not_a_size();
  if (overflow || value > std::numeric_limits<std::uint64_t>::max() / factor)
    throw usage_error(fmt::format("{}: '{}' is out of range (at most 16MiB = {} B)", option, text,
                                  max_message_bytes));
  return value * factor;
}

std::vector<std::size_t> power_of_two_sizes(std::uint64_t min, std::uint64_t max) {
  std::vector<std::size_t> sizes;
  if (min == 0) sizes.push_back(0);
  for (std::uint64_t size = 1; size <= max; size *= 2)
    if (size >= min) sizes.push_back(static_cast<std::size_t>(size));
  return sizes;
}

int auto_repetitions(std::size_t bytes, int neighbor_count) {
  const std::uint64_t budget = std::uint64_t{16} << 20;
  std::uint64_t per_exchange =
      static_cast<std::uint64_t>(neighbor_count) * std::max<std::uint64_t>(bytes, 4096);
  return static_cast<int>(std::clamp<std::uint64_t>(budget / per_exchange, 10, 1000));
}

int repetitions_for(const config& cfg, std::size_t bytes, int neighbor_count) {
  return cfg.repetitions > 0 ? cfg.repetitions : auto_repetitions(bytes, neighbor_count);
}

static mesh2d resolve_mesh(const std::vector<int>& requested, bool periodic, int ranks) {
  int dims[2] = {0, 0};
  if (!requested.empty()) {
    if (requested.size() != 2)
      throw usage_error(fmt::format("--mesh needs 2 extents, got {}", requested.size()));
    int fixed = 1;
    for (int d = 0; d < 2; ++d) {
      if (requested[d] < 0)
        throw usage_error(fmt::format("--mesh {} {}: extents must be positive (or 0 = chosen)",
                                      requested[0], requested[1]));
      dims[d] = requested[d];
      if (requested[d] > 0) fixed *= requested[d];
    }
    bool chosen = dims[0] == 0 || dims[1] == 0;
    if (!chosen && fixed != ranks)
      throw usage_error(fmt::format("--mesh {} {} has {} processes, but the job has {} ranks",
                                    dims[0], dims[1], fixed, ranks));
    if (chosen && ranks % fixed != 0)
      throw usage_error(
          fmt::format("--mesh {} {}: {} ranks cannot be split into {} rows or columns", dims[0],
                      dims[1], ranks, fixed));
  }
  MPI_Dims_create(ranks, 2, dims);
  return {{dims[0], dims[1]}, periodic};
}

template <typename T>
static void append_unique(std::vector<T>& list, const T& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

config validate(const options& opts, int ranks) {
  config cfg;
  cfg.mesh = resolve_mesh(opts.mesh, opts.periodic, ranks);
  cfg.mesh_from_dims_create =
      opts.mesh.empty() || std::find(opts.mesh.begin(), opts.mesh.end(), 0) != opts.mesh.end();
  cfg.reorder = opts.reorder;

  // Lists are split here rather than by CLI11 so that an empty list is an error.
  auto test_list = split_list(opts.tests);
  if (!opts.tests.empty() && test_list.empty()) throw usage_error("--tests: no test given");
  for (const auto& name : test_list) {
    auto test = test_from_name(name);
    if (!test)
      throw usage_error(fmt::format("unknown test '{}' (expected: {})", name, test_names()));
    append_unique(cfg.tests, *test);
  }
  if (cfg.tests.empty()) cfg.tests.assign(all_tests.begin(), all_tests.end());

  for (int count : opts.neighbor_counts) {
    if (!is_neighbor_count(count))
      throw usage_error(
          fmt::format("--neighbors: {} is not a neighbour count (expected 2, 4 or 8)", count));
    append_unique(cfg.neighbor_counts, count);
  }
  if (cfg.neighbor_counts.empty()) throw usage_error("--neighbors: no neighbour count given");
  for (int count : cfg.neighbor_counts)
    if (auto need = mesh_requirement(cfg.mesh, count); !need.empty()) throw usage_error(need);

  auto in_range = [](std::uint64_t size, const std::string& option, const std::string& text) {
    if (size > max_message_bytes)
      throw usage_error(fmt::format("{}: {} is out of range (at most 16MiB = {} B)", option, text,
                                    max_message_bytes));
    return static_cast<std::size_t>(size);
  };
  auto size_list = split_list(opts.sizes);
  if (!opts.sizes.empty() && size_list.empty()) throw usage_error("--sizes: no size given");
  if (!size_list.empty()) {
    for (const auto& text : size_list)
      cfg.sizes.push_back(in_range(parse_byte_size(text, "--sizes"), "--sizes", text));
    std::sort(cfg.sizes.begin(), cfg.sizes.end());
    cfg.sizes.erase(std::unique(cfg.sizes.begin(), cfg.sizes.end()), cfg.sizes.end());
  } else {
    auto min = in_range(parse_byte_size(opts.min_size, "--min-size"), "--min-size", opts.min_size);
    auto max = in_range(parse_byte_size(opts.max_size, "--max-size"), "--max-size", opts.max_size);
    if (min > max)
      throw usage_error(
          fmt::format("--min-size {} is larger than --max-size {}", opts.min_size, opts.max_size));
    cfg.sizes = power_of_two_sizes(min, max);
    if (cfg.sizes.empty())
      throw usage_error(fmt::format(
          "no power of two lies between --min-size {} and --max-size {} (use --sizes for others)",
          opts.min_size, opts.max_size));
  }

  cfg.repetitions = opts.repetitions;
  cfg.warmup = opts.warmup;
  cfg.trials = opts.trials;
  cfg.check = opts.check;
  cfg.digits = opts.digits;
  cfg.json = opts.json;
  if (opts.inject_fault == "corrupt")
    cfg.fault = fault_kind::corrupt;
  else if (opts.inject_fault == "stale")
    cfg.fault = fault_kind::stale;
  else if (!opts.inject_fault.empty())
    throw usage_error(
        fmt::format("--inject-fault: unknown fault '{}' (corrupt or stale)", opts.inject_fault));
  if (cfg.fault != fault_kind::none && !cfg.check)
    throw usage_error("--inject-fault needs verification on (it is there to test it)");
  return cfg;
}

}  // namespace halox::halo2d
