// halox-halo2d: Gropp's 2-D halo-exchange tests (single sender, all
// send/receive, phased) plus persistent, irecv-first and sendrecv variants,
// for 2, 4 and 8 neighbours and message sizes from 0 B to 1 MiB.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "halox_programs/cli.hpp"
#include "halox/common/error.hpp"
#include "halox_programs/provenance.hpp"
#include "halox_programs/halo2d/benchmark.hpp"
#include "halox_programs/halo2d/options.hpp"
#include "halox_programs/halo2d/report.hpp"
#include "halox_programs/program.hpp"

namespace {

using namespace halox;
using namespace halox::halo2d;

constexpr const char* program = "halox-halo2d";

std::string join(const auto& items, std::string_view separator, auto&& to_text) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : std::string(separator)) + to_text(item);
  return out;
}

// Messages that do not leave the process, or go twice to the same peer, are
// legal but change what is measured: say so.
std::vector<std::string> degenerate_mesh_notes(const config& cfg) {
  std::vector<std::string> notes;
  const auto& mesh = cfg.mesh;
  int largest = *std::max_element(cfg.neighbor_counts.begin(), cfg.neighbor_counts.end());
  for (int d = 0; d < (largest > 2 ? 2 : 1); ++d) {
    char axis = d == 0 ? 'x' : 'y';
    std::string which = d == 0 ? "" : " (4 and 8 neighbours)";
    if (mesh.dims[d] == 1 && mesh.periodic)
      notes.push_back(
          fmt::format("the mesh is {}: the {} neighbours{} are the process itself (periodic wrap)",
                      mesh_string(mesh), axis, which));
    if (mesh.dims[d] == 2 && mesh.periodic)
      notes.push_back(fmt::format(
          "the mesh is {}: the -{} and +{} neighbours{} are the same process (two messages to it)",
          mesh_string(mesh), axis, axis, which));
  }
  return notes;
}

std::string header(const config& cfg, const benchmark& bench, int ranks) {
  const auto& mesh = cfg.mesh;
  coord2 sender = single_sender(mesh);
  std::string out;
  out += fmt::format("# {}: {} rank{}, mesh {} ({}), {}, reorder {}\n", program, ranks,
                     ranks == 1 ? "" : "s", mesh_string(mesh),
                     cfg.mesh_from_dims_create ? "MPI_Dims_create" : "--mesh",
                     mesh.periodic ? "periodic" : "not periodic", cfg.reorder ? "on" : "off");
  out += fmt::format("# MPI: {}\n", mpi_library_version());
  out += fmt::format("# single sender: rank {} at {}; phases of the phased test: {}\n",
                     bench.rank_at(sender), to_string(sender),
                     join(cfg.neighbor_counts, ", ", [&](int k) {
                       return fmt::format("{} for {} neighbours", phase_count(mesh, k), k);
                     }));
  out += fmt::format("# exchanges per trial: {}; warm-up {}; best of {} trial{}; verification {}\n",
                     cfg.repetitions > 0 ? std::to_string(cfg.repetitions)
                                         : "auto (~16 MiB per process, 10..1000)",
                     cfg.warmup, cfg.trials, cfg.trials == 1 ? "" : "s", cfg.check ? "on" : "OFF");
  for (const auto& note : degenerate_mesh_notes(cfg)) out += "# note: " + note + "\n";
  return out;
}

nlohmann::json options_json(const config& cfg, int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return {{"command_line", args},
          {"tests", join(cfg.tests, ",", [](test_kind t) { return std::string(name_of(t)); })},
          {"neighbors", cfg.neighbor_counts},
          {"sizes", cfg.sizes},
          {"repetitions",
           cfg.repetitions > 0 ? nlohmann::json(cfg.repetitions) : nlohmann::json("auto")},
          {"warmup", cfg.warmup},
          {"trials", cfg.trials},
          {"check", cfg.check}};
}

nlohmann::json mesh_json(const config& cfg, const benchmark& bench) {
  coord2 sender = single_sender(cfg.mesh);
  nlohmann::json phases = nlohmann::json::object();
  for (int k : cfg.neighbor_counts) phases[std::to_string(k)] = phase_count(cfg.mesh, k);
  return {{"dims", cfg.mesh.dims},
          {"from_dims_create", cfg.mesh_from_dims_create},
          {"periodic", cfg.mesh.periodic},
          {"reorder", cfg.reorder},
          {"single_sender", {{"coords", sender}, {"rank", bench.rank_at(sender)}}},
          {"phases", phases}};
}

int run(MPI_Comm world, int argc, char** argv) {
  options opts;
  CLI::App app{
      "Gropp's 2-D halo-exchange tests: a 2-D process mesh (MPI_Dims_create), contiguous messages "
      "to 2, 4 or 8 neighbours, tests single, all, phased, persistent, irecv-first, sendrecv.",
      program};
  add_options(app, opts);
  if (auto code = parse_command_line(app, argc, argv, world)) return *code;
  int ranks = 1, world_rank = 0;
  MPI_Comm_size(world, &ranks);
  MPI_Comm_rank(world, &world_rank);
  const config cfg = validate(opts, ranks);  // identical on every rank, no communication
  if (!cfg.json.empty()) require_appendable(world, cfg.json);

  const std::size_t largest = cfg.sizes.back();
  benchmark bench(world, cfg.mesh, cfg.reorder, largest);
  const bool root = bench.rank() == 0;
  if (root) {
    fmt::print("{}", header(cfg, bench, ranks));
    std::fflush(stdout);
  }

  std::vector<measurement> results;
  for (auto test : cfg.tests)
    for (int k : cfg.neighbor_counts)
      for (auto bytes : cfg.sizes) {
        measure_settings settings;
        settings.repetitions = repetitions_for(cfg, bytes, k);
        settings.warmup = cfg.warmup;
        settings.trials = cfg.trials;
        settings.check = cfg.check;
        settings.fault = cfg.fault;
        try {
          results.push_back(bench.measure(test, k, bytes, settings));
        } catch (const run_error& e) {
          if (cfg.fault == fault_kind::none) throw;
          throw run_error(fmt::format("{} [fault injected with --inject-fault]", e.what()));
        }
      }

  const table_layout layout{cfg.tests, cfg.neighbor_counts, cfg.sizes};
  if (root) {
    fmt::print(
        "# seconds per message = best trial of (seconds per exchange, max over processes; single: "
        "the sender's) / neighbours\n{}",
        time_table(results, layout, cfg.digits));
    fmt::print("\n# MB/s per process (10^6 B/s) = message bytes / seconds per message\n{}",
               bandwidth_table(results, layout));
    std::fflush(stdout);
  }

  if (!cfg.json.empty()) {
    auto record = collect_provenance(bench.comm());  // collective
    if (root) {
      record["tool"] = program;
      record["program"] = program;
      record["run_id"] = fmt::format("{}-{}", record["timestamp"].get<std::string>(),
                                     static_cast<long>(::getpid()));
      record["options"] = options_json(cfg, argc, argv);
      record["mesh"] = mesh_json(cfg, bench);
      record["time_unit"] = "seconds_per_message = seconds_per_exchange / neighbors";
      record["results"] = results;
      append_json_line(cfg.json, record);
    }
  }
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  return halox::run_mpi_program(program, argc, argv,
                                [&](MPI_Comm world) { return run(world, argc, argv); });
}
