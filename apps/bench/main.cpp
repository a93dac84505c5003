// halox-bench: the 3-D halo-exchange benchmark (after the ghexbench cartex benchmark). Every choice
// is a run-time option; list-valued options run the whole matrix in one job,
// so that ratios between variants are measured in the same run.
#include <unistd.h>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cstdio>

#include "bench.hpp"
#include "halox_programs/common/cli.hpp"
#include "halox/common/error.hpp"
#include "halox_programs/common/provenance.hpp"
#include "halox/device.hpp"
#include "halox_programs/program.hpp"

namespace halox::bench {
namespace {

// Collective: the matrix of configurations, agreed by all ranks (a transport
// missing on one node is found before the first collective that depends on it).
std::vector<config> agreed_matrix(MPI_Comm world, bench_options& o) {
  const bool on_device = o.memory == "device";
  auto transports_here = on_device ? device_transport_choices(world)
                                   : choice_names(available_transport_choices(world));
  std::vector<config> matrix;
  std::string problem;
  try {
    if (on_device && o.timing == "compute")
      throw usage_error("--timing compute steps on the host: it takes host memory, not --memory device");
    if (on_device && !cuda::unavailable().empty())
      throw usage_error("--memory device: " + cuda::unavailable());
    matrix = build_matrix(o, transports_here);
  } catch (const usage_error& e) {
    problem = e.what();
  }
  require_all(world, problem);
  return matrix;
}

// Collective: everything that can be wrong with the grids and the memory,
// found before the first exchange.
void check_before_running(const decomposition& decomp, bench_options& o,
                          const std::vector<config>& matrix) {
  const ivec3 smallest = smallest_extent(o, decomp.dims());
  for (const auto& cfg : matrix) {
    if (!o.global_domain.empty()) (void)subdomain_of_global(decomp, to_ivec3(o.global_domain));
    validate_grid(local_grid(smallest, cfg.halo));
  }
  require_fits_in_memory(decomp.comm(), o, matrix, decomp.dims());
  check_shared_memory(decomp, o, matrix);
  if (decomp.rank() == 0 && !o.shared_memory_fallback.empty())
    fmt::print("halox-bench: note: {}; --memory auto takes private memory instead\n",
               o.shared_memory_fallback);
}

void print_header(const decomposition& decomp, const bench_options& o, size_t configurations) {
  fmt::print("halox-bench {}  {}\n", git_revision(), mpi_library_version());
  fmt::print("ranks {}  grid {} ({}, order {}, periodic {})  {} {}  timing {}  {} configurations x {} "
             "round(s)\n",
             decomp.size(), fmt::join(decomp.dims(), "x"), decomp.kind(), decomp.order().name(),
             fmt::format("{:d} {:d} {:d}", decomp.periodic()[0], decomp.periodic()[1],
                         decomp.periodic()[2]),
             o.global_domain.empty() ? "domain per rank" : "global domain",
             fmt::join(o.global_domain.empty() ? o.domain : o.global_domain, "x"), o.timing,
             configurations, o.rounds);
  if (o.memory == "device") fmt::print("GPU {} (CUDA {})\n", cuda::device_name(), cuda::version());
  std::fflush(stdout);
}

// Rank 0's run id for every rank: the records of one invocation share it.
std::string agreed_run_id(MPI_Comm comm, const nlohmann::json& provenance) {
  std::string run_id = fmt::format("{}-{}", provenance["timestamp"].get<std::string>(),
                                   static_cast<long>(::getpid()));
  int length = static_cast<int>(run_id.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  run_id.resize(static_cast<size_t>(length));
  MPI_Bcast(run_id.data(), length, MPI_CHAR, 0, comm);
  return run_id;
}

// Shape by shape (the matrix lists them in blocks): every round runs all
// variants of the shape on its memory; the first round verifies.
std::vector<result> run_matrix(const decomposition& decomp, const bench_options& o,
                               const std::vector<config>& matrix,
                               const std::vector<std::string>& hosts) {
  std::vector<result> results(matrix.size());
  for (size_t first = 0; first < matrix.size();) {
    size_t end = first + 1;
    while (end < matrix.size() && matrix[end].shape() == matrix[first].shape() &&
           matrix[end].halo == matrix[first].halo)
      ++end;
    shape_memory mem;
    for (int round = 0; round < o.rounds; ++round)
      for (size_t i = first; i < end; ++i) {
        result r = run_any(decomp, o, matrix[i], round == 0 ? std::nullopt : results[i].decided,
                           hosts, mem, !o.no_check);
        if (round == 0)
          results[i] = std::move(r);
        else
          merge(results[i], r);
      }
    first = end;
  }
  return results;
}

// Rank 0: every configuration, the records, the summary and the breakdown.
void report(const std::vector<result>& results, const bench_options& o,
            const decomposition& decomp, const nlohmann::json& provenance,
            const std::string& run_id) {
  std::vector<summary> stats;
  for (const auto& r : results) stats.push_back(summarize(r.samples));
  for (size_t i = 0; i < results.size(); ++i) {
    if (!o.quiet) print_result(results[i], stats[i]);
    if (!o.json_path.empty())
      append_json_line(o.json_path,
                       to_json_record(results[i], stats[i], o, decomp, provenance, run_id));
  }
  print_summary(results, stats, o.baseline);
  if (o.breakdown_table) print_breakdown(results);
}

int bench_main(MPI_Comm world, int argc, char** argv) {
  CLI::App app{"halox-bench: 3-D halo-exchange benchmark (standard, staged and faces exchanges, "
               "many fields, several transports, cell-exact verification)",
               program};
  bench_options o;
  add_options(app, o);
  if (auto code = parse_command_line(app, argc, argv, world)) return *code;
  o.transport_given = app.count("--transport") > 0;
  int world_rank = 0;
  MPI_Comm_rank(world, &world_rank);
  if (o.list_transports) {
    if (world_rank == 0) fmt::print("{}", list_transports());
    return exit_ok;
  }
  if (app.count("--domain") > 0 && !o.global_domain.empty())
    throw usage_error("--domain and --global-domain contradict each other: give one");
  const std::vector<config> matrix = agreed_matrix(world, o);
  if (o.memory == "device") cuda::select_device(node_rank(world));

  const auto& first = matrix.front();
  exchange_shape shape{o.global_domain.empty() ? to_ivec3(o.domain) : to_ivec3(o.global_domain),
                       first.halo, first.nfields, element_size(first.type), first.alg};
  decomposition decomp = build_decomposition(world, o.decomp, shape);
  if (o.decomp.print) {
    auto layout = describe_layout(world, o.decomp, shape, decomp);
    if (world_rank == 0) fmt::print("{}", layout);
    return exit_ok;
  }
  check_before_running(decomp, o, matrix);
  require_appendable(world, o.json_path);
  auto provenance = collect_provenance(decomp.comm());
  if (decomp.rank() == 0 && !o.quiet) print_header(decomp, o, matrix.size());
  const std::string run_id = agreed_run_id(decomp.comm(), provenance);
  std::vector<std::string> hosts;
  for (const auto& entry : provenance["rank_map"]) hosts.push_back(entry["host"].get<std::string>());
  const std::vector<result> results = run_matrix(decomp, o, matrix, hosts);
  if (decomp.rank() == 0) report(results, o, decomp, provenance, run_id);
  return exit_ok;
}

}  // namespace
}  // namespace halox::bench

int main(int argc, char** argv) {
  return halox::run_mpi_program(halox::bench::program, argc, argv, [&](MPI_Comm world) {
    return halox::bench::bench_main(world, argc, argv);
  });
}
