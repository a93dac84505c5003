// Checks of the memory the matrix needs, before anything is allocated.
#include "bench_program.hpp"

#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>

#include "halox/common/error.hpp"
#include "halox/device.hpp"
#include "halox/extend/topology.hpp"
#include "halox_programs/device_memory.hpp"

namespace halox::bench {

// Collective: the fields of the largest configuration, on every rank of a
// node, must fit the node's memory; found before anything is allocated (and
// before cell counts could overflow).
void require_fits_in_memory(MPI_Comm comm, const bench_options& o, const std::vector<config>& matrix,
                            const ivec3& dims) {
  long double most = 0;
  for (const auto& cfg : matrix) {
    long double cells = 1;
    for (int d = 0; d < 3; ++d) {
      long double extent = o.global_domain.empty()
                               ? o.domain[static_cast<size_t>(d)]
                               : (o.global_domain[static_cast<size_t>(d)] + dims[d] - 1) / dims[d];
      cells *= extent + cfg.halo.lo[d] + cfg.halo.hi[d];
    }
    most = std::max(most, cells * cfg.nfields * static_cast<long double>(element_size(cfg.type)));
  }
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int ranks_on_node = 1;
  MPI_Comm_size(node, &ranks_on_node);
  MPI_Comm_free(&node);
  const long double memory = static_cast<long double>(sysconf(_SC_PHYS_PAGES)) *
                             static_cast<long double>(sysconf(_SC_PAGE_SIZE));
  std::string problem;
  if (most * ranks_on_node > memory)
    problem = fmt::format("the fields need {:.3g} GB per rank, {:.3g} GB for the {} ranks of a "
                          "node, but the node has {:.3g} GB of memory: choose a smaller domain or "
                          "fewer fields",
                          static_cast<double>(most / 1e9),
                          static_cast<double>(most * ranks_on_node / 1e9), ranks_on_node,
                          static_cast<double>(memory / 1e9));
  require_all(comm, problem);
}

// Collective, before the first exchange: node-shared fields, asked for
// (--memory shared) or chosen (auto), must fit the file system that holds
// them (/dev/shm). An explicit ask that does not fit fails with one line;
// auto falls back to private memory (o.shared_memory_fallback says why).
void check_shared_memory(const decomposition& decomp, bench_options& o,
                         const std::vector<config>& matrix) {
  const subdomain sub = o.global_domain.empty()
                            ? subdomain_per_rank(decomp, to_ivec3(o.domain))
                            : subdomain_of_global(decomp, to_ivec3(o.global_domain));
  size_t most = 0;
  for (const auto& cfg : matrix)
    if (field_memory_of(o, cfg) == "shared") {
      const size_t field_bytes =
          (local_grid(sub.extent, cfg.halo).points() * element_size(cfg.type) + 63) / 64 * 64;
      most = std::max(most, field_bytes * static_cast<size_t>(cfg.nfields) + 64);
    }
  int any = most > 0 ? 1 : 0;  // the same matrix everywhere, but sizes may differ by rank
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, decomp.comm());
  if (!any) return;
  MPI_Comm node = node_communicator(decomp.comm(), o.decomp.ranks_per_node);
  const shared_memory_space space = node_shared_memory_space(decomp.comm(), node, most);
  MPI_Comm_free(&node);
  if (space.fits) return;
  if (o.memory == "shared")
    throw usage_error(describe_shortage(space, "the fields (--memory shared)"));
  o.shared_memory_fallback = describe_shortage(space, "node-shared fields");
}

std::shared_ptr<void> device_buffer(size_t bytes) {
  return std::shared_ptr<void>(cuda::allocate(bytes), cuda::release);
}

}  // namespace halox::bench
