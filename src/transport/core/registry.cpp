#include "halox/transport/registry.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "halox/common/error.hpp"
#include "transport/node/cma.hpp"
#include "transport/mpi/mpi_neighbor.hpp"
#include "transport/mpi/mpi_p2p.hpp"
#include "transport/mpi/mpi_rma.hpp"
#include "transport/mpi/mpi_types.hpp"
#include "transport/core/router.hpp"
#include "transport/node/shm.hpp"
#include "transport/ucx/ucx.hpp"
#include "device/device_transports.hpp"

namespace halox {

namespace {

std::string always_available() { return {}; }

// mpi-p2p packs device fields with CUDA kernels (device_p2p.hpp).
std::unique_ptr<transport> make_mpi_p2p(const transport_context& ctx) {
  if (ctx.fields.device) return make_device_p2p_transport(ctx);
  return std::make_unique<mpi_p2p_transport>(ctx);
}

template <class T, auto... options>
std::unique_ptr<transport> make(const transport_context& ctx) {
  return std::make_unique<T>(ctx, options...);
}

// The table. Order is the order of --list-transports and of "all".
const transport_entry registry[] = {
    {"mpi-p2p", "packs each neighbour's boxes (all fields fused) into one buffer; persistent "
                "MPI point-to-point; unpacks as messages land",
     transport_reach::any_peer, always_available, make_mpi_p2p, true, true},
    {"mpi-types", "one MPI derived datatype per message over the fields, no packing by halox "
                  "(the plain-MPI reference)",
     transport_reach::any_peer, always_available, make<mpi_types_transport>},
    {"mpi-neighbor", "a distributed-graph communicator of the neighbours; one "
                     "MPI_Ineighbor_alltoallw per stage with derived datatypes (persistent with MPI 4)",
     transport_reach::any_peer, always_available, make<mpi_neighbor_transport>},
    {"mpi-rma", "MPI_Put into the neighbours' halos through a window per field; "
                "post-start-complete-wait with the neighbours per stage",
     transport_reach::any_peer, always_available, make<mpi_rma_transport, rma_sync::pscw>},
    {"mpi-rma-fence", "mpi-rma synchronised by MPI_Win_fence (collective over all ranks) instead",
     transport_reach::any_peer, always_available, make<mpi_rma_transport, rma_sync::fence>},
    {"shm", "single copy from the on-node neighbour's fields in node-shared memory (packed "
            "copy through a shared staging area when the fields are private)",
     transport_reach::same_node, always_available, make<shm_transport>},
    {"ucx", "packs each neighbour's boxes (all fields fused) into one buffer; UCX UCP tag "
            "send/receive, progress from the waits; unpacks as messages land",
     transport_reach::any_peer, ucx_transport_unavailable, make_ucx_transport},
    {"cma", "single copy with process_vm_readv straight from the on-node neighbour's fields, "
            "wherever they were allocated (short runs packed by the owner first)",
     transport_reach::same_node, cma_unavailable, make<cma_transport>},
    {"cuda-ipc", "single copy device to device: maps the on-node neighbours' CUDA fields "
                 "(cudaIpcOpenMemHandle), one kernel per stage; device fields only",
     transport_reach::same_node, cuda_ipc_unavailable, make_cuda_ipc_transport, false, true},
};

std::vector<std::string_view> names() {
  std::vector<std::string_view> out;
  for (const auto& e : registry) out.push_back(e.name);
  return out;
}

const transport_entry& available_transport(std::string_view name) {
  const transport_entry& entry = find_transport(name);
  if (auto why = entry.unavailable(); !why.empty())
    throw usage_error(fmt::format("transport '{}' is not available here: {}", name, why));
  return entry;
}

}  // namespace

std::span<const transport_entry> transport_registry() { return registry; }

const transport_entry& find_transport(std::string_view name) {
  for (const auto& e : registry)
    if (e.name == name) return e;
  throw usage_error(fmt::format("unknown transport '{}' (expected one of: {}, or LOCAL+REMOTE)",
                                name, fmt::join(names(), ", ")));
}

transport_choice parse_transport_choice(const std::string& text) {
  const auto plus = text.find('+');
  if (plus == std::string::npos) {
    const auto& entry = available_transport(text);
    // An on-node transport alone sends the off-node neighbours by mpi-p2p.
    if (entry.reach == transport_reach::same_node) return {text, "mpi-p2p"};
    return {text, text};
  }
  transport_choice choice{text.substr(0, plus), text.substr(plus + 1)};
  if (choice.local.empty() || choice.remote.empty() || choice.remote.find('+') != std::string::npos)
    throw usage_error(fmt::format("transport '{}' is not NAME or LOCAL+REMOTE", text));
  available_transport(choice.local);
  if (available_transport(choice.remote).reach != transport_reach::any_peer)
    throw usage_error(fmt::format("transport '{}': {} reaches only ranks of the same node and "
                                  "cannot carry the off-node neighbours",
                                  text, choice.remote));
  if (choice.local == choice.remote) choice.remote = choice.local;
  return choice;
}

std::string transport_choice::name() const {
  if (!routed()) return local;
  if (remote == "mpi-p2p" && find_transport(local).reach == transport_reach::same_node) return local;
  return local + "+" + remote;
}

std::vector<std::string> available_transport_choices() {
  std::vector<std::string> out;
  for (const auto& e : registry)
    if (e.moves_host_memory && e.unavailable().empty()) out.emplace_back(e.name);
  return out;
}

std::vector<std::string> available_transport_choices(MPI_Comm comm) {
  // Availability is each rank's finding (a library, a kernel setting): agree.
  std::vector<int> available;
  for (const auto& e : registry)
    available.push_back(e.moves_host_memory && e.unavailable().empty() ? 1 : 0);
  MPI_Allreduce(MPI_IN_PLACE, available.data(), static_cast<int>(available.size()), MPI_INT,
                MPI_MIN, comm);
  std::vector<std::string> out;
  for (size_t i = 0; i < available.size(); ++i)
    if (available[i]) out.emplace_back(registry[i].name);
  return out;
}

std::string list_transports() {
  std::string out;
  for (const auto& e : registry) {
    auto why = e.unavailable();
    out += fmt::format("{:<14}{:<12}{:<11}{}\n", e.name, why.empty() ? "available" : "unavailable",
                       e.reach == transport_reach::same_node ? "same-node" : "any-peer",
                       why.empty() ? std::string(e.summary) : fmt::format("({}) {}", why, e.summary));
  }
  return out;
}

std::unique_ptr<transport> make_transport(const transport_choice& choice,
                                          const transport_context& ctx) {
  if (!choice.routed())
    return std::make_unique<routed_transport>(ctx, available_transport(choice.local));
  return std::make_unique<routed_transport>(ctx, available_transport(choice.local),
                                            available_transport(choice.remote));
}

}  // namespace halox
