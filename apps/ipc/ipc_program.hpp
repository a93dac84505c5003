// halox-ipc's parts: options, set-up of the mechanisms, measurement, tables and
// the JSON record. Private to the program.
#pragma once

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "halox_programs/ipc/layout.hpp"
#include "halox_programs/ipc/measure.hpp"
#include "halox_programs/ipc/mechanism.hpp"

namespace halox::ipc_program {

using namespace halox::ipc;

inline constexpr const char* program = "halox-ipc";

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

// The measured rows and the range of repetitions their cells took.
struct measured_rows {
  std::vector<row_result> rows;
  int fewest_repetitions = 0, most_repetitions = 0;
};

// options.cpp
void add_options(CLI::App& app, ipc_options& o);
// Depends on the arguments and the number of ranks only: every rank throws
// the same usage_error before any communication.
run_plan check_options(const ipc_options& o, int ranks);

// columns.cpp (collective)
void require_one_node(MPI_Comm world);
// The owner/peer groups' shared context and one column per selected
// mechanism; errors are agreed by all ranks.
std::unique_ptr<ipc_context> open_context(MPI_Comm world, const ipc_options& o,
                                          const run_plan& plan);
std::vector<column> open_columns(MPI_Comm world, ipc_context& context, const ipc_options& o,
                                 const run_plan& plan);

// measurement.cpp (collective); rank 0 prints each row as it is measured.
measured_rows measure_rows(MPI_Comm world, ipc_context& context, std::vector<column>& columns,
                           const ipc_options& o, const run_plan& plan);

// output.cpp (rank 0)
std::vector<std::string> column_headers(const std::vector<column>& columns);
void print_run_header(const ipc_options& o, const run_plan& plan, const ipc_context& context,
                      int world_size);
void print_progress_row(const std::vector<column>& columns, const std::vector<row_result>& rows);
void print_tables(const std::vector<column>& columns, const measured_rows& measured,
                  const ipc_options& o, const run_plan& plan);
// GB/s for the buffer copied in `us` microseconds (0 for no time).
double buffer_gbps(const run_plan& plan, double us);

// record.cpp (rank 0)
nlohmann::json run_record(nlohmann::json provenance, const std::vector<column>& columns,
                          const measured_rows& measured, const ipc_options& o, const run_plan& plan,
                          const ipc_context& context);

}  // namespace halox::ipc_program
