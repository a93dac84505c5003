#include "halox/extend/topology.hpp"

#include <fmt/core.h>
#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <unistd.h>

#include "halox/common/error.hpp"

namespace halox {

namespace {

constexpr std::string_view synthetic_prefix = "synthetic:";

// hwloc type of a hardware level; slot and node have none.
bool hwloc_type_of(level l, hwloc_obj_type_t& type) {
  switch (l) {
    case level::hwthread:
      type = HWLOC_OBJ_PU;
      return true;
    case level::core:
      type = HWLOC_OBJ_CORE;
      return true;
    case level::l1:
      type = HWLOC_OBJ_L1CACHE;
      return true;
    case level::l2:
      type = HWLOC_OBJ_L2CACHE;
      return true;
    case level::l3:
      type = HWLOC_OBJ_L3CACHE;
      return true;
    case level::numa:
      type = HWLOC_OBJ_NUMANODE;
      return true;
    case level::socket:
      type = HWLOC_OBJ_PACKAGE;
      return true;
    default:
      return false;
  }
}

struct bitmap {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  bitmap() = default;
  bitmap(const bitmap&) = delete;
  bitmap& operator=(const bitmap&) = delete;
  ~bitmap() { hwloc_bitmap_free(set); }
};

std::string compress_ranges(const std::vector<int>& sorted) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", sorted[i]) : fmt::format("{}-{}", sorted[i], sorted[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string to_string(level l) {
  static const char* names[] = {"slot", "hwthread", "core",   "l1",  "l2",
                                "l3",   "numa",     "socket", "node"};
  return names[index_of(l)];
}

std::string object_name(level l) {
  static const char* names[] = {"slot",     "hardware thread", "core",   "L1 cache", "L2 cache",
                                "L3 cache", "NUMA node",       "socket", "node"};
  return names[index_of(l)];
}

std::string objects_name(level l) {
  static const char* names[] = {"slots",      "hardware threads", "cores",
                                "L1 caches",  "L2 caches",        "L3 caches",
                                "NUMA nodes", "sockets",          "nodes"};
  return names[index_of(l)];
}

bool is_hardware(level l) {
  return l != level::slot && l != level::node;
}

int rank_placement::domain(level l) const {
  int id = object[index_of(l)];
  if (id >= 0 && spans[index_of(l)]) return -2;
  return id;
}

std::string rank_placement::binding() const {
  return compress_ranges(pus);
}

binding_policy parse_binding_policy(const std::string& name) {
  if (name == "real") return binding_policy::real;
  if (name == "spread") return binding_policy::spread;
  if (name == "core") return binding_policy::core;
  if (name == "hwthread") return binding_policy::hwthread;
  throw usage_error(
      fmt::format("unknown binding policy '{}' (expected real, spread, core or hwthread)", name));
}

std::string to_string(binding_policy p) {
  switch (p) {
    case binding_policy::real:
      return "real";
    case binding_policy::spread:
      return "spread";
    case binding_policy::core:
      return "core";
    case binding_policy::hwthread:
      return "hwthread";
  }
  return "?";
}

struct topology::impl {
  hwloc_topology_t topo = nullptr;
  ~impl() {
    if (topo) hwloc_topology_destroy(topo);
  }
  hwloc_obj_t pu(int logical) const {
    return hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, static_cast<unsigned>(logical));
  }
};

topology::topology(std::unique_ptr<impl> p, std::string source, bool this_machine)
    : impl_(std::move(p)), source_(std::move(source)), this_machine_(this_machine) {}
topology::topology(topology&&) noexcept = default;
topology& topology::operator=(topology&&) noexcept = default;
topology::~topology() = default;

topology topology::load(const std::string& source) {
  auto p = std::make_unique<impl>();
  if (hwloc_topology_init(&p->topo) != 0) {
    p->topo = nullptr;
    throw usage_error("cannot initialise hwloc");
  }
  hwloc_topology_set_io_types_filter(p->topo, HWLOC_TYPE_FILTER_KEEP_NONE);
  bool this_machine = source.empty() || source == "this";
  std::string shown = this_machine ? std::string("this machine") : source;
  if (source.rfind(synthetic_prefix, 0) == 0) {
    std::string description = source.substr(synthetic_prefix.size());
    if (hwloc_topology_set_synthetic(p->topo, description.c_str()) != 0)
      throw usage_error(fmt::format(
          "invalid synthetic topology '{}' (hwloc syntax, e.g. \"pack:2 numa:4 l3:4 core:4 pu:1\")",
          description));
  } else if (!this_machine) {
    // hwloc reports a missing file only through errno; say it plainly.
    if (!std::ifstream(source).good())
      throw usage_error(
          fmt::format("cannot read topology file '{}': {}", source, std::strerror(errno)));
    if (hwloc_topology_set_xml(p->topo, source.c_str()) != 0)
      throw usage_error(fmt::format("cannot use '{}' as an hwloc XML topology", source));
  }
  if (hwloc_topology_load(p->topo) != 0)
    throw usage_error(
        fmt::format("cannot load the topology of {} (hwloc: {})", shown, std::strerror(errno)));
  if (hwloc_get_nbobjs_by_type(p->topo, HWLOC_OBJ_PU) <= 0)
    throw usage_error(fmt::format("the topology of {} has no hardware threads", shown));
  return topology(std::move(p), source.empty() ? "this" : source, this_machine);
}

int topology::count(level l) const {
  if (l == level::node) return 1;
  hwloc_obj_type_t type;
  if (!hwloc_type_of(l, type)) return 0;
  return std::max(0, hwloc_get_nbobjs_by_type(impl_->topo, type));
}

size_t topology::cache_bytes(level l) const {
  hwloc_obj_type_t type;
  if (!hwloc_type_of(l, type)) return 0;
  hwloc_obj_t cache = hwloc_get_obj_by_type(impl_->topo, type, 0);
  return cache && cache->attr ? static_cast<size_t>(cache->attr->cache.size) : 0;
}

size_t this_machine_l2_bytes() {
  static const size_t bytes = [] {
#if defined(_SC_LEVEL2_CACHE_SIZE)
    // glibc answers from the processor (CPUID) in microseconds; loading a whole
    // topology takes milliseconds per process, tens when a node's ranks load at once.
    if (const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE); l2 > 0) return static_cast<size_t>(l2);
#endif
    try {
      return topology::load("").cache_bytes(level::l2);
    } catch (const std::exception&) {
      return size_t{0};
    }
  }();
  return bytes;
}

std::string topology::summary() const {
  std::string out;
  for (level l : {level::socket, level::numa, level::l3, level::core, level::hwthread}) {
    int n = count(l);
    if (n == 0) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", n, n == 1 ? object_name(l) : objects_name(l));
  }
  return out;
}

std::vector<int> topology::pus_of(level l, int index) const {
  std::vector<int> pus;
  hwloc_obj_type_t type;
  if (!hwloc_type_of(l, type)) return pus;
  hwloc_obj_t obj = hwloc_get_obj_by_type(impl_->topo, type, static_cast<unsigned>(index));
  if (!obj || !obj->cpuset) return pus;
  int npus = count(level::hwthread);
  for (int i = 0; i < npus; ++i)
    if (hwloc_bitmap_isset(obj->cpuset, impl_->pu(i)->os_index)) pus.push_back(i);
  return pus;
}

std::vector<int> topology::current_binding() const {
  if (!this_machine_)
    throw usage_error(fmt::format(
        "the real binding needs the topology of this machine, not {} (set placement_options::binding)",
        source_));
  bitmap set;
  if (hwloc_get_cpubind(impl_->topo, set.set, 0) != 0)
    hwloc_bitmap_copy(set.set, hwloc_topology_get_topology_cpuset(impl_->topo));
  std::vector<int> pus;
  int npus = count(level::hwthread);
  for (int i = 0; i < npus; ++i)
    if (hwloc_bitmap_isset(set.set, impl_->pu(i)->os_index)) pus.push_back(i);
  if (pus.empty())  // bound outside what hwloc may use: treat as unbound
    for (int i = 0; i < npus; ++i) pus.push_back(i);
  return pus;
}

rank_placement topology::place(const std::vector<int>& pus_in) const {
  rank_placement p;
  p.pus = pus_in;
  std::sort(p.pus.begin(), p.pus.end());
  p.pus.erase(std::unique(p.pus.begin(), p.pus.end()), p.pus.end());
  int npus = count(level::hwthread);
  if (p.pus.empty()) throw usage_error("a rank is bound to no hardware thread");
  if (p.pus.front() < 0 || p.pus.back() >= npus)
    throw usage_error(fmt::format("binding {} is outside the {} hardware threads of {}",
                                  p.binding(), npus, source_));
  bitmap set;
  for (int pu : p.pus) hwloc_bitmap_set(set.set, impl_->pu(pu)->os_index);
  unsigned first = impl_->pu(p.pus.front())->os_index;
  p.object.fill(-1);
  p.spans.fill(false);
  for (level l : all_levels) {
    hwloc_obj_type_t type;
    if (!hwloc_type_of(l, type)) continue;
    int n = count(l);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t obj = hwloc_get_obj_by_type(impl_->topo, type, static_cast<unsigned>(i));
      if (obj && obj->cpuset && hwloc_bitmap_isset(obj->cpuset, first)) {
        p.object[index_of(l)] = i;
        p.spans[index_of(l)] = !hwloc_bitmap_isincluded(set.set, obj->cpuset);
        break;
      }
    }
  }
  p.object[index_of(level::slot)] = 0;
  p.object[index_of(level::node)] = 0;
  p.unbound = hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(impl_->topo), set.set);
  return p;
}

std::vector<int> topology::assumed_binding(binding_policy policy, int local_rank,
                                           int ranks_per_node) const {
  const int cores = count(level::core), threads = count(level::hwthread);
  auto whole = [&](level l, int first, int n) {
    std::vector<int> pus;
    for (int i = first; i < first + n; ++i)
      for (int pu : pus_of(l, i)) pus.push_back(pu);
    return pus;
  };
  auto too_many = [&](int available, const char* what) {
    return usage_error(fmt::format(
        "{} ranks per node do not fit on the {} {} of {} (assumed binding '{}'); use fewer "
        "ranks per node or a larger placement_options::topology",
        ranks_per_node, available, what, source_, to_string(policy)));
  };
  switch (policy) {
    case binding_policy::real:
      return current_binding();
    case binding_policy::core:
      if (cores == 0) throw usage_error(fmt::format("the topology {} has no cores", source_));
      if (ranks_per_node > cores) throw too_many(cores, "cores");
      return whole(level::core, local_rank, 1);
    case binding_policy::hwthread:
      if (ranks_per_node > threads) throw too_many(threads, "hardware threads");
      return {local_rank};
    case binding_policy::spread:
      if (cores > 0 && cores % ranks_per_node == 0) {
        int c = cores / ranks_per_node;
        return whole(level::core, local_rank * c, c);
      }
      if (threads % ranks_per_node == 0) {
        int t = threads / ranks_per_node;
        return whole(level::hwthread, local_rank * t, t);
      }
      if (ranks_per_node > threads) throw too_many(threads, "hardware threads");
      throw usage_error(fmt::format(
          "cannot spread {} ranks evenly over the {} cores ({} hardware threads) of {}; choose a "
          "number of ranks per node that divides them, or placement_options::binding core",
          ranks_per_node, cores, threads, source_));
  }
  return {};
}

std::vector<rank_placement> assumed_placements(const topology& topo, binding_policy policy,
                                               int nodes, int ranks_per_node) {
  if (policy == binding_policy::real)
    throw usage_error("planning needs an assumed binding (spread, core or hwthread), not 'real'");
  if (nodes < 1 || ranks_per_node < 1)
    throw usage_error(fmt::format("need at least one node and one rank per node, got {} x {}",
                                  nodes, ranks_per_node));
  // Every node is alike: place one, copy it.
  std::vector<rank_placement> one_node;
  for (int local = 0; local < ranks_per_node; ++local)
    one_node.push_back(topo.place(topo.assumed_binding(policy, local, ranks_per_node)));
  std::vector<rank_placement> all;
  all.reserve(static_cast<size_t>(nodes) * static_cast<size_t>(ranks_per_node));
  for (int node = 0; node < nodes; ++node)
    for (int local = 0; local < ranks_per_node; ++local) {
      rank_placement p = one_node[static_cast<size_t>(local)];
      p.rank = node * ranks_per_node + local;
      p.node = node;
      p.local_rank = local;
      p.object[index_of(level::slot)] = local;
      p.object[index_of(level::node)] = node;
      all.push_back(std::move(p));
    }
  return all;
}

}  // namespace halox
