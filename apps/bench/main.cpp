// halox-bench: the 3-D halo-exchange benchmark (after the ghexbench cartex benchmark). Every choice
// is a run-time option; list-valued options run the whole matrix in one job,
// so that ratios between variants are measured in the same run.
#include <unistd.h>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cstdio>

#include "bench_program.hpp"
#include "halox_programs/cli.hpp"
#include "halox/common/error.hpp"
#include "halox_programs/provenance.hpp"
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
             configurations, o.rounds_auto ? std::string("auto") : std::to_string(o.rounds));
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

// An automatic choice is measured again in the second round when the probe
// before its trials and the one after its first timed exchanges disagree: the
// trials then compared candidates on a different machine.
bool recheck_choice(const result& r) {
  if (!r.cfg.automatic() || r.round_probes.size() != 1) return false;
  const probe_spread s = spread_of(r.round_probes);
  return s.moved_mode() || s.disturbed();
}

// Collective (--rounds auto): whether another round of the shape [first, end)
// is due; rank 0 decides from its per-round medians and tells the others.
bool another_round(const bench_options& o, const decomposition& decomp, std::vector<result>& results,
                   size_t first, size_t end, int rounds_done, double elapsed_s, double first_rounds_s) {
  constexpr int most_rounds = 12;
  int more = 0;
  if (decomp.rank() == 0) {
    const double budget =
        o.rounds_budget > 0 ? o.rounds_budget : std::max(3 * first_rounds_s, settle_min_span_s);
    size_t base = end;
    for (size_t i = first; i < end; ++i)
      if (results[i].cfg.variant() == o.baseline) base = i;
    bool all_settled = true;
    for (size_t i = first; i < end; ++i) {
      const auto ratios =
          base < end ? per_round_ratios(results[base].round_medians, results[i].round_medians)
                     : std::nullopt;
      results[i].settled = settled(ratios ? ratios->per_round : results[i].round_medians);
      all_settled = all_settled && results[i].settled;
    }
    const bool short_span = elapsed_s < settle_min_span_s;
    more = rounds_done < settle_min_rounds ||
           ((!all_settled || short_span) && rounds_done < most_rounds && elapsed_s < budget);
  }
  MPI_Bcast(&more, 1, MPI_INT, 0, decomp.comm());
  return more != 0;
}

// The shapes of the matrix (it lists them in blocks): [first, end) of the
// configurations that share field memory.
std::vector<std::pair<size_t, size_t>> shapes_of(const std::vector<config>& matrix) {
  std::vector<std::pair<size_t, size_t>> shapes;
  for (size_t first = 0; first < matrix.size();) {
    size_t end = first + 1;
    while (end < matrix.size() && matrix[end].shape() == matrix[first].shape() &&
           matrix[end].halo == matrix[first].halo)
      ++end;
    shapes.emplace_back(first, end);
    first = end;
  }
  return shapes;
}

// One round of the configurations [first, end) on the shape's memory, the
// machine probed around each turn; the first round builds each exchange
// afresh (measuring what it measures) and verifies it, the later ones rebuild
// it as the first measured it.
void run_round(const decomposition& decomp, const bench_options& o, const std::vector<config>& matrix,
               const std::vector<std::string>& hosts, machine_probe& probe, probe_sample& last,
               std::vector<result>& results, std::pair<size_t, size_t> shape, int round,
               shape_memory& mem) {
  for (size_t i = shape.first; i < shape.second; ++i) {
    const bool recheck = round == 1 && recheck_choice(results[i]);
    const bool fresh = round == 0 || recheck;
    result r = run_any(decomp, o, matrix[i], fresh ? std::nullopt : results[i].decided, hosts, mem,
                       fresh && !o.no_check);
    const probe_sample before = last;
    last = probe.take();
    r.round_probes.push_back({before, last});
    if (round == 0) {
      results[i] = std::move(r);
      continue;
    }
    if (recheck) {
      results[i].rechecked = true;
      results[i].rechosen = r.chosen;
      results[i].decided = r.decided;
    }
    merge(results[i], r);
  }
}

// --rounds auto: shape by shape, rounds until the shape's cells settle.
// --rounds N: round by round over all shapes, so that each cell's rounds span
// the launch: a machine that changes state during it (the baseline of one
// minute against the next) shows as rounds that disagree, where N rounds run
// back to back could all fall in one state. Each visit of a shape allocates
// its memory afresh (one shape's at a time, as before).
std::vector<result> run_matrix(const decomposition& decomp, const bench_options& o,
                               const std::vector<config>& matrix,
                               const std::vector<std::string>& hosts, machine_probe& probe,
                               probe_sample& last) {
  std::vector<result> results(matrix.size());
  const auto shapes = shapes_of(matrix);
  if (!o.rounds_auto) {
    for (int round = 0; round < o.rounds; ++round)
      for (const auto& shape : shapes) {
        shape_memory mem(page_size_from(o.field_pages));
        run_round(decomp, o, matrix, hosts, probe, last, results, shape, round, mem);
      }
    return results;
  }
  for (const auto& shape : shapes) {
    shape_memory mem(page_size_from(o.field_pages));
    const double shape_start = MPI_Wtime();
    double first_rounds_s = 0;
    for (int round = 0; another_round(o, decomp, results, shape.first, shape.second, round,
                                      MPI_Wtime() - shape_start, first_rounds_s);
         ++round) {
      run_round(decomp, o, matrix, hosts, probe, last, results, shape, round, mem);
      if (round + 1 == settle_min_rounds) first_rounds_s = MPI_Wtime() - shape_start;
    }
  }
  return results;
}

void print_probe_cost(const launch_probes& launch) {
  fmt::print("\nmachine probe: {} samples, {:.1f} ms, {:.2f} % of the run's {:.1f} s\n",
             launch.samples, launch.cost_s * 1e3,
             launch.wall_s > 0 ? 100 * launch.cost_s / launch.wall_s : 0.0, launch.wall_s);
}

// --rounds auto: the cells whose per-round ratio did not settle.
void print_unsettled(const std::vector<result>& results, const bench_options& o) {
  if (!o.rounds_auto) return;
  std::vector<std::string> cells;
  for (const auto& r : results)
    if (!r.settled) cells.push_back(fmt::format("{} [{}]", r.cfg.variant(), r.cfg.shape()));
  if (cells.empty())
    fmt::print("rounds auto: every cell's per-round ratio settled within {:.0f} %\n",
               100 * settle_within);
  else
    for (const auto& line :
         wrap(fmt::format("rounds auto: {} of {} cells did not settle within {:.0f} % before the "
                          "budget ran out{}: {}",
                          cells.size(), results.size(), 100 * settle_within,
                          cells.size() > 3 ? " (the first 3; every one in the records' stability.settled)"
                                           : "",
                          fmt::join(cells.begin(),
                                    cells.begin() + static_cast<long>(std::min<size_t>(cells.size(), 3)),
                                    ", ")),
              summary_width, "  "))
      fmt::print("{}\n", line);
}

// Rank 0: every configuration, the records, the summary, the breakdown and,
// when a cell is unstable, one closing line.
void report(const std::vector<result>& results, const bench_options& o,
            const decomposition& decomp, const nlohmann::json& provenance,
            const std::string& run_id, const launch_probes& launch) {
  std::vector<summary> stats;
  for (const auto& r : results) stats.push_back(summarize(r.samples));
  const std::vector<cell_verdict> verdicts = judge_cells(results, o.baseline);
  const launch_stability judged = judge_launch(results, verdicts, launch);
  for (size_t i = 0; i < results.size(); ++i) {
    if (!o.quiet) print_result(results[i], stats[i]);
    if (!o.json_path.empty())
      append_json_line(o.json_path, to_json_record(results[i], stats[i], verdicts[i], o, decomp,
                                                   provenance, run_id, launch, judged));
  }
  print_summary(results, stats, verdicts, o.baseline);
  if (o.breakdown_table) print_breakdown(results);
  print_probe_cost(launch);
  print_unsettled(results, o);
  if (!judged.summary.empty()) fmt::print("\n{}\n", fmt::join(judged.summary, "\n"));
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
  machine_probe probe(decomp);
  launch_probes launch;
  launch.pairs = probe.pairs_json();
  const double launch_start = MPI_Wtime();
  launch.start = probe.take();
  probe_sample last = launch.start;
  const std::vector<result> results = run_matrix(decomp, o, matrix, hosts, probe, last);
  launch.end = probe.take();
  launch.wall_s = MPI_Wtime() - launch_start;
  launch.cost_s = probe.total_cost_s();
  launch.samples = probe.samples_taken();
  if (decomp.rank() == 0) report(results, o, decomp, provenance, run_id, launch);
  return exit_ok;
}

}  // namespace
}  // namespace halox::bench

int main(int argc, char** argv) {
  return halox::run_mpi_program(halox::bench::program, argc, argv, [&](MPI_Comm world) {
    return halox::bench::bench_main(world, argc, argv);
  });
}
