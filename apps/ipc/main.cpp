// halox-ipc: intra-node copy mechanisms for non-contiguous data (after the mpidt benchmark).
// An owner's buffer is cut into IOV_count blocks of IOV_size bytes; peers copy
// the blocks with each mechanism in turn. One table row per block size, one
// column per mechanism, all measured in the same run.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "halox/common/cli.hpp"
#include "halox/common/error.hpp"
#include "halox/common/provenance.hpp"
#include "halox/common/stats.hpp"
#include "halox/ipc/layout.hpp"
#include "halox/ipc/measure.hpp"
#include "halox/ipc/mechanism.hpp"

namespace {

using namespace halox;
using namespace halox::ipc;
constexpr const char* program = "halox-ipc";
constexpr uint64_t largest_buffer = uint64_t{1} << 30;

// Sizes stay text until checked, so that "-5" or "4x" get a message that
// names them (CLI11's size transform wraps negative numbers around).
struct ipc_options {
  std::string bufsize = "4194304";
  std::string min_block = "4";
  std::string max_block;  // empty: the buffer size
  std::string layout = "contiguous";
  int stride_factor = 2;
  std::vector<std::string> mechanisms{"all"};
  bool pairs = false;
  std::string chunk = "65536";
  int nrep = 50;
  int warmup = 5;
  double cell_time = 0.5;
  bool no_check = false;
  bool no_populate = false;
  std::string json_path;
};

// What the options mean once checked; identical on every rank.
struct run_plan {
  uint64_t bufsize = 0, chunk = 0;
  size_t stride_factor = 1;  // 1 for the contiguous layout
  layout_kind layout = layout_kind::contiguous;
  std::vector<size_t> blocks;
  std::vector<mechanism_kind> mechanisms;
  bool explicit_mechanisms = false;
  size_t max_extent = 0;
  std::string unavailable;  // a named mechanism this node lacks (agreed before it counts)
};

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
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
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

// Everything here depends on the arguments and the number of ranks only, so
// every rank throws the same usage_error before any communication.
run_plan check_options(const ipc_options& o, int ranks) {
  if (ranks < 2)
    throw usage_error(fmt::format("needs at least 2 ranks (an owner and a peer), got {}", ranks));
  if (o.pairs && ranks % 2 != 0)
    throw usage_error(fmt::format("--pairs needs an even number of ranks, got {}", ranks));
  run_plan plan;
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

  for (uint64_t b = min_block; b <= max_block; b *= 2) plan.blocks.push_back(b);
  plan.stride_factor =
      plan.layout == layout_kind::strided ? static_cast<size_t>(o.stride_factor) : 1;
  plan.max_extent =
      block_layout::make(plan.layout, plan.bufsize, min_block, plan.stride_factor).extent();

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
  return plan;
}

void require_one_node(MPI_Comm world) {
  MPI_Comm node;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_rank = 0, leaders = 0;
  MPI_Comm_rank(node, &node_rank);
  int leader = node_rank == 0 ? 1 : 0;
  MPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, world);
  MPI_Comm_free(&node);
  if (leaders != 1)
    throw usage_error(fmt::format(
        "all ranks must share one node (intra-node mechanisms), but they span {} nodes", leaders));
}

// One column's state for the run.
struct column {
  mechanism_kind kind;
  availability status;
  std::unique_ptr<copy_mechanism> mechanism;
};

struct row_result {
  size_t block = 0, count = 0;
  double memcpy_us = 0;
  std::map<mechanism_kind, cell_result> cells;
};

// Contiguous memcpy of the buffer size inside each peer, the same moment for
// all peers (as the copies run); median over copies, max over peers.
double measure_memcpy_us(MPI_Comm world, bool is_peer, std::byte* from, std::byte* to,
                         size_t bytes) {
  constexpr int warm = 2, timed = 11;
  double median = 0;
  MPI_Barrier(world);
  if (is_peer) {
    std::vector<double> samples;
    for (int i = 0; i < warm + timed; ++i) {
      double t0 = now_seconds();
      std::memcpy(to, from, bytes);
      double t1 = now_seconds();
      if (i >= warm) samples.push_back((t1 - t0) * 1e6);
    }
    median = summarize(samples).median;
  }
  double worst = 0;
  MPI_Reduce(&median, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, world);
  return worst;
}

std::string table_rule(size_t columns) {
  std::string line = fmt::format("{:>10}{:>11}", "--------", "--------");
  for (size_t c = 0; c < columns; ++c) line += fmt::format("{:>14}", "--------");
  return line + "\n";
}

using cell_value = std::optional<double>;  // nullopt: n/a

void print_table(const std::string& title, const std::vector<std::string>& headers,
                 const std::vector<row_result>& rows,
                 const std::function<std::vector<cell_value>(const row_result&)>& values,
                 int precision) {
  fmt::print("\n  {}\n\n", title);
  fmt::print("{}", table_rule(headers.size()));
  fmt::print("{:>10}{:>11}", "IOV_size", "IOV_count");
  for (const auto& h : headers) fmt::print("{:>14}", h);
  fmt::print("\n{}", table_rule(headers.size()));
  for (const auto& row : rows) {
    fmt::print("{:>10}{:>11}", row.block, row.count);
    for (const auto& v : values(row))
      if (v)
        fmt::print("{:>14.{}f}", *v, precision);
      else
        fmt::print("{:>14}", "n/a");
    fmt::print("\n");
  }
}

int ipc_main(MPI_Comm world, int argc, char** argv) {
  CLI::App app{
      "halox-ipc: intra-node copy mechanisms for a buffer cut into blocks (after the mpidt benchmark): "
      "copy-in/copy-out through shared memory, CMA, mapping the owner's memory, MPI "
      "datatypes, XPMEM where present",
      program};
  ipc_options o;
  add_options(app, o);
  if (auto code = parse_command_line(app, argc, argv, world)) return *code;
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(world, &world_rank);
  MPI_Comm_size(world, &world_size);
  run_plan plan = check_options(o, world_size);

  // From here on, checks need the other ranks; all are collective.
  require_one_node(world);
  require_all(world, plan.unavailable);
  require_appendable(world, o.json_path);
  auto provenance = collect_provenance(world);

  // Groups: rank 0 and everybody (one-to-many), or pairs 2k, 2k+1.
  MPI_Comm group_comm;
  MPI_Comm_split(world, o.pairs ? world_rank / 2 : 0, world_rank, &group_comm);
  std::vector<int> owner_of(static_cast<size_t>(world_size));
  for (int r = 0; r < world_size; ++r)
    owner_of[static_cast<size_t>(r)] = o.pairs ? (r % 2 == 0 ? -1 : r - 1) : (r == 0 ? -1 : 0);

  // The context outlives the mechanisms that refer to it (declared first).
  std::unique_ptr<ipc_context> context;
  std::vector<column> columns;
  {
    // A pair agrees on its own errors; the run agrees again, or other pairs wait.
    std::string failed;
    try {
      context = std::make_unique<ipc_context>(group_comm, plan.max_extent);
    } catch (const run_error& e) {
      failed = e.what();
    }
    MPI_Comm_free(&group_comm);
    if (auto agreed = agree_on_error(world, failed); !agreed.empty()) throw run_error(agreed);
    mechanism_options mo;
    mo.max_payload = plan.bufsize;
    mo.chunk_bytes = plan.chunk;
    mo.populate = !o.no_populate;
    for (auto kind : all_mechanisms()) {
      bool selected =
          std::find(plan.mechanisms.begin(), plan.mechanisms.end(), kind) != plan.mechanisms.end();
      if (!selected) continue;
      column c{kind, probe_availability(kind, *context), nullptr};
      // Pairs decide alone; the run needs one answer.
      auto failed = agree_on_error(world, c.status.available ? "" : c.status.reason);
      if (!failed.empty()) c.status = {false, failed};
      if (!c.status.available && plan.explicit_mechanisms)
        throw usage_error(fmt::format("mechanism {} is not available here: {}", to_string(kind),
                                      c.status.reason));
      std::string broken;
      try {
        if (c.status.available) c.mechanism = make_mechanism(kind, *context, mo);
      } catch (const run_error& e) {
        broken = e.what();
      }
      if (auto agreed = agree_on_error(world, broken); !agreed.empty()) throw run_error(agreed);
      columns.push_back(std::move(c));
    }
  }

  const bool owner = context->is_owner();
  const size_t factor = plan.stride_factor;
  // Peers' destinations and the memcpy reference buffers, touched once.
  struct free_deleter {
    void operator()(std::byte* p) const { std::free(p); }
  };
  auto allocate = [](size_t bytes) {
    size_t rounded = round_up_to_page(std::max<size_t>(bytes, 1));
    auto* p = static_cast<std::byte*>(std::aligned_alloc(page_size(), rounded));
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, rounded);
    return std::unique_ptr<std::byte, free_deleter>(p);
  };
  std::unique_ptr<std::byte, free_deleter> destination, memcpy_from, memcpy_to;
  if (!owner) {
    destination = allocate(plan.max_extent);
    memcpy_from = allocate(plan.bufsize);
    memcpy_to = allocate(plan.bufsize);
  }
  std::byte* source = owner ? context->source() : nullptr;

  measure_options mo;
  mo.warmup = o.warmup;
  mo.repetitions = o.nrep;
  mo.cell_seconds = o.cell_time;
  mo.check = !o.no_check;

  std::vector<std::string> headers;
  for (const auto& c : columns) headers.push_back(to_string(c.kind));
  const bool talk = world_rank == 0;
  const int peers = o.pairs ? world_size / 2 : world_size - 1;
  if (talk) {
    fmt::print("halox-ipc {}  {}\n", git_revision(), mpi_library_version());
    fmt::print("  buffer size: {} bytes, layout {}{}\n", plan.bufsize, to_string(plan.layout),
               plan.layout == layout_kind::strided
                   ? fmt::format(" (stride = {} x IOV_size)", o.stride_factor)
                   : std::string(" (blocks back to back)"));
    fmt::print(
        "  {} ranks, {}; owner's buffer shared by {}\n", world_size,
        o.pairs
            ? fmt::format("{} pair{} copying at once (0-1, 2-3, ...)", peers, peers == 1 ? "" : "s")
            : fmt::format("one-to-many: rank 0 owns, {} peer{}", peers, peers == 1 ? "" : "s"),
        to_string(context->how_shared()));
    fmt::print(
        "  copy time [us]: median over repetitions, max over peers; control messages "
        "excluded; verification {}\n",
        o.no_check ? "OFF" : "on");
    std::fflush(stdout);
  }

  std::vector<row_result> rows;
  uint64_t generation = 0;
  int fewest_repetitions = o.nrep, most_repetitions = 0;
  for (size_t block : plan.blocks) {
    block_layout layout = block_layout::make(plan.layout, plan.bufsize, block, factor);
    row_result row;
    row.block = layout.block;
    row.count = layout.count;
    row.memcpy_us =
        measure_memcpy_us(world, !owner, memcpy_from.get(), memcpy_to.get(), plan.bufsize);
    for (auto& c : columns) {
      if (!c.mechanism) continue;
      auto samples =
          measure_cell(*c.mechanism, layout, source, destination.get(), world, generation, mo);
      std::string problem = samples.problem.empty()
                                ? std::string()
                                : fmt::format("{} failed at IOV_size {} ({} layout) on rank {}: {}",
                                              c.mechanism->name(), block, to_string(plan.layout),
                                              world_rank, samples.problem);
      if (auto error = agree_on_error(world, problem); !error.empty()) throw run_error(error);
      row.cells[c.kind] = reduce_cell(samples, world, owner_of);
      fewest_repetitions = std::min(fewest_repetitions, row.cells[c.kind].repetitions);
      most_repetitions = std::max(most_repetitions, row.cells[c.kind].repetitions);
    }
    rows.push_back(std::move(row));
    if (talk) {
      if (rows.size() == 1) {
        fmt::print("\n{}", table_rule(headers.size() + 1));
        fmt::print("{:>10}{:>11}", "IOV_size", "IOV_count");
        for (const auto& h : headers) fmt::print("{:>14}", h);
        fmt::print("{:>14}\n{}", "memcpy", table_rule(headers.size() + 1));
      }
      const auto& r = rows.back();
      fmt::print("{:>10}{:>11}", r.block, r.count);
      for (const auto& c : columns)
        if (auto it = r.cells.find(c.kind); it != r.cells.end())
          fmt::print("{:>14.2f}", it->second.time_us);
        else
          fmt::print("{:>14}", "n/a");
      fmt::print("{:>14.2f}\n", r.memcpy_us);
      std::fflush(stdout);
    }
  }

  auto gbps = [&](double us) {
    return us > 0 ? static_cast<double>(plan.bufsize) / us / 1e3 : 0.0;
  };
  if (talk) {
    auto per_cell = [&](auto value) {
      return [&, value](const row_result& r) {
        std::vector<cell_value> out;
        for (const auto& c : columns) {
          auto it = r.cells.find(c.kind);
          out.push_back(it == r.cells.end() ? cell_value{} : cell_value{value(r, it->second)});
        }
        return out;
      };
    };
    auto with_memcpy = headers;
    with_memcpy.push_back("memcpy");
    print_table(
        "bandwidth [GB/s] (buffer size / copy time)", with_memcpy, rows,
        [&](const row_result& r) {
          auto v =
              per_cell([&](const row_result&, const cell_result& c) { return gbps(c.time_us); })(r);
          v.push_back(gbps(r.memcpy_us));
          return v;
        },
        2);
    print_table("efficiency (memcpy time / copy time; 1 = as fast as memcpy in one process)",
                headers, rows, per_cell([](const row_result& r, const cell_result& c) {
                  return c.time_us > 0 ? r.memcpy_us / c.time_us : 0.0;
                }),
                3);
    print_table("first copy after prepare [us] (cold: mapping, cache fill, registration)", headers,
                rows, per_cell([](const row_result&, const cell_result& c) { return c.first_us; }),
                2);
    print_table(
        "control messages [us] (data-ready + copy-done synchronisation per copy, median, "
        "max over peers; not in the copy time)",
        headers, rows,
        per_cell([](const row_result&, const cell_result& c) { return c.control_us; }), 2);
    fmt::print("\n  repetitions per cell: {}..{} (--nrep {}, --cell-time {} s)\n",
               fewest_repetitions, most_repetitions, o.nrep, o.cell_time);
    for (const auto& c : columns)
      if (!c.status.available) fmt::print("  {}: n/a, {}\n", to_string(c.kind), c.status.reason);
    std::fflush(stdout);
  }

  if (talk && !o.json_path.empty()) {
    nlohmann::json record = provenance;
    record["tool"] = program;
    record["program"] = program;
    record["run_id"] = fmt::format("{}-{}", record["timestamp"].get<std::string>(),
                                   static_cast<long>(::getpid()));
    record["options"] = {{"bufsize", plan.bufsize},
                         {"min_block", plan.blocks.front()},
                         {"max_block", plan.blocks.back()},
                         {"layout", to_string(plan.layout)},
                         {"stride_factor", factor},
                         {"mode", o.pairs ? "pairs" : "one-to-many"},
                         {"mechanisms", headers},
                         {"chunk", plan.chunk},
                         {"nrep", o.nrep},
                         {"warmup", o.warmup},
                         {"cell_time_s", o.cell_time},
                         {"check", !o.no_check},
                         {"populate", !o.no_populate}};
    record["fd_passing"] = to_string(context->how_shared());
    nlohmann::json unavailable = nlohmann::json::object();
    for (const auto& c : columns)
      if (!c.status.available) unavailable[to_string(c.kind)] = c.status.reason;
    record["unavailable"] = unavailable;
    nlohmann::json json_rows = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json cells = nlohmann::json::object();
      for (const auto& c : columns) {
        auto it = r.cells.find(c.kind);
        if (it == r.cells.end()) {
          cells[to_string(c.kind)] = nlohmann::json(nullptr);
          continue;
        }
        const auto& cell = it->second;
        cells[to_string(c.kind)] = {
            {"time_us", cell.time_us},
            {"bandwidth_GBps", gbps(cell.time_us)},
            {"efficiency", cell.time_us > 0 ? r.memcpy_us / cell.time_us : 0.0},
            {"first_us", cell.first_us},
            {"control_us", cell.control_us},
            {"repetitions", cell.repetitions},
            {"verified", !o.no_check},
            {"peers", cell.peers}};
      }
      json_rows.push_back({{"iov_size", r.block},
                           {"iov_count", r.count},
                           {"memcpy_us", r.memcpy_us},
                           {"mechanisms", cells}});
    }
    record["rows"] = json_rows;
    append_json_line(o.json_path, record);
  }
  // Mechanisms and the context hold communicators: gone before MPI_Finalize.
  columns.clear();
  context.reset();
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  return halox::run_mpi_program(program, argc, argv,
                                [&](MPI_Comm world) { return ipc_main(world, argc, argv); });
}
