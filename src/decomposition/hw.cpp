#include "halox/programs/decomposition/hw.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/yielding_mpi.hpp"
#include "halox/common/error.hpp"

namespace halox {

namespace {

constexpr const char* binding_hint =
    "bind each rank to its own cores (mpirun --bind-to core, srun --cpu-bind=cores), or plan "
    "with placement_options::topology and placement_options::binding";

std::string grid_text(const ivec3& g) {
  return fmt::format("{}x{}x{}", g[0], g[1], g[2]);
}
int volume(const ivec3& g) {
  return g[0] * g[1] * g[2];
}
ivec3 times(const ivec3& a, const ivec3& b) {
  return {a[0] * b[0], a[1] * b[1], a[2] * b[2]};
}

// "0-3,7" for a sorted list of ranks.
std::string rank_list(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

// The object of level l a rank sits in; slots are numbered by local rank.
int object_at(const rank_placement& p, level l) {
  return l == level::slot ? p.local_rank : p.object[index_of(l)];
}

std::string where_in_node(level l, int object, int node) {
  if (l == level::node) return fmt::format("node {}", node);
  return fmt::format("{} {} of node {}", object_name(l), object, node);
}

}  // namespace

hw_grids hw_grids::make(std::vector<level_grid> levels) {
  std::sort(levels.begin(), levels.end(),
            [](const level_grid& a, const level_grid& b) { return a.where < b.where; });
  for (size_t i = 0; i < levels.size(); ++i) {
    const auto& g = levels[i];
    if (g.dims[0] < 1 || g.dims[1] < 1 || g.dims[2] < 1)
      throw usage_error(fmt::format("--{} {} {} {}: grid entries must be positive",
                                    to_string(g.where), g.dims[0], g.dims[1], g.dims[2]));
    if (i > 0 && levels[i - 1].where == g.where)
      throw usage_error(fmt::format("--{} is given twice", to_string(g.where)));
  }
  if (levels.empty() || levels.back().where != level::node)
    levels.push_back({level::node, {1, 1, 1}});
  return hw_grids{std::move(levels)};
}

ivec3 hw_grids::dims() const {
  ivec3 d{1, 1, 1};
  for (const auto& g : levels) d = times(d, g.dims);
  return d;
}

ivec3 hw_grids::node_block() const {
  ivec3 d{1, 1, 1};
  for (const auto& g : levels)
    if (g.where != level::node) d = times(d, g.dims);
  return d;
}

int hw_grids::ranks() const {
  return volume(dims());
}
int hw_grids::ranks_per_node() const {
  return volume(node_block());
}
int hw_grids::nodes() const {
  const level_grid* n = find(level::node);
  return n ? volume(n->dims) : 1;
}

const level_grid* hw_grids::find(level l) const {
  for (const auto& g : levels)
    if (g.where == l) return &g;
  return nullptr;
}

std::string hw_grids::options(bool keep_trivial) const {
  std::string out;
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    if (!keep_trivial && it->where != level::node && volume(it->dims) == 1) continue;
    if (!out.empty()) out += ' ';
    out +=
        fmt::format("--{} {} {} {}", to_string(it->where), it->dims[0], it->dims[1], it->dims[2]);
  }
  return out;
}

void check_rank_count(const hw_grids& grids, int ranks) {
  if (grids.ranks() == ranks) return;
  std::string product;
  for (auto it = grids.levels.rbegin(); it != grids.levels.rend(); ++it)
    product += fmt::format("{}{} {}", product.empty() ? "" : " x ", to_string(it->where),
                           grid_text(it->dims));
  throw usage_error(
      fmt::format("the level grids ({}) make a {} grid of {} ranks, but there are {} ranks",
                  product, grid_text(grids.dims()), grids.ranks(), ranks));
}

void check_node_count(const hw_grids& grids, int nodes) {
  if (grids.nodes() == nodes) return;
  throw usage_error(fmt::format(
      "node level: grid {} needs {} nodes, but the ranks are on {} node{} (nodes are "
      "shared-memory nodes; ranks_per_node N or HALOX_RANKS_PER_NODE=N groups N consecutive "
      "ranks as a node)",
      grid_text(grids.find(level::node)->dims), grids.nodes(), nodes, nodes == 1 ? "" : "s"));
}

ivec3 node_origin(int node, const hw_grids& grids, const rank_order& order) {
  const level_grid* n = grids.find(level::node);
  ivec3 node_dims = n ? n->dims : ivec3{1, 1, 1};
  return times(coords_of(node, node_dims, order), grids.node_block());
}

namespace {

// The levels below the node; a 1x1x1 level the topology lacks changes nothing.
std::vector<level_grid> levels_below_node(const std::vector<rank_placement>& ranks,
                                          const hw_grids& grids) {
  std::vector<level_grid> levels;
  for (const auto& g : grids.levels) {
    if (g.where == level::node) continue;
    bool absent = std::any_of(ranks.begin(), ranks.end(),
                              [&](const rank_placement& p) { return object_at(p, g.where) < 0; });
    if (absent && !ranks.empty()) {
      if (volume(g.dims) == 1) continue;
      throw usage_error(fmt::format("--{} {}: the topology has no {}", to_string(g.where),
                                    grid_text(g.dims), objects_name(g.where)));
    }
    levels.push_back(g);
  }
  return levels;
}

void check_node_holds_the_levels(const std::vector<rank_placement>& ranks,
                                 const std::vector<level_grid>& levels, int node) {
  const int n = static_cast<int>(ranks.size());
  int expected = 1;
  for (const auto& g : levels) expected *= volume(g.dims);
  if (n == expected) return;
  std::string product;
  for (auto it = levels.rbegin(); it != levels.rend(); ++it)
    product += fmt::format("{}{} {}", product.empty() ? "" : " x ", to_string(it->where),
                           grid_text(it->dims));
  throw usage_error(
      fmt::format("node {} holds {} rank{}, but the levels below the node ({}) "
                  "need {} per node; ranks are spread unevenly over the nodes",
                  node, n, n == 1 ? "" : "s", product.empty() ? "none" : product, expected));
}

// Hardware levels need each rank bound to its own hardware threads.
void check_own_hardware_threads(const std::vector<rank_placement>& ranks, int node) {
  for (const auto& p : ranks)
    if (p.unbound)
      throw usage_error(fmt::format(
          "rank {} is not bound: it may run on every hardware thread of node {} ({}); {}", p.rank,
          node, p.binding(), binding_hint));
  std::map<int, int> owner;
  for (const auto& p : ranks)
    for (int pu : p.pus) {
      auto [it, fresh] = owner.emplace(pu, p.rank);
      if (fresh) continue;
      const auto& other = *std::find_if(ranks.begin(), ranks.end(),
                                        [&](const auto& q) { return q.rank == it->second; });
      throw usage_error(fmt::format(
          "ranks {} and {} of node {} are bound to overlapping hardware threads ({} and {}); "
          "{}",
          other.rank, p.rank, node, other.binding(), p.binding(), binding_hint));
    }
}

// Each object of a level must lie inside one object of the level above.
void check_levels_nest(const std::vector<rank_placement>& ranks,
                       const std::vector<level_grid>& levels, int node) {
  for (size_t i = 0; i + 1 < levels.size(); ++i) {
    const level lo = levels[i].where, hi = levels[i + 1].where;
    std::map<int, int> parent_of;
    for (const auto& p : ranks) {
      int child = object_at(p, lo), parent = object_at(p, hi);
      auto [it, fresh] = parent_of.emplace(child, parent);
      if (!fresh && it->second != parent)
        throw usage_error(fmt::format(
            "{} holds ranks in {} {} and {}: the two levels are not nested on this topology; "
            "give only one of --{} and --{}",
            where_in_node(lo, child, node), objects_name(hi), it->second, parent, to_string(lo),
            to_string(hi)));
    }
  }
}

// parent (the objects of the levels above) -> object of this level -> ranks
using children_map = std::map<std::vector<int>, std::map<int, std::vector<int>>>;

// Throws usage_error unless every parent holds as many occupied objects as
// the level's grid has places.
void check_occupied(const children_map& children, const level_grid& here, level parent, int node) {
  const int want = volume(here.dims);
  for (const auto& [key, objects] : children) {
    if (static_cast<int>(objects.size()) == want) continue;
    std::string found;
    int shown = 0;
    for (const auto& [object, members] : objects) {
      if (shown++ == 6) {
        found += ", ...";
        break;
      }
      found += fmt::format("{}{} {}: ranks {}", found.empty() ? "" : ", ",
                           here.where == level::slot ? "slot" : object_name(here.where), object,
                           rank_list(members));
    }
    std::string in =
        key.empty() ? fmt::format("node {}", node) : where_in_node(parent, key.front(), node);
    throw usage_error(fmt::format(
        "{} level: grid {} needs {} occupied {} in each {}, but {} has ranks on {} ({}); change "
        "--{} or the binding ({})",
        to_string(here.where), grid_text(here.dims), want, objects_name(here.where),
        object_name(parent), in, objects.size(), found, to_string(here.where), binding_hint));
  }
}

// Top-down: number the occupied objects of each level inside each parent, place them.
std::vector<ivec3> place_in_levels(const std::vector<rank_placement>& ranks,
                                   const std::vector<level_grid>& levels, const rank_order& order,
                                   int node) {
  const size_t m = levels.size();
  std::vector<ivec3> stride(m, ivec3{1, 1, 1});
  for (size_t i = 1; i < m; ++i) stride[i] = times(stride[i - 1], levels[i - 1].dims);
  std::vector<ivec3> coords(ranks.size(), ivec3{0, 0, 0});
  for (size_t i = m; i-- > 0;) {
    const level here = levels[i].where;
    auto parent_key = [&](const rank_placement& p) {
      std::vector<int> key;
      for (size_t j = i + 1; j < m; ++j) key.push_back(object_at(p, levels[j].where));
      return key;
    };
    children_map children;
    for (const auto& p : ranks) children[parent_key(p)][object_at(p, here)].push_back(p.rank);
    check_occupied(children, levels[i], i + 1 < m ? levels[i + 1].where : level::node, node);
    for (size_t r = 0; r < ranks.size(); ++r) {
      const auto& objects = children[parent_key(ranks[r])];
      int k =
          static_cast<int>(std::distance(objects.begin(), objects.find(object_at(ranks[r], here))));
      ivec3 c = coords_of(k, levels[i].dims, order);
      for (int d = 0; d < 3; ++d) coords[r][d] += c[d] * stride[i][d];
    }
  }
  return coords;
}

}  // namespace

std::vector<ivec3> map_node(const std::vector<rank_placement>& ranks, const hw_grids& grids,
                            const rank_order& order) {
  const int node = ranks.empty() ? 0 : ranks.front().node;
  const std::vector<level_grid> levels = levels_below_node(ranks, grids);
  check_node_holds_the_levels(ranks, levels, node);
  const bool hardware = std::any_of(levels.begin(), levels.end(),
                                    [](const level_grid& g) { return is_hardware(g.where); });
  if (hardware && ranks.size() > 1) check_own_hardware_threads(ranks, node);
  check_levels_nest(ranks, levels, node);
  return place_in_levels(ranks, levels, order, node);
}

std::vector<ivec3> map_ranks(const std::vector<rank_placement>& ranks, const hw_grids& grids,
                             const rank_order& order) {
  check_rank_count(grids, static_cast<int>(ranks.size()));
  int nodes = 0;
  for (const auto& p : ranks) nodes = std::max(nodes, p.node + 1);
  check_node_count(grids, nodes);
  std::vector<std::vector<size_t>> members(static_cast<size_t>(nodes));
  for (size_t r = 0; r < ranks.size(); ++r)
    members[static_cast<size_t>(ranks[r].node)].push_back(r);
  std::vector<ivec3> coords(ranks.size());
  for (int node = 0; node < nodes; ++node) {
    auto& idx = members[static_cast<size_t>(node)];
    std::sort(idx.begin(), idx.end(),
              [&](size_t a, size_t b) { return ranks[a].local_rank < ranks[b].local_rank; });
    std::vector<rank_placement> node_ranks;
    for (size_t r : idx) node_ranks.push_back(ranks[r]);
    auto local = map_node(node_ranks, grids, order);
    ivec3 origin = node_origin(node, grids, order);
    for (size_t k = 0; k < idx.size(); ++k)
      for (int d = 0; d < 3; ++d) coords[idx[k]][d] = origin[d] + local[k][d];
  }
  return coords;
}

binding_policy effective_binding(const placement_options& options) {
  const bool this_machine = options.topology.empty() || options.topology == "this";
  if (!options.binding) return this_machine ? binding_policy::real : binding_policy::spread;
  if (*options.binding == binding_policy::real && !this_machine)
    throw usage_error(
        fmt::format("placement_options::binding real needs the topology of this machine, not '{}'",
                    options.topology));
  return *options.binding;
}

// ---- placements over MPI ---------------------------------------------------

namespace {

void serialize(const rank_placement& p, std::vector<int>& out) {
  out.push_back(p.rank);
  out.push_back(p.node);
  out.push_back(p.local_rank);
  out.push_back(p.unbound ? 1 : 0);
  for (int v : p.object) out.push_back(v);
  for (bool v : p.spans) out.push_back(v ? 1 : 0);
  out.push_back(static_cast<int>(p.pus.size()));
  out.insert(out.end(), p.pus.begin(), p.pus.end());
}

rank_placement deserialize(const int*& in) {
  rank_placement p;
  p.rank = *in++;
  p.node = *in++;
  p.local_rank = *in++;
  p.unbound = *in++ != 0;
  for (auto& v : p.object) v = *in++;
  for (auto&& v : p.spans) v = *in++ != 0;
  int npus = *in++;
  p.pus.assign(in, in + npus);
  in += npus;
  return p;
}

std::vector<rank_placement> exchange_placements(MPI_Comm comm, const rank_placement& mine,
                                                int root /* -1: all */) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int> buffer;
  serialize(mine, buffer);
  int length = static_cast<int>(buffer.size());
  std::vector<int> lengths(static_cast<size_t>(size)), offsets(static_cast<size_t>(size));
  if (root < 0)
    yielding_allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
  else
    yielding_gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm);
  int total = 0;
  for (int i = 0; i < size; ++i) {
    offsets[static_cast<size_t>(i)] = total;
    total += lengths[static_cast<size_t>(i)];
  }
  std::vector<int> all(static_cast<size_t>(std::max(total, 1)));
  if (root < 0)
    yielding_allgatherv(buffer.data(), length, MPI_INT, all.data(), lengths.data(), offsets.data(),
                        MPI_INT, comm);
  else
    MPI_Gatherv(buffer.data(), length, MPI_INT, all.data(), lengths.data(), offsets.data(), MPI_INT,
                root, comm);
  std::vector<rank_placement> placements;
  if (root >= 0 && rank != root) return placements;
  const int* in = all.data();
  for (int i = 0; i < size; ++i) placements.push_back(deserialize(in));
  return placements;
}

}  // namespace

std::vector<rank_placement> gather_placements(MPI_Comm comm, const rank_placement& mine, int root) {
  return exchange_placements(comm, mine, root);
}

node_view gather_node_view(MPI_Comm world, const placement_options& options) {
  const binding_policy policy = effective_binding(options);
  const int group_size = resolve_ranks_per_node(world, options.ranks_per_node);
  std::string error;
  std::optional<topology> topo;
  try {
    topo.emplace(topology::load(options.topology));
  } catch (const usage_error& e) {
    error = e.what();
  }
  require_all(world, error);

  node_view view;
  view.topology_summary = topo->summary();
  MPI_Comm node_comm = node_communicator(world, group_size);
  view.node = describe_node(world, node_comm);
  rank_placement mine;
  try {
    mine = topo->place(topo->assumed_binding(policy, view.node.local_rank, view.node.local_size));
  } catch (const usage_error& e) {
    error = e.what();
  }
  try {
    require_all(world, error);
  } catch (...) {
    MPI_Comm_free(&node_comm);
    throw;
  }
  MPI_Comm_rank(world, &mine.rank);
  mine.node = view.node.index;
  mine.local_rank = view.node.local_rank;
  mine.object[index_of(level::slot)] = view.node.local_rank;
  mine.object[index_of(level::node)] = view.node.index;
  view.ranks = exchange_placements(node_comm, mine, -1);
  MPI_Comm_free(&node_comm);
  return view;
}

decomposition make_hw_decomposition(MPI_Comm world, const hw_grids& grids, const rank_order& order,
                                    const std::array<bool, 3>& periodic,
                                    const placement_options& placement, const std::string& kind) {
  int size = 1;
  MPI_Comm_size(world, &size);
  check_rank_count(grids, size);
  return make_hw_decomposition(world, grids, order, periodic, gather_node_view(world, placement),
                               kind);
}

decomposition make_hw_decomposition(MPI_Comm world, const hw_grids& grids, const rank_order& order,
                                    const std::array<bool, 3>& periodic, const node_view& view,
                                    const std::string& kind) {
  int size = 1;
  MPI_Comm_size(world, &size);
  check_rank_count(grids, size);
  check_node_count(grids, view.node.count);

  std::string error;
  std::vector<ivec3> local;
  try {
    local = map_node(view.ranks, grids, order);
  } catch (const usage_error& e) {
    error = e.what();
  }
  require_all(world, error);

  ivec3 coords = node_origin(view.node.index, grids, order);
  for (int d = 0; d < 3; ++d) coords[d] += local[static_cast<size_t>(view.node.local_rank)][d];
  const ivec3 dims = grids.dims();
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(world, 0, linear_index(coords, dims, order), &comm);
  decomposition result(comm, dims, periodic, order, kind);
  // The split numbers ranks by their coordinates; a mismatch is a bug here.
  require_all(world, result.coords() == coords
                         ? std::string()
                         : fmt::format("internal error: hw coordinates {},{},{} became {},{},{}",
                                       coords[0], coords[1], coords[2], result.coords()[0],
                                       result.coords()[1], result.coords()[2]));
  return result;
}

}  // namespace halox
