// halox-ipc's options and their checks.
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>

#include "halox_programs/cli.hpp"
#include "halox_programs/help_json.hpp"
#include "halox/common/error.hpp"
#include "ipc_program.hpp"

namespace halox::ipc_program {

namespace {

// The columns --mechanisms takes, and "all" (listed by --help-json).
std::vector<std::string> mechanism_words() {
  std::vector<std::string> words;
  for (const auto kind : all_mechanisms()) words.push_back(to_string(kind));
  words.push_back("all");
  return words;
}

}  // namespace

namespace {

constexpr uint64_t largest_buffer = uint64_t{1} << 30;

bool is_power_of_two(uint64_t x) {
  return x != 0 && (x & (x - 1)) == 0;
}

// "4194304", "64KiB", "4M", "1g": bytes with an optional binary unit.
uint64_t parse_size(const char* option, const std::string& text) {
  auto bad = [&] {
    return usage_error(
        fmt::format("{}: '{}' is not a size in bytes (e.g. 4194304, 64KiB, 4MiB)", option, text));
  };
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range)
    throw usage_error(fmt::format("{}: '{}' is too large", option, text));
  if (ec != std::errc() || end == text.data()) throw bad();
  std::string unit(end, text.data() + text.size());
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::map<std::string, int> shifts{
      {"", 0},    {"b", 0},    {"k", 10},  {"ki", 10}, {"kib", 10}, {"kb", 10},  {"m", 20},
      {"mi", 20}, {"mib", 20}, {"mb", 20}, {"g", 30},  {"gi", 30},  {"gib", 30}, {"gb", 30}};
  auto shift = shifts.find(unit);
  if (shift == shifts.end()) throw bad();
  if (value > (std::numeric_limits<uint64_t>::max() >> shift->second))
    throw usage_error(fmt::format("{}: '{}' is too large", option, text));
  return value << shift->second;
}

// The buffer, the block range and the chunk; returns the smallest block.
uint64_t check_sizes(const ipc_options& o, run_plan& plan) {
  plan.bufsize = parse_size("--bufsize", o.bufsize);
  const uint64_t min_block = parse_size("--min-block", o.min_block);
  plan.chunk = parse_size("--chunk", o.chunk);
  if (plan.bufsize < 4 || plan.bufsize > largest_buffer)
    throw usage_error(fmt::format("--bufsize must be between 4 and {} bytes, got {}",
                                  largest_buffer, plan.bufsize));
  if (plan.bufsize % 4 != 0)
    throw usage_error(
        fmt::format("--bufsize must be a multiple of 4 (blocks hold whole 4-byte words), got {}",
                    plan.bufsize));
  // Default: the largest power of two dividing the buffer (the buffer itself
  // when it is a power of two).
  const uint64_t max_block = o.max_block.empty() ? plan.bufsize & (~plan.bufsize + 1)
                                                 : parse_size("--max-block", o.max_block);
  for (auto [name, value] : {std::pair{"--min-block", min_block}, {"--max-block", max_block}}) {
    if (value < 4 || !is_power_of_two(value))
      throw usage_error(fmt::format("{} must be a power of two >= 4, got {}", name, value));
    if (value > plan.bufsize)
      throw usage_error(
          fmt::format("{} {} is larger than the buffer size {}", name, value, plan.bufsize));
  }
  if (min_block > max_block)
    throw usage_error(
        fmt::format("--min-block {} is larger than --max-block {}", min_block, max_block));
  // Powers of two: the largest block dividing the buffer implies all smaller do.
  if (plan.bufsize % max_block != 0)
    throw usage_error(
        fmt::format("block size {} does not divide the buffer size {}", max_block, plan.bufsize));
  for (uint64_t b = min_block; b <= max_block; b *= 2) plan.blocks.push_back(b);
  return min_block;
}

void check_layout_and_repetitions(const ipc_options& o, run_plan& plan) {
  plan.layout = parse_layout(o.layout);
  if (plan.layout == layout_kind::strided && (o.stride_factor < 2 || o.stride_factor > 64))
    throw usage_error(
        fmt::format("--stride-factor must be between 2 and 64, got {}", o.stride_factor));
  if (plan.chunk < 64 || plan.chunk > largest_buffer || !is_power_of_two(plan.chunk))
    throw usage_error(fmt::format("--chunk must be a power of two between 64 and {}, got {}",
                                  largest_buffer, plan.chunk));
  if (o.nrep < 1) throw usage_error(fmt::format("--nrep must be positive, got {}", o.nrep));
  if (o.warmup < 0)
    throw usage_error(fmt::format("--warmup must not be negative, got {}", o.warmup));
  if (!(o.cell_time >= 0))
    throw usage_error(fmt::format("--cell-time must not be negative, got {}", o.cell_time));
  plan.stride_factor =
      plan.layout == layout_kind::strided ? static_cast<size_t>(o.stride_factor) : 1;
}

void select_mechanisms(const ipc_options& o, run_plan& plan) {
  auto names = split_list(o.mechanisms);
  if (names.empty()) throw usage_error("--mechanisms needs at least one mechanism");
  auto is_all = [](std::string name) {
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name == "all";
  };
  // "all" shows unavailable mechanisms as n/a; naming one makes it required.
  plan.explicit_mechanisms = std::none_of(names.begin(), names.end(), is_all);
  std::vector<bool> wanted(all_mechanisms().size(), !plan.explicit_mechanisms);
  for (const auto& name : names) {
    if (is_all(name)) continue;
    auto kind = parse_mechanism(name);
    // Availability is this node's: decided with the others once they are known to share it.
    if (auto a = local_availability(kind); !a.available && plan.unavailable.empty())
      plan.unavailable =
          fmt::format("mechanism {} is not available here: {}", to_string(kind), a.reason);
    wanted[static_cast<size_t>(kind)] = true;
  }
  for (auto kind : all_mechanisms())
    if (wanted[static_cast<size_t>(kind)]) plan.mechanisms.push_back(kind);
}

}  // namespace

void add_options(CLI::App& app, ipc_options& o) {
  // A repeated option takes its last value (scripts append overrides).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto size_option = [&](const char* name, std::string& value, const char* help) {
    return app.add_option(name, value, help)->type_name("SIZE");
  };
  size_option("--bufsize", o.bufsize, "Buffer size in bytes (4194304, 4MiB, 4M)")
      ->capture_default_str();
  size_option("--min-block", o.min_block, "Smallest block (IOV_size), a power of two >= 4")
      ->capture_default_str();
  size_option("--max-block", o.max_block,
              "Largest block, a power of two dividing the buffer size (default: the largest such)");
  app.add_option("--layout", o.layout,
                 "contiguous (blocks back to back) or strided (a gap after each block)")
      ->capture_default_str();
  app.add_option("--stride-factor", o.stride_factor,
                 "Strided layout: block stride = factor x IOV_size (2..64)")
      ->capture_default_str();
  app.add_option(
         "--mechanisms", o.mechanisms,
         "Columns: SHMEM_NP, SHMEM_P, CMA, MAP_NC, MAP_C, MPI_DT, XPMEM_NC, XPMEM_C, or all "
         "(default: all, unavailable ones shown as n/a)")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(declared_values(mechanism_words()));
  app.add_flag("--pairs", o.pairs,
               "Pairs 0-1, 2-3, ... copy at the same time (default: rank 0 owns, all others are "
               "its peers)");
  size_option("--chunk", o.chunk, "SHMEM_P pipeline chunk, a power of two >= 64 B")
      ->capture_default_str();
  app.add_option("--nrep", o.nrep, "Timed copies per cell, at most")->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed copies per cell after the first, at most")
      ->capture_default_str();
  app.add_option("--cell-time", o.cell_time,
                 "Seconds per cell: slow cells get fewer copies (at least 3); 0 = always --nrep")
      ->capture_default_str();
  app.add_flag("--no-check", o.no_check, "Do not verify the copies (timing-critical runs)");
  app.add_flag("--no-populate", o.no_populate,
               "MAP_*: fault the mapped pages in during the copy instead of in mmap");
  app.add_option("--json", o.json_path, "Append one JSON object for the run to FILE")
      ->type_name("FILE");
}

run_plan check_options(const ipc_options& o, int ranks) {
  if (ranks < 2)
    throw usage_error(fmt::format("needs at least 2 ranks (an owner and a peer), got {}", ranks));
  if (o.pairs && ranks % 2 != 0)
    throw usage_error(fmt::format("--pairs needs an even number of ranks, got {}", ranks));
  run_plan plan;
  const uint64_t min_block = check_sizes(o, plan);
  check_layout_and_repetitions(o, plan);
  plan.max_extent =
      block_layout::make(plan.layout, plan.bufsize, min_block, plan.stride_factor).extent();
  select_mechanisms(o, plan);
  return plan;
}

}  // namespace halox::ipc_program
