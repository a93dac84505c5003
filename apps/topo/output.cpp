// halox-topo's output on rank 0: one JSON object, or the tables and pictures.
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "topo_program.hpp"

namespace halox::topo_program {

namespace {

nlohmann::json to_json(const std::array<long long, boundary_count>& a) {
  nlohmann::json j;
  for (int k = 0; k < boundary_count; ++k)
    j[to_string(static_cast<boundary>(k))] = a[static_cast<size_t>(k)];
  return j;
}

// Bytes that cross nodes with --mpicart, the yardstick of the other layouts.
long long mpicart_network_bytes(const topo_plan& plan) {
  return plan.layouts.front().bytes.total[static_cast<size_t>(boundary::node)];
}

double network_vs_mpicart(const layout_result& l, long long network) {
  return static_cast<double>(l.bytes.total[static_cast<size_t>(boundary::node)]) /
         static_cast<double>(network);
}

void print_pictures(const topo_plan& plan) {
  for (const auto& l : plan.layouts) {
    std::vector<int> node, core;
    for (const auto& p : plan.placements) {
      node.push_back(p.node);
      core.push_back(p.object[static_cast<size_t>(index_of(level::core))]);
    }
    fmt::print("\n{}: node of each rank\n{}", l.name, grid_picture(l.dims, l.coords, node));
    fmt::print("\n{}: core of each rank (on its node)\n{}", l.name,
               grid_picture(l.dims, l.coords, core));
  }
}

}  // namespace

void print_json(const topo_options& o, const topo_plan& plan) {
  const long long network = mpicart_network_bytes(plan);
  nlohmann::json j;
  j["topology"] = {{"source", plan.topo.source()}, {"summary", plan.topo.summary()}};
  j["nodes"] = o.nodes;
  j["ranks_per_node"] = plan.per_node;
  j["binding"] = {{"policy", to_string(plan.binding)},
                  {"rank0", plan.placements.front().binding()}};
  j["exchange"] = {
      {"domain", o.domain},           {"halo", o.halo},
      {"fields", o.fields},           {"element_size", o.element_size},
      {"algorithm", o.algorithm},     {"messages_per_rank", messages_per_rank(plan.shape).size()},
      {"periodic", o.layout.periodic}};
  for (const auto& l : plan.layouts) {
    nlohmann::json row = {{"name", l.name},
                          {"options", l.options},
                          {"dims", l.dims},
                          {"total", to_json(l.bytes.total)},
                          {"max_per_rank", to_json(l.bytes.max_per_rank)},
                          {"messages", to_json(l.bytes.messages)},
                          {"max_rank_bytes", l.bytes.max_rank_bytes}};
    if (network > 0) row["inter_node_vs_mpicart"] = network_vs_mpicart(l, network);
    j["layouts"].push_back(row);
  }
  j["auto"] = {{"candidates", plan.choice.candidates}, {"explanation", plan.choice.explain()}};
  fmt::print("{}\n", j.dump(2));
}

void print_tables(const topo_options& o, const topo_plan& plan) {
  const auto& topo = plan.topo;
  const auto& periodic = plan.periodic;
  fmt::print("topology: {} ({} per node)\n",
             topo.is_this_machine() ? std::string("this machine") : topo.source(), topo.summary());
  fmt::print("ranks:    {} node{} x {} = {}, binding {} (rank 0 on hardware threads {})\n", o.nodes,
             o.nodes == 1 ? "" : "s", plan.per_node, plan.placements.size(),
             to_string(plan.binding), plan.placements.front().binding());
  fmt::print(
      "exchange: {}x{}x{} cells per rank, halo {}, {} field{} x {} B, {} ({} messages per "
      "rank), periodic {} {} {}\n\n",
      o.domain[0], o.domain[1], o.domain[2], o.halo, o.fields, o.fields == 1 ? "" : "s",
      o.element_size, o.algorithm, messages_per_rank(plan.shape).size(), periodic[0] ? 1 : 0,
      periodic[1] ? 1 : 0, periodic[2] ? 1 : 0);
  fmt::print("bytes per exchange by the highest hardware boundary they cross:\n");
  std::vector<std::pair<std::string, traffic>> rows;
  for (const auto& l : plan.layouts) rows.push_back({l.name, l.bytes});
  fmt::print("{}\n", traffic_table(rows));
  const long long network = mpicart_network_bytes(plan);
  for (const auto& l : plan.layouts) {
    fmt::print("{:<20} {}", l.name, l.options);
    if (network > 0)
      fmt::print("  (cross-node bytes {:.3f} x mpicart)", network_vs_mpicart(l, network));
    fmt::print("\n");
  }
  fmt::print("\n{}", plan.choice.explain());
  if (o.print) print_pictures(plan);
}

}  // namespace halox::topo_program
