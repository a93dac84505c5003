// Every transport halox knows, in one table: its name, what it is, what it
// needs and how to build it. Names, parsing, help texts, `--list-transports`,
// availability checks and construction all derive from this table. The
// built-in transports are its first entries; a program adds its own with
// register_transport and then names it like a built-in one (a choice of
// them: halox/transport/choice.hpp).
//
//   halox::register_transport({.name = "my-mpi",
//                              .summary = "our own point-to-point",
//                              .reach = halox::transport_reach::any_peer,
//                              .make = [](const halox::transport_context& ctx) {
//                                return std::make_unique<my_transport>(ctx);
//                              }});
//   opts.transport = halox::parse_transport_choice("shm+my-mpi");
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "halox/extend/transport.hpp"
#include "halox/transport/choice.hpp"

namespace halox {

enum class transport_reach {
  any_peer,   // moves messages to any rank (MPI, UCX)
  same_node,  // reaches only ranks that share this rank's node (shared memory, CMA)
};

struct transport_entry {
  // Every member has a default, so that a designated initializer may leave any out without a
  // -Wmissing-field-initializers warning (GCC 12).
  std::string name = {};     // letters, digits, '-' and '_'
  std::string summary = {};  // one line, for --help and --list-transports
  transport_reach reach = transport_reach::any_peer;
  // Why it cannot run on this build or machine; empty when it can.
  std::function<std::string()> unavailable = [] { return std::string(); };
  // The implementation for fields in host memory (empty: it moves device fields only).
  transport_factory make = {};
  // The implementation for fields in CUDA device memory, declared beside the
  // host one (empty: it moves host fields only); make_transport builds it when
  // the fields are on the device, and --list-transports lists it.
  transport_factory make_device = {};
  std::string device_summary = {};  // what make_device builds, for --list-transports
  // Copies straight from fields in node-shared memory (halox::shared_fields)
  // and packs private ones into its outbox: programs that choose the memory
  // give it shared fields.
  bool prefers_shared_fields = false;
  bool available() const { return why_unavailable().empty(); }
  std::string why_unavailable() const { return unavailable ? unavailable() : std::string(); }
  // The field memory it moves (halox/device.hpp): host, CUDA device, or both.
  bool moves_host_memory() const { return static_cast<bool>(make); }
  bool moves_device_memory() const { return static_cast<bool>(make_device); }
};

// Adds a transport to the registry (after the built-in ones). Throws
// usage_error for a name that is empty, taken, "auto" or "all", or has
// characters other than letters, digits, '-' and '_', and for an entry
// with neither `make` nor `make_device`. Register on every rank, before building exchanges with it.
void register_transport(transport_entry entry);

// The entries in registry order (the order of --list-transports and "all").
std::vector<const transport_entry*> transport_registry();
// Throws usage_error naming the known transports.
const transport_entry& find_transport(std::string_view name);
// The message transport that carries the off-node neighbours when a choice
// names only an on-node transport (mpi-p2p).
const transport_entry& default_remote_transport();

// Builds the transport(s) of a choice for ctx (a router when routed): each
// entry's make, or its make_device when ctx.fields are in device memory.
std::unique_ptr<transport> make_transport(const transport_choice& choice,
                                          const transport_context& ctx);

}  // namespace halox
