// halox-ipc's JSON record: provenance, the options as applied, one row per block size.
#include <fmt/core.h>
#include <unistd.h>

#include "ipc_program.hpp"

namespace halox::ipc_program {

namespace {

nlohmann::json options_record(const std::vector<column>& columns, const ipc_options& o,
                              const run_plan& plan) {
  return {{"bufsize", plan.bufsize},
          {"min_block", plan.blocks.front()},
          {"max_block", plan.blocks.back()},
          {"layout", to_string(plan.layout)},
          {"stride_factor", plan.stride_factor},
          {"mode", o.pairs ? "pairs" : "one-to-many"},
          {"mechanisms", column_headers(columns)},
          {"chunk", plan.chunk},
          {"nrep", o.nrep},
          {"warmup", o.warmup},
          {"cell_time_s", o.cell_time},
          {"check", !o.no_check},
          {"populate", !o.no_populate}};
}

nlohmann::json row_record(const std::vector<column>& columns, const row_result& r,
                          const ipc_options& o, const run_plan& plan) {
  nlohmann::json cells = nlohmann::json::object();
  for (const auto& c : columns) {
    auto it = r.cells.find(c.kind);
    if (it == r.cells.end()) {
      cells[to_string(c.kind)] = nlohmann::json(nullptr);
      continue;
    }
    const auto& cell = it->second;
    cells[to_string(c.kind)] = {{"time_us", cell.time_us},
                                {"bandwidth_GBps", buffer_gbps(plan, cell.time_us)},
                                {"efficiency", cell.time_us > 0 ? r.memcpy_us / cell.time_us : 0.0},
                                {"first_us", cell.first_us},
                                {"control_us", cell.control_us},
                                {"repetitions", cell.repetitions},
                                {"verified", !o.no_check},
                                {"peers", cell.peers}};
  }
  return {{"iov_size", r.block},
          {"iov_count", r.count},
          {"memcpy_us", r.memcpy_us},
          {"mechanisms", cells}};
}

}  // namespace

nlohmann::json run_record(nlohmann::json provenance, const std::vector<column>& columns,
                          const measured_rows& measured, const ipc_options& o, const run_plan& plan,
                          const ipc_context& context) {
  nlohmann::json record = std::move(provenance);
  record["tool"] = program;
  record["program"] = program;
  record["run_id"] =
      fmt::format("{}-{}", record["timestamp"].get<std::string>(), static_cast<long>(::getpid()));
  record["options"] = options_record(columns, o, plan);
  record["fd_passing"] = to_string(context.how_shared());
  nlohmann::json unavailable = nlohmann::json::object();
  for (const auto& c : columns)
    if (!c.status.available) unavailable[to_string(c.kind)] = c.status.reason;
  record["unavailable"] = unavailable;
  nlohmann::json json_rows = nlohmann::json::array();
  for (const auto& r : measured.rows) json_rows.push_back(row_record(columns, r, o, plan));
  record["rows"] = json_rows;
  return record;
}

}  // namespace halox::ipc_program
