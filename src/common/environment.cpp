#include "halox/common/environment.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace halox {

namespace {

constexpr environment_variable table[] = {
    {"HALOX_TIMEOUT", "exchange_options::timeout_seconds, --timeout",
     "seconds a wait may last before the run fails naming the peer (600)"},
    {"HALOX_RANKS_PER_NODE", "exchange_options::ranks_per_node, --ranks-per-node",
     "groups of N consecutive ranks count as nodes (0: real shared-memory nodes)"},
    {"HALOX_WISDOM", "exchange_options::wisdom_file, --wisdom",
     "file of earlier automatic choices, read before measuring and appended after"},
    {"HALOX_SHM_DIRECT_MIN_RUN", "tuning.shm.direct_min_run",
     "shm: runs under N bytes go through the outbox, longer ones are copied directly"},
    {"HALOX_SHM_FETCH_AHEAD", "tuning.shm.fetch_ahead",
     "shm: 1 fetches short strided runs ahead, 0 does not"},
    {"HALOX_SHM_PUSH", "tuning.shm.push", "shm: 1 lets owners write ready halos, 0 only pulls"},
    {"HALOX_CMA_DIRECT_MIN_RUN", "tuning.cma.direct_min_run", "cma: as HALOX_SHM_DIRECT_MIN_RUN"},
    {"HALOX_CMA_FETCH_AHEAD", "tuning.cma.fetch_ahead", "cma: as HALOX_SHM_FETCH_AHEAD"},
    {"HALOX_RMA_DIRECT_MIN_RUN", "tuning.rma.direct_min_run",
     "mpi-rma: messages whose runs average under N bytes are packed into landing buffers"},
    {"HALOX_P2P_FETCH_AHEAD", "tuning.p2p.fetch_ahead", "mpi-p2p: as HALOX_SHM_FETCH_AHEAD"},
    {"HALOX_UCX_FETCH_AHEAD", "tuning.ucx.fetch_ahead", "ucx: as HALOX_SHM_FETCH_AHEAD"},
};

}  // namespace

std::span<const environment_variable> environment_variables() { return table; }

std::optional<std::string> environment_value(std::string_view name) {
  if (std::ranges::none_of(table, [&](const auto& v) { return v.name == name; }))
    throw std::logic_error("halox reads an environment variable it does not list: " +
                           std::string(name));
  const char* value = std::getenv(std::string(name).c_str());
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

}  // namespace halox
