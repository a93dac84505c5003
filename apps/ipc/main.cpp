// halox-ipc: intra-node copy mechanisms for non-contiguous data (after the mpidt benchmark).
// An owner's buffer is cut into IOV_count blocks of IOV_size bytes; peers copy
// the blocks with each mechanism in turn. One table row per block size, one
// column per mechanism, all measured in the same run.
//   options.cpp      the options and their checks (before any communication)
//   columns.cpp      one node, the owner/peer groups, one column per mechanism
//   measurement.cpp  per block size: the memcpy reference and every column's cell
//   output.cpp       the tables on rank 0
//   record.cpp       the JSON record
#include <mpi.h>

#include "halox_programs/cli.hpp"
#include "halox/common/error.hpp"
#include "halox_programs/provenance.hpp"
#include "halox_programs/program.hpp"
#include "ipc_program.hpp"

namespace {

using namespace halox;
using namespace halox::ipc_program;

int ipc_main(MPI_Comm world, int argc, char** argv) {
  CLI::App app{
      "halox-ipc: intra-node copy mechanisms for a buffer cut into blocks (after the mpidt "
      "benchmark): "
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

  // The context outlives the mechanisms that refer to it (declared first).
  std::unique_ptr<ipc_context> context = open_context(world, o, plan);
  std::vector<column> columns = open_columns(world, *context, o, plan);
  const bool talk = world_rank == 0;
  if (talk) print_run_header(o, plan, *context, world_size);
  measured_rows measured = measure_rows(world, *context, columns, o, plan);
  if (talk) print_tables(columns, measured, o, plan);
  if (talk && !o.json_path.empty())
    append_json_line(o.json_path,
                     run_record(std::move(provenance), columns, measured, o, plan, *context));
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
