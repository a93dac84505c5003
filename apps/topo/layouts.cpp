// halox-topo's layouts: every rank placed by the assumed binding, then laid
// out by --mpicart, by the given per-level grids (hw) and by auto (and, to
// predict times, auto's runners-up).
#include <fmt/core.h>

#include <algorithm>

#include "halox/programs/decomposition/hw.hpp"
#include "topo_program.hpp"

namespace halox::topo_program {

namespace {

// MPI_Cart_create without reorder: rank r at its row-major coordinates.
layout_result mpicart_layout(const topo_options& o, int ranks) {
  layout_result l;
  l.dims = global_rank_grid(o.layout.mpicart, ranks);
  l.name = fmt::format("mpicart {}x{}x{}", l.dims[0], l.dims[1], l.dims[2]);
  l.options = fmt::format("--mpicart {} {} {}", l.dims[0], l.dims[1], l.dims[2]);
  for (int r = 0; r < ranks; ++r) l.coords.push_back(coords_of(r, l.dims, rank_order::mpi_cart()));
  return l;
}

layout_result hw_layout(const topo_options& o, const std::vector<rank_placement>& placements,
                        const rank_order& order) {
  hw_grids given = level_grids_of(o.layout);
  layout_result l;
  l.dims = given.dims();
  l.options = given.options(true) + " --order " + order.name();
  l.name = fmt::format("hw {}x{}x{}", l.dims[0], l.dims[1], l.dims[2]);
  l.coords = map_ranks(placements, given, order);
  return l;
}

// A hw layout of the given grids: auto's choice ("auto") or a runner-up ("auto#2").
layout_result grids_layout(const std::string& label, const hw_grids& grids,
                           const std::vector<rank_placement>& placements,
                           const rank_order& order) {
  layout_result l;
  l.dims = grids.dims();
  l.options = grids.options() + " --order " + order.name();
  l.name = fmt::format("{} {}x{}x{}", label, l.dims[0], l.dims[1], l.dims[2]);
  l.coords = map_ranks(placements, grids, order);
  return l;
}

}  // namespace

topo_plan plan_layouts(const topo_options& o) {
  // A bad exchange or layout option is reported before a bad topology.
  const exchange_shape shape = exchange_of(o);
  const auto periodic = periodic_of(o.layout);
  const rank_order order = order_of(o.layout);
  topo_plan p(topology::load(o.layout.topology));
  p.shape = shape;
  p.periodic = periodic;
  placement_options where;
  where.topology = o.layout.topology;
  if (!o.layout.binding.empty()) where.binding = parse_binding_policy(o.layout.binding);
  p.binding = effective_binding(where);
  if (p.binding == binding_policy::real)  // planning: the ranks are not running here
    p.binding = binding_policy::spread;
  const int cores = p.topo.count(level::core);
  p.per_node = o.ranks_per_node > 0 ? o.ranks_per_node
               : cores > 0          ? cores
                                    : p.topo.count(level::hwthread);
  p.placements = assumed_placements(p.topo, p.binding, o.nodes, p.per_node);
  const int ranks = static_cast<int>(p.placements.size());

  p.layouts.push_back(mpicart_layout(o, ranks));
  const bool has_hw = std::any_of(o.layout.level_grids.begin(), o.layout.level_grids.end(),
                                  [](const std::vector<int>& g) { return !g.empty(); });
  if (has_hw) p.layouts.push_back(hw_layout(o, p.placements, order));
  std::vector<rank_placement> node0(p.placements.begin(), p.placements.begin() + p.per_node);
  p.choice = choose_auto(shape_of_node(node0), o.nodes, p.layouts.front().dims, p.shape, p.periodic,
                         order);
  p.layouts.push_back(grids_layout("auto", p.choice.grids, p.placements, order));
  // predict: auto's runners-up by bytes are candidates too; time may rank them otherwise.
  if (!o.model.empty())
    for (size_t i = 1; i < p.choice.best.size(); ++i)
      p.layouts.push_back(
          grids_layout(fmt::format("auto#{}", i + 1), p.choice.best[i].grids, p.placements, order));
  for (auto& l : p.layouts) {
    l.bytes = count_traffic(l.coords, l.dims, p.periodic, p.placements, p.shape);
    l.loads = rank_loads(l.coords, l.dims, p.periodic, p.placements, p.shape);
  }
  return p;
}

}  // namespace halox::topo_program
