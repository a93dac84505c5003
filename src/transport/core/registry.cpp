#include "halox/extend/registry.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <deque>

#include "common/yielding_mpi.hpp"
#include "halox/common/error.hpp"
#include "transport/core/names.hpp"
#include "transport/cuda/cuda_transports.hpp"
#include "transport/mpi/mpi_cartex.hpp"
#include "transport/mpi/mpi_neighbor.hpp"
#include "transport/mpi/mpi_p2p.hpp"
#include "transport/mpi/mpi_rma.hpp"
#include "transport/mpi/mpi_types.hpp"
#include "transport/node/cma.hpp"
#include "transport/node/shm.hpp"
#include "transport/ucx/ucx.hpp"

namespace halox {

namespace {

template <class T, auto... options>
std::unique_ptr<transport> make(const transport_context& ctx) {
  return std::make_unique<T>(ctx, options...);
}

namespace names = transport_names;

// The built-in transports. Order is the order of --list-transports and of "all".
std::deque<transport_entry> built_in() {
  std::deque<transport_entry> table;
  auto add = [&](std::string_view name, std::string_view summary, transport_reach reach,
                 std::function<std::string()> unavailable, transport_factory factory) {
    if (!unavailable) unavailable = [] { return std::string(); };
    table.push_back({std::string(name), std::string(summary), reach, std::move(unavailable),
                     std::move(factory)});
  };
  const auto any = transport_reach::any_peer, node = transport_reach::same_node;
  add(names::mpi_p2p,
      "packs each neighbour's boxes (all fields fused) into one buffer; persistent "
      "MPI point-to-point; unpacks as messages land",
      any, {}, make<mpi_p2p_transport>);
  table.back().make_device = make_device_p2p_transport;
  table.back().device_summary =
      "packs each stage's sends with one CUDA kernel, posts them once "
      "the kernel is done, before start() returns";
  add(names::mpi_types,
      "one MPI derived datatype per message over the fields, no packing by halox "
      "(the plain-MPI reference)",
      any, {}, make<mpi_types_transport>);
  add(names::mpi_cartex,
      "the plain-MPI program of the Betzy results (cartex mpi_comm): a message "
      "per direction packed by element loops, whole planes in place, "
      "MPI_Isend/MPI_Irecv of bytes, MPI_Waitall, unpack",
      any, {}, make<mpi_cartex_transport>);
  add(names::mpi_neighbor,
      "a distributed-graph communicator of the neighbours; one "
      "MPI_Ineighbor_alltoallw per stage with derived datatypes (persistent "
      "with MPI 4)",
      any, {}, make<mpi_neighbor_transport>);
  add(names::mpi_rma,
      "MPI_Put into the neighbours' halos through a window per field; "
      "post-start-complete-wait with the neighbours per stage",
      any, {}, make<mpi_rma_transport, rma_sync::pscw>);
  add(names::mpi_rma_fence,
      fmt::format("{} synchronised by MPI_Win_fence (collective over all ranks) instead",
                  names::mpi_rma),
      any, {}, make<mpi_rma_transport, rma_sync::fence>);
  add(names::shm,
      "single copy from the on-node neighbour's fields in node-shared memory (packed "
      "copy through a shared outbox when the fields are private)",
      node, {}, make<shm_transport>);
  table.back().prefers_shared_fields = true;
  add(names::ucx,
      "packs each neighbour's boxes (all fields fused) into one buffer; UCX UCP tag "
      "send/receive, progress from the waits; unpacks as messages land",
      any, ucx_transport_unavailable, make_ucx_transport);
  add(names::cma,
      "single copy with process_vm_readv straight from the on-node neighbour's "
      "fields, wherever they were allocated (short runs packed by the owner first)",
      node, cma_unavailable, make<cma_transport>);
  add(names::cuda_ipc,
      "single copy device to device: maps the on-node neighbours' CUDA fields "
      "(cudaIpcOpenMemHandle), one kernel per stage; device fields only",
      node, cuda_ipc_unavailable, {});
  table.back().make_device = make_cuda_ipc_transport;
  return table;
}

// A deque: entries keep their addresses as transports are registered.
std::deque<transport_entry>& registry() {
  static std::deque<transport_entry> table = built_in();
  return table;
}

std::vector<std::string_view> names_of_all() {
  std::vector<std::string_view> out;
  for (const auto& e : registry()) out.push_back(e.name);
  return out;
}

const transport_entry& available_transport(const transport_entry& entry) {
  if (auto why = entry.why_unavailable(); !why.empty())
    throw usage_error(fmt::format("transport '{}' is not available here: {}", entry.name, why));
  return entry;
}

bool valid_name(std::string_view name) {
  return !name.empty() && name != "auto" && name != "all" && std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  });
}

}  // namespace

void register_transport(transport_entry entry) {
  if (!valid_name(entry.name))
    throw usage_error(
        fmt::format("cannot register transport '{}': a name is letters, digits, '-' "
                    "and '_', and not 'auto' or 'all'",
                    entry.name));
  if (std::ranges::any_of(registry(), [&](const auto& e) { return e.name == entry.name; }))
    throw usage_error(fmt::format("cannot register transport '{}': the name is taken", entry.name));
  if (!entry.make && !entry.make_device)
    throw usage_error(fmt::format("cannot register transport '{}': no constructor", entry.name));
  if (!entry.unavailable) entry.unavailable = [] { return std::string(); };
  registry().push_back(std::move(entry));
}

std::vector<const transport_entry*> transport_registry() {
  std::vector<const transport_entry*> out;
  for (const auto& e : registry()) out.push_back(&e);
  return out;
}

const transport_entry& find_transport(std::string_view name) {
  for (const auto& e : registry())
    if (e.name == name) return e;
  throw usage_error(fmt::format("unknown transport '{}' (expected one of: {}, or LOCAL+REMOTE)",
                                name, fmt::join(names_of_all(), ", ")));
}

const transport_entry& default_remote_transport() {
  return find_transport(names::mpi_p2p);
}

transport_choice::transport_choice()
    : local_(&default_remote_transport()), remote_(&default_remote_transport()) {}

transport_choice::transport_choice(const transport_entry& only)
    : local_(&only),
      remote_(only.reach == transport_reach::same_node ? &default_remote_transport() : &only) {}

transport_choice::transport_choice(const transport_entry& local, const transport_entry& remote)
    : local_(&local), remote_(&remote) {
  if (remote.reach != transport_reach::any_peer)
    throw usage_error(
        fmt::format("transport '{}+{}': {} reaches only ranks of the same node and "
                    "cannot carry the off-node neighbours",
                    local.name, remote.name, remote.name));
}

std::string transport_choice::name() const {
  if (!routed()) return local_->name;
  if (remote_ == &default_remote_transport() && local_->reach == transport_reach::same_node)
    return local_->name;
  return local_->name + "+" + remote_->name;
}

std::string transport_choice::unavailable() const {
  for (const auto* e : {local_, remote_})
    if (auto why = e->why_unavailable(); !why.empty())
      return fmt::format("transport '{}' is not available here: {}", e->name, why);
  return {};
}

transport_choice parse_transport_choice(std::string_view text) {
  const auto plus = text.find('+');
  if (plus == std::string_view::npos)
    return transport_choice(available_transport(find_transport(text)));
  const auto local = text.substr(0, plus), remote = text.substr(plus + 1);
  if (local.empty() || remote.empty() || remote.find('+') != std::string_view::npos)
    throw usage_error(fmt::format("transport '{}' is not NAME or LOCAL+REMOTE", text));
  const auto& l = available_transport(find_transport(local));
  const auto& r = available_transport(find_transport(remote));
  return &l == &r ? transport_choice(l) : transport_choice(l, r);
}

std::vector<transport_choice> available_transport_choices() {
  std::vector<transport_choice> out;
  for (const auto& e : registry())
    if (e.moves_host_memory() && e.available()) out.emplace_back(e);
  return out;
}

std::vector<transport_choice> available_transport_choices(MPI_Comm comm) {
  // Availability is each rank's finding (a library, a kernel setting): agree.
  std::vector<int> available;
  for (const auto& e : registry())
    available.push_back(e.moves_host_memory() && e.available() ? 1 : 0);
  yielding_allreduce(MPI_IN_PLACE, available.data(), static_cast<int>(available.size()), MPI_INT,
                     MPI_MIN, comm);
  std::vector<transport_choice> out;
  for (size_t i = 0; i < available.size(); ++i)
    if (available[i]) out.emplace_back(registry()[i]);
  return out;
}

std::string list_transports() {
  std::string out;
  for (const auto& e : registry()) {
    auto why = e.why_unavailable();
    auto summary = e.summary;
    if (e.moves_host_memory() && e.moves_device_memory())
      summary += fmt::format("; device fields: {}", e.device_summary);
    out += fmt::format("{:<14}{:<12}{:<11}{}\n", e.name, why.empty() ? "available" : "unavailable",
                       e.reach == transport_reach::same_node ? "same-node" : "any-peer",
                       why.empty() ? summary : fmt::format("({}) {}", why, summary));
  }
  return out;
}

}  // namespace halox
