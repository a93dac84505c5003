// Every transport halox has, in one table: its name, what it is, what it needs
// and how to build it. Names, parsing, help texts, `--list-transports`,
// availability checks and construction all derive from this table; adding a
// transport is its file pair plus one line in src/transport/registry.cpp.
//
// A transport choice is one name (a message transport carries every
// neighbour; an on-node transport alone means NAME+mpi-p2p) or LOCAL+REMOTE:
// on-node neighbours by LOCAL, the others by REMOTE (see router.hpp).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "halox/transport.hpp"

namespace halox {

enum class transport_reach {
  any_peer,   // moves messages to any rank (MPI, UCX)
  same_node,  // reaches only ranks that share this rank's node (shared memory, CMA)
};

struct transport_entry {
  std::string_view name;
  std::string_view summary;  // one line, for --help and --list-transports
  transport_reach reach;
  // Why it cannot run on this build or machine; empty when it can.
  std::string (*unavailable)();
  std::unique_ptr<transport> (*make)(const transport_context&);
  // The field memory it moves (halox/device.hpp): host, CUDA device, or both.
  bool moves_host_memory = true;
  bool moves_device_memory = false;
};

std::span<const transport_entry> transport_registry();
// Throws usage_error naming the known transports.
const transport_entry& find_transport(std::string_view name);

struct transport_choice {
  std::string local;   // runs on-node neighbours and self copies
  std::string remote;  // runs the others; equal to local when one transport carries all
  bool routed() const { return local != remote; }
  // The shortest spelling that parses back to this choice: "shm" for
  // shm+mpi-p2p, "shm+ucx", "mpi-types".
  std::string name() const;
  bool operator==(const transport_choice&) const = default;
};

// Parses "NAME" or "LOCAL+REMOTE"; throws usage_error for unknown names, a
// message transport given as LOCAL's only reach, or an unavailable transport.
transport_choice parse_transport_choice(const std::string& text);

// The choices "all" stands for: every available transport of the registry
// alone that moves host memory (cuda-ipc moves device fields only).
std::vector<std::string> available_transport_choices();
// Collective: the same, available on every rank of comm.
std::vector<std::string> available_transport_choices(MPI_Comm comm);

// One line per registry entry: name, availability (and why not), reach, summary.
std::string list_transports();

// Builds the transport(s) of a choice for ctx (a router when routed).
std::unique_ptr<transport> make_transport(const transport_choice& choice,
                                          const transport_context& ctx);

}  // namespace halox
