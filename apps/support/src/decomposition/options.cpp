#include "halox_programs/decomposition/options.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>

#include "halox/common/error.hpp"
#include "halox/programs/decomposition/auto.hpp"
#include "halox/programs/decomposition/traffic.hpp"

namespace halox {

namespace {

// The per-level options, top-down as ghexbench's hwcart spells them.
constexpr level grid_levels[] = {level::node, level::socket, level::numa,     level::l3,  level::l2,
                                 level::l1,   level::core,   level::hwthread, level::slot};

std::string level_help(level l) {
  switch (l) {
    case level::node:
      return "Grid of nodes NX NY NZ (hw)";
    case level::slot:
      return "Grid of the ranks of a node by their rank on it NX NY NZ (hw, lowest level; needs "
             "no binding)";
    default:
      return fmt::format("Grid of {} per parent object NX NY NZ (hw)", objects_name(l));
  }
}

bool any_level_grid(const decomposition_options& o) {
  return std::any_of(o.level_grids.begin(), o.level_grids.end(),
                     [](const std::vector<int>& g) { return !g.empty(); });
}

}  // namespace

void add_decomposition_options(CLI::App& app, decomposition_options& options) {
  const char* group = "Decomposition";
  app.add_option("--decomposition", options.kind,
                 "cart (MPI_Cart_create), hw (per-level grids) or auto (chosen from the "
                 "topology); default: hw when a level grid is given, else cart")
      ->check(CLI::IsMember({"cart", "hw", "auto"}))
      ->group(group);
  app.add_option("--mpicart", options.mpicart,
                 "Plain MPI_Cart_create rank grid NX NY NZ (0 = let MPI_Dims_create choose)")
      ->expected(3)
      ->group(group);
  app.add_option("--periodic", options.periodic, "Periodicity per dimension PX PY PZ (0 or 1)")
      ->expected(3)
      ->check(CLI::IsMember({0, 1}))
      ->capture_default_str()
      ->group(group);
  app.add_flag("--reorder", options.reorder, "Let MPI_Cart_create reorder ranks")->group(group);
  for (level l : grid_levels)
    app.add_option("--" + to_string(l), options.level_grids[static_cast<size_t>(index_of(l))],
                   level_help(l))
        ->expected(3)
        ->type_name("NX NY NZ")
        ->group(group);
  app.add_option("--order", options.order,
                 "hw/auto rank numbering: XYZ (x fastest, default), XZY, YXZ, YZX, ZXY, ZYX")
      ->group(group);
  app.add_option("--ranks-per-node", options.ranks_per_node,
                 "Treat groups of N consecutive ranks as nodes (also HALOX_RANKS_PER_NODE; 0 = "
                 "shared-memory nodes)")
      ->check(CLI::Range(0, 1 << 30))
      ->group(group);
  app.add_option("--topology", options.topology,
                 "Node topology: this machine (default), an hwloc XML file, or "
                 "\"synthetic:pack:2 numa:4 l3:4 core:4 pu:1\"")
      ->group(group);
  app.add_option("--assume-binding", options.binding,
                 "Ignore the real binding: spread (default off this machine), core, hwthread; "
                 "real = the process's binding")
      ->check(CLI::IsMember({"real", "spread", "core", "hwthread"}))
      ->group(group);
  app.add_flag("--print", options.print, "Print the rank layout and exit")->group(group);
}

std::string decomposition_kind(const decomposition_options& o) {
  const bool levels = any_level_grid(o);
  std::string kind = o.kind.empty() ? (levels ? "hw" : "cart") : o.kind;
  if (kind == "cart") {
    if (levels)
      throw usage_error("per-level grids (--node, --socket, ...) need --decomposition hw");
    if (!o.order.empty() && !(rank_order::parse(o.order) == rank_order::mpi_cart()))
      throw usage_error(fmt::format(
          "--order {} applies to hw and auto; --mpicart numbers ranks as MPI_Cart_create (ZYX)",
          o.order));
  } else if (kind == "hw") {
    if (!o.mpicart.empty()) throw usage_error("--mpicart and per-level grids exclude each other");
    if (!levels)
      throw usage_error(
          "--decomposition hw needs per-level grids, e.g. --node 2 1 1 --socket 1 2 1 --core 4 1 "
          "1");
  } else if (kind == "auto") {
    if (levels)
      throw usage_error(
          "--decomposition auto chooses the level grids itself; drop --node, "
          "--socket, ...");
  } else {
    throw usage_error(fmt::format("unknown decomposition '{}' (expected cart, hw or auto)", kind));
  }
  if (kind != "cart" && o.reorder) throw usage_error("--reorder applies to --mpicart only");
  return kind;
}

hw_grids level_grids_of(const decomposition_options& o) {
  std::vector<level_grid> levels;
  for (level l : all_levels) {
    const auto& g = o.level_grids[static_cast<size_t>(index_of(l))];
    if (g.empty()) continue;
    if (g.size() != 3)
      throw usage_error(fmt::format("--{} needs three numbers NX NY NZ", to_string(l)));
    levels.push_back({l, {g[0], g[1], g[2]}});
  }
  return hw_grids::make(levels);
}

placement_options placement_of(const decomposition_options& o) {
  placement_options p;
  p.topology = o.topology;
  if (!o.binding.empty()) p.binding = parse_binding_policy(o.binding);
  p.ranks_per_node = o.ranks_per_node;
  return p;
}

rank_order order_of(const decomposition_options& o) {
  return o.order.empty() ? rank_order{} : rank_order::parse(o.order);
}

ivec3 global_rank_grid(const std::vector<int>& mpicart, int ranks) {
  ivec3 dims{0, 0, 0};
  if (!mpicart.empty()) {
    if (mpicart.size() != 3) throw usage_error("--mpicart needs three numbers NX NY NZ");
    dims = {mpicart[0], mpicart[1], mpicart[2]};
  }
  long long fixed = 1;
  for (int d : dims) {
    if (d < 0)
      throw usage_error(fmt::format("rank grid entries must be positive (0 = choose), got {} {} {}",
                                    dims[0], dims[1], dims[2]));
    if (d > 0) fixed *= d;
  }
  const bool all_fixed = dims[0] > 0 && dims[1] > 0 && dims[2] > 0;
  if ((all_fixed && fixed != ranks) || (!all_fixed && ranks % fixed != 0))
    throw usage_error(
        fmt::format("rank grid {}x{}x{} does not fit {} ranks", dims[0], dims[1], dims[2], ranks));
  MPI_Dims_create(ranks, 3, dims.data());
  return dims;
}

std::array<bool, 3> periodic_of(const decomposition_options& o) {
  if (o.periodic.size() != 3) throw usage_error("--periodic needs three values PX PY PZ");
  return {o.periodic[0] != 0, o.periodic[1] != 0, o.periodic[2] != 0};
}

decomposition build_decomposition(MPI_Comm world, const decomposition_options& options,
                                  const exchange_shape& shape) {
  const std::string kind = decomposition_kind(options);
  const auto periodic = periodic_of(options);
  const rank_order order = order_of(options);
  const placement_options placement = placement_of(options);
  effective_binding(placement);  // option conflicts fail here, before any communication
  if (kind == "hw") {
    hw_grids grids = level_grids_of(options);
    int size = 1;
    MPI_Comm_size(world, &size);
    check_rank_count(grids, size);
    return make_hw_decomposition(world, grids, order, periodic, placement);
  }
  if (kind == "auto") {
    int size = 1;
    MPI_Comm_size(world, &size);
    const ivec3 global = global_rank_grid(options.mpicart, size);
    node_view view = gather_node_view(world, placement);
    node_shape node = gather_node_shape(world, view);
    auto choice = choose_auto(node, view.node.count, global, shape, periodic, order);
    return make_hw_decomposition(world, choice.grids, order, periodic, view, "auto");
  }
  ivec3 dims{0, 0, 0};
  if (!options.mpicart.empty()) {
    if (options.mpicart.size() != 3) throw usage_error("--mpicart needs three numbers NX NY NZ");
    dims = {options.mpicart[0], options.mpicart[1], options.mpicart[2]};
  }
  return make_cart_decomposition(world, dims, periodic, options.reorder);
}

std::string grid_picture(const ivec3& dims, const std::vector<ivec3>& coords,
                         const std::vector<int>& value) {
  std::vector<int> at(
      static_cast<size_t>(dims[0]) * static_cast<size_t>(dims[1]) * static_cast<size_t>(dims[2]),
      -1);
  int widest = 1;
  for (size_t r = 0; r < coords.size(); ++r) {
    at[static_cast<size_t>(linear_index(coords[r], dims, rank_order{}))] = value[r];
    widest = std::max(widest, static_cast<int>(fmt::format("{}", value[r]).size()));
  }
  const int label = static_cast<int>(fmt::format("{}", dims[1] - 1).size());
  std::string out;
  for (int z = dims[2] - 1; z >= 0; --z) {
    out += fmt::format("  z = {}\n", z);
    for (int y = dims[1] - 1; y >= 0; --y) {
      out += fmt::format("    y = {:>{}} |", y, label);
      for (int x = 0; x < dims[0]; ++x) {
        int v = at[static_cast<size_t>(linear_index({x, y, z}, dims, rank_order{}))];
        out += v < 0 ? fmt::format(" {:>{}}", "?", widest) : fmt::format(" {:>{}}", v, widest);
      }
      out += "\n";
    }
  }
  return out;
}

namespace {

// The per-rank pictures: for every level shown, the object each rank sits in,
// then the ranks, nodes and cores.
std::string rank_pictures(const std::string& kind, const hw_grids& grids, const ivec3& dims,
                          const std::vector<ivec3>& coords, const std::vector<int>& d_rank,
                          const std::vector<rank_placement>& placements) {
  std::vector<level> shown;
  if (kind == "cart") {
    shown = {level::node, level::core};
  } else {
    for (auto it = grids.levels.rbegin(); it != grids.levels.rend(); ++it)
      shown.push_back(it->where);
  }
  std::string out = "\nper rank, on the rank grid (x to the right, y up, z slices from the top):\n";
  auto picture = [&](const std::string& title, auto value_of) {
    std::vector<int> values;
    for (const auto& p : placements) values.push_back(value_of(p));
    out += "\n" + title + "\n" + grid_picture(dims, coords, values);
  };
  for (level l : shown) {
    if (l == level::node || l == level::core) continue;  // printed below
    picture(fmt::format("level {}: the {} of each rank (logical index on its node)", to_string(l),
                        object_name(l)),
            [&](const rank_placement& p) { return p.object[static_cast<size_t>(index_of(l))]; });
  }
  picture(fmt::format("rank in the {} communicator", kind),
          [&](const rank_placement& p) { return d_rank[static_cast<size_t>(p.rank)]; });
  picture("world rank", [&](const rank_placement& p) { return p.rank; });
  picture("node", [&](const rank_placement& p) { return p.node; });
  picture("core (logical index on its node, first core of the binding)",
          [&](const rank_placement& p) {
            return p.object[static_cast<size_t>(index_of(level::core))];
          });
  return out;
}

// Notes on ranks whose binding makes the byte counts approximate.
std::string binding_notes(const std::vector<rank_placement>& placements, int size) {
  int spanning = 0, unbound = 0;
  for (const auto& p : placements) {
    if (p.unbound)
      ++unbound;
    else if (p.spans[static_cast<size_t>(index_of(level::core))])
      ++spanning;
  }
  std::string out;
  if (unbound > 0 && size > 1)
    out += fmt::format(
        "note: {} rank{} not bound; a binding spanning "
        "several objects of a level counts as crossing it\n",
        unbound, unbound == 1 ? " is" : "s are");
  if (spanning > 0)
    out += fmt::format("note: {} rank{} bound to more than one core; counted likewise\n", spanning,
                       spanning == 1 ? " is" : "s are");
  return out;
}

}  // namespace

std::string describe_layout(MPI_Comm world, const decomposition_options& options,
                            const exchange_shape& shape, const decomposition& d) {
  const std::string kind = decomposition_kind(options);
  const placement_options placement = placement_of(options);
  const binding_policy binding = effective_binding(placement);
  const auto periodic = d.periodic();
  node_view view = gather_node_view(world, placement);
  std::optional<auto_choice> choice;
  if (kind == "auto") {
    node_shape node = gather_node_shape(world, view);
    choice = choose_auto(node, view.node.count, d.dims(), shape, periodic, d.order());
  }
  const rank_placement& mine = view.ranks[static_cast<size_t>(view.node.local_rank)];
  auto placements = gather_placements(world, mine, 0);
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  const int group = resolve_ranks_per_node(world, options.ranks_per_node);
  int local[4] = {d.rank(), d.coords()[0], d.coords()[1], d.coords()[2]};
  std::vector<int> gathered(static_cast<size_t>(rank == 0 ? 4 * size : 4));
  MPI_Gather(local, 4, MPI_INT, gathered.data(), 4, MPI_INT, 0, world);
  if (rank != 0) return {};

  std::vector<ivec3> coords(static_cast<size_t>(size));
  std::vector<int> d_rank(static_cast<size_t>(size)), world_rank(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    d_rank[static_cast<size_t>(r)] = gathered[static_cast<size_t>(4 * r)];
    world_rank[static_cast<size_t>(r)] = r;
    coords[static_cast<size_t>(r)] = {gathered[static_cast<size_t>(4 * r + 1)],
                                      gathered[static_cast<size_t>(4 * r + 2)],
                                      gathered[static_cast<size_t>(4 * r + 3)]};
  }
  const ivec3 dims = d.dims();
  std::string out = fmt::format(
      "decomposition {}: {}x{}x{} = {} ranks, numbered {} ({} fastest), periodic {} {} {}\n", kind,
      dims[0], dims[1], dims[2], size, d.order().name(), d.order().name().substr(0, 1),
      periodic[0] ? 1 : 0, periodic[1] ? 1 : 0, periodic[2] ? 1 : 0);
  hw_grids grids;
  if (kind == "hw") grids = level_grids_of(options);
  if (choice) {
    out += choice->explain();
    grids = choice->grids;
  }
  if (kind == "cart")
    out += fmt::format("levels: --mpicart {} {} {} (MPI_Cart_create{})\n", dims[0], dims[1],
                       dims[2], options.reorder ? ", reorder" : "");
  else
    out += fmt::format("levels: {} --order {}\n", grids.options(kind == "hw"), d.order().name());
  out += fmt::format("nodes: {} x {} ranks ({}); topology {} ({}); binding {}\n", view.node.count,
                     size / std::max(view.node.count, 1),
                     group > 0 ? fmt::format("groups of {} consecutive ranks", group)
                               : std::string("shared-memory nodes"),
                     options.topology.empty() ? "this machine" : options.topology,
                     view.topology_summary, to_string(binding));

  out += rank_pictures(kind, grids, dims, coords, d_rank, placements);

  // Bytes per exchange, with the ranks where they really sit.
  traffic t = count_traffic(coords, dims, periodic, placements, shape);
  out += fmt::format(
      "\nbytes per exchange by the highest hardware boundary they cross "
      "({}, {} field{} x {} B, halo {}):\n",
      to_string(shape.alg), shape.nfields, shape.nfields == 1 ? "" : "s", shape.element_size,
      shape.halo.max());
  out += traffic_table({{kind, t}});
  out += binding_notes(placements, size);
  return out;
}

}  // namespace halox
