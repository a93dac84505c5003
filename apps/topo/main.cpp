// halox-topo: plan rank placements without running an exchange.
//
// For a node topology (this machine, an hwloc XML file or a synthetic
// description), a number of nodes and ranks per node, and an exchange (domain,
// halo, fields), prints the bytes per exchange that stay in a core or cross a
// core, L3, NUMA, socket or node boundary, per rank (max) and in total, for
// --mpicart, for the given per-level grids (hw) and for auto. All ranks are
// laid out as a pure function in one process.
#include <fmt/core.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "halox/common/cli.hpp"
#include "halox/common/error.hpp"
#include "halox/decomposition/auto.hpp"
#include "halox/decomposition/hw.hpp"
#include "halox/decomposition/options.hpp"
#include "halox/decomposition/traffic.hpp"
#include "halox/topology.hpp"

namespace {

using namespace halox;

struct topo_options {
  decomposition_options layout;  // --mpicart, level grids, --order, --topology, --assume-binding
  int nodes = 1;
  int ranks_per_node = 0;  // 0: one per core
  std::vector<int> domain{64, 64, 64};
  int halo = 1;
  int fields = 1;
  int element_size = static_cast<int>(exchange_shape{}.element_size);
  std::string algorithm = "standard";
  bool json = false;
};

struct layout_result {
  std::string name, options;
  ivec3 dims{1, 1, 1};
  std::vector<ivec3> coords;
  traffic bytes;
};

nlohmann::json to_json(const std::array<long long, boundary_count>& a) {
  nlohmann::json j;
  for (int k = 0; k < boundary_count; ++k)
    j[to_string(static_cast<boundary>(k))] = a[static_cast<size_t>(k)];
  return j;
}

int run(MPI_Comm world, int argc, char** argv) {
  CLI::App app{
      "halox-topo: bytes per halo exchange by hardware boundary crossed, for rank layouts on a "
      "topology (no exchange is run)"};
  topo_options o;
  add_decomposition_options(app, o.layout);
  // Node groups are given by --nodes and --ranks-per-node here.
  app.remove_option(app.get_option("--ranks-per-node"));
  app.remove_option(app.get_option("--print"));
  app.remove_option(app.get_option("--decomposition"));
  app.remove_option(app.get_option("--reorder"));
  app.add_option("--nodes", o.nodes, "Number of nodes")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  app.add_option("--ranks-per-node", o.ranks_per_node, "Ranks per node (default: one per core)")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--domain", o.domain, "Cells per rank NX NY NZ")
      ->expected(3)
      ->capture_default_str();
  app.add_option("--halo", o.halo, "Halo width")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_option("--fields", o.fields, "Number of fields")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  app.add_option("--element-size", o.element_size, "Bytes per cell and field")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  app.add_option("--algorithm", o.algorithm, "standard, staged or faces")->capture_default_str();
  bool print = false;
  app.add_flag("--print", print, "Also print, per layout, the node and core of every rank");
  app.add_flag("--json", o.json, "Print the result as one JSON object (exact byte counts)");
  if (auto code = parse_command_line(app, argc, argv, world)) return *code;
  int rank = 0;
  MPI_Comm_rank(world, &rank);

  exchange_shape shape;
  for (int d = 0; d < 3; ++d) {
    if (o.domain[static_cast<size_t>(d)] < 1)
      throw usage_error("--domain entries must be positive");
    shape.domain_per_rank[d] = o.domain[static_cast<size_t>(d)];
  }
  shape.halo = halo_widths::uniform(o.halo);
  shape.nfields = o.fields;
  shape.element_size = static_cast<size_t>(o.element_size);
  shape.alg = parse_algorithm(o.algorithm);
  validate_grid(local_grid(shape.domain_per_rank, shape.halo));
  const auto periodic = periodic_of(o.layout);
  const rank_order order = order_of(o.layout);

  topology topo = topology::load(o.layout.topology);
  placement_options where;
  where.topology = o.layout.topology;
  if (!o.layout.binding.empty()) where.binding = parse_binding_policy(o.layout.binding);
  binding_policy binding = effective_binding(where);
  if (binding == binding_policy::real)  // planning: the ranks are not running here
    binding = binding_policy::spread;
  const int cores = topo.count(level::core);
  const int per_node = o.ranks_per_node > 0 ? o.ranks_per_node
                       : cores > 0          ? cores
                                            : topo.count(level::hwthread);
  const auto placements = assumed_placements(topo, binding, o.nodes, per_node);
  const int ranks = static_cast<int>(placements.size());

  std::vector<layout_result> layouts;
  {  // MPI_Cart_create without reorder: rank r at its row-major coordinates.
    layout_result l;
    l.dims = global_rank_grid(o.layout.mpicart, ranks);
    l.name = fmt::format("mpicart {}x{}x{}", l.dims[0], l.dims[1], l.dims[2]);
    l.options = fmt::format("--mpicart {} {} {}", l.dims[0], l.dims[1], l.dims[2]);
    for (int r = 0; r < ranks; ++r)
      l.coords.push_back(coords_of(r, l.dims, rank_order::mpi_cart()));
    layouts.push_back(std::move(l));
  }
  hw_grids given = level_grids_of(o.layout);
  const bool has_hw = std::any_of(o.layout.level_grids.begin(), o.layout.level_grids.end(),
                                  [](const std::vector<int>& g) { return !g.empty(); });
  if (has_hw) {
    layout_result l;
    l.dims = given.dims();
    l.options = given.options(true) + " --order " + order.name();
    l.name = fmt::format("hw {}x{}x{}", l.dims[0], l.dims[1], l.dims[2]);
    l.coords = map_ranks(placements, given, order);
    layouts.push_back(std::move(l));
  }
  std::vector<rank_placement> node0(placements.begin(), placements.begin() + per_node);
  auto choice =
      choose_auto(shape_of_node(node0), o.nodes, layouts.front().dims, shape, periodic, order);
  {
    layout_result l;
    l.dims = choice.grids.dims();
    l.options = choice.grids.options() + " --order " + order.name();
    l.name = fmt::format("auto {}x{}x{}", l.dims[0], l.dims[1], l.dims[2]);
    l.coords = map_ranks(placements, choice.grids, order);
    layouts.push_back(std::move(l));
  }
  for (auto& l : layouts) l.bytes = count_traffic(l.coords, l.dims, periodic, placements, shape);
  if (rank != 0) return exit_ok;

  const auto messages = messages_per_rank(shape);
  const long long network = layouts.front().bytes.total[static_cast<size_t>(boundary::node)];
  if (o.json) {
    nlohmann::json j;
    j["topology"] = {{"source", topo.source()}, {"summary", topo.summary()}};
    j["nodes"] = o.nodes;
    j["ranks_per_node"] = per_node;
    j["binding"] = {{"policy", to_string(binding)}, {"rank0", placements.front().binding()}};
    j["exchange"] = {{"domain", o.domain},           {"halo", o.halo},
                     {"fields", o.fields},           {"element_size", o.element_size},
                     {"algorithm", o.algorithm},     {"messages_per_rank", messages.size()},
                     {"periodic", o.layout.periodic}};
    for (const auto& l : layouts) {
      nlohmann::json row = {{"name", l.name},
                            {"options", l.options},
                            {"dims", l.dims},
                            {"total", to_json(l.bytes.total)},
                            {"max_per_rank", to_json(l.bytes.max_per_rank)},
                            {"messages", to_json(l.bytes.messages)},
                            {"max_rank_bytes", l.bytes.max_rank_bytes}};
      if (network > 0)
        row["inter_node_vs_mpicart"] =
            static_cast<double>(l.bytes.total[static_cast<size_t>(boundary::node)]) /
            static_cast<double>(network);
      j["layouts"].push_back(row);
    }
    j["auto"] = {{"candidates", choice.candidates}, {"explanation", choice.explain()}};
    fmt::print("{}\n", j.dump(2));
    return exit_ok;
  }

  fmt::print("topology: {} ({} per node)\n",
             topo.is_this_machine() ? std::string("this machine") : topo.source(), topo.summary());
  fmt::print("ranks:    {} node{} x {} = {}, binding {} (rank 0 on hardware threads {})\n", o.nodes,
             o.nodes == 1 ? "" : "s", per_node, ranks, to_string(binding),
             placements.front().binding());
  fmt::print(
      "exchange: {}x{}x{} cells per rank, halo {}, {} field{} x {} B, {} ({} messages per "
      "rank), periodic {} {} {}\n\n",
      o.domain[0], o.domain[1], o.domain[2], o.halo, o.fields, o.fields == 1 ? "" : "s",
      o.element_size, o.algorithm, messages.size(), periodic[0] ? 1 : 0, periodic[1] ? 1 : 0,
      periodic[2] ? 1 : 0);
  fmt::print("bytes per exchange by the highest hardware boundary they cross:\n");
  std::vector<std::pair<std::string, traffic>> rows;
  for (const auto& l : layouts) rows.push_back({l.name, l.bytes});
  fmt::print("{}\n", traffic_table(rows));
  for (const auto& l : layouts) {
    fmt::print("{:<20} {}", l.name, l.options);
    if (network > 0)
      fmt::print("  (cross-node bytes {:.3f} x mpicart)",
                 static_cast<double>(l.bytes.total[static_cast<size_t>(boundary::node)]) /
                     static_cast<double>(network));
    fmt::print("\n");
  }
  fmt::print("\n{}", choice.explain());
  if (print) {
    for (const auto& l : layouts) {
      std::vector<int> node, core;
      for (const auto& p : placements) {
        node.push_back(p.node);
        core.push_back(p.object[static_cast<size_t>(index_of(level::core))]);
      }
      fmt::print("\n{}: node of each rank\n{}", l.name, grid_picture(l.dims, l.coords, node));
      fmt::print("\n{}: core of each rank (on its node)\n{}", l.name,
                 grid_picture(l.dims, l.coords, core));
    }
  }
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  return halox::run_mpi_program("halox-topo", argc, argv,
                                [&](MPI_Comm world) { return run(world, argc, argv); });
}
