// halox-topo: plan rank placements without running an exchange.
//
// For a node topology (this machine, an hwloc XML file or a synthetic
// description), a number of nodes and ranks per node, and an exchange (domain,
// halo, fields), prints the bytes per exchange that stay in a core or cross a
// core, L3, NUMA, socket or node boundary, per rank (max) and in total, for
// --mpicart, for the given per-level grids (hw) and for auto. All ranks are
// laid out as a pure function in one process. `halox-topo predict --model F`
// prints each layout's time per exchange from a time model instead.
//   options.cpp  the options and the exchange they describe
//   layouts.cpp  the placements and the mpicart, hw and auto layouts' traffic
//   output.cpp   JSON, or tables and pictures
//   predict.cpp  the predict subcommand: model file, predicted times
#include <mpi.h>

#include "halox_programs/cli.hpp"
#include "halox/common/error.hpp"
#include "halox_programs/program.hpp"
#include "topo_program.hpp"

namespace {

using namespace halox;
using namespace halox::topo_program;

int run(MPI_Comm world, int argc, char** argv) {
  CLI::App app{
      "halox-topo: bytes per halo exchange by hardware boundary crossed, for rank layouts on a "
      "topology (no exchange is run)"};
  topo_options o;
  add_options(app, o);
  const CLI::App* predict = add_predict_command(app, o);
  if (auto code = parse_command_line(app, argc, argv, world)) return *code;
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  // A bad model file is reported before a bad topology, like a bad option.
  const time_parameters model = predict->parsed() ? load_model(o.model) : time_parameters{};
  const topo_plan plan = plan_layouts(o);
  if (rank != 0) return exit_ok;
  if (predict->parsed() && o.json)
    print_prediction_json(o, plan, model);
  else if (predict->parsed())
    print_prediction_table(o, plan, model);
  else if (o.json)
    print_json(o, plan);
  else
    print_tables(o, plan);
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  return halox::run_mpi_program("halox-topo", argc, argv,
                                [&](MPI_Comm world) { return run(world, argc, argv); });
}
