// halox-ipc's tables on rank 0: the run's header, one row per block size as it
// is measured, then bandwidth, efficiency, first copy and control tables.
#include <fmt/core.h>

#include <cstdio>
#include <functional>

#include "halox_programs/provenance.hpp"
#include "ipc_program.hpp"

namespace halox::ipc_program {

namespace {

std::string table_rule(size_t columns) {
  std::string line = fmt::format("{:>10}{:>11}", "--------", "--------");
  for (size_t c = 0; c < columns; ++c) line += fmt::format("{:>14}", "--------");
  return line + "\n";
}

using cell_value = std::optional<double>;  // nullopt: n/a
using row_values = std::function<std::vector<cell_value>(const row_result&)>;

void print_table(const std::string& title, const std::vector<std::string>& headers,
                 const std::vector<row_result>& rows, const row_values& values, int precision) {
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

// One value per column from its cell; n/a where the column has none.
row_values per_cell(const std::vector<column>& columns,
                    std::function<double(const row_result&, const cell_result&)> value) {
  return [&columns, value](const row_result& r) {
    std::vector<cell_value> out;
    for (const auto& c : columns) {
      auto it = r.cells.find(c.kind);
      out.push_back(it == r.cells.end() ? cell_value{} : cell_value{value(r, it->second)});
    }
    return out;
  };
}

}  // namespace

double buffer_gbps(const run_plan& plan, double us) {
  return us > 0 ? static_cast<double>(plan.bufsize) / us / 1e3 : 0.0;
}

std::vector<std::string> column_headers(const std::vector<column>& columns) {
  std::vector<std::string> headers;
  for (const auto& c : columns) headers.push_back(to_string(c.kind));
  return headers;
}

void print_run_header(const ipc_options& o, const run_plan& plan, const ipc_context& context,
                      int world_size) {
  const int peers = o.pairs ? world_size / 2 : world_size - 1;
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
      to_string(context.how_shared()));
  fmt::print(
      "  copy time [us]: median over repetitions, max over peers; control messages "
      "excluded; verification {}\n",
      o.no_check ? "OFF" : "on");
  std::fflush(stdout);
}

void print_progress_row(const std::vector<column>& columns, const std::vector<row_result>& rows) {
  const auto headers = column_headers(columns);
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

void print_tables(const std::vector<column>& columns, const measured_rows& measured,
                  const ipc_options& o, const run_plan& plan) {
  const auto headers = column_headers(columns);
  const auto& rows = measured.rows;
  auto with_memcpy = headers;
  with_memcpy.push_back("memcpy");
  auto bandwidth = per_cell(columns, [&](const row_result&, const cell_result& c) {
    return buffer_gbps(plan, c.time_us);
  });
  print_table(
      "bandwidth [GB/s] (buffer size / copy time)", with_memcpy, rows,
      [&](const row_result& r) {
        auto v = bandwidth(r);
        v.push_back(buffer_gbps(plan, r.memcpy_us));
        return v;
      },
      2);
  print_table("efficiency (memcpy time / copy time; 1 = as fast as memcpy in one process)", headers,
              rows,
              per_cell(columns,
                       [](const row_result& r, const cell_result& c) {
                         return c.time_us > 0 ? r.memcpy_us / c.time_us : 0.0;
                       }),
              3);
  print_table(
      "first copy after prepare [us] (cold: mapping, cache fill, registration)", headers, rows,
      per_cell(columns, [](const row_result&, const cell_result& c) { return c.first_us; }), 2);
  print_table(
      "control messages [us] (data-ready + copy-done synchronisation per copy, median, "
      "max over peers; not in the copy time)",
      headers, rows,
      per_cell(columns, [](const row_result&, const cell_result& c) { return c.control_us; }), 2);
  fmt::print("\n  repetitions per cell: {}..{} (--nrep {}, --cell-time {} s)\n",
             measured.fewest_repetitions, measured.most_repetitions, o.nrep, o.cell_time);
  for (const auto& c : columns)
    if (!c.status.available) fmt::print("  {}: n/a, {}\n", to_string(c.kind), c.status.reason);
  std::fflush(stdout);
}

}  // namespace halox::ipc_program
