// Which transports carry an exchange, as a stencil code names them, and what
// they carried.
//
// A transport choice is one name (a message transport carries every
// neighbour; an on-node transport alone sends the off-node neighbours by the
// default message transport, mpi-p2p) or LOCAL+REMOTE: on-node neighbours by
// LOCAL, the others by REMOTE. Text becomes a choice once, at the program's
// edge (parse_transport_choice); the library passes the typed choice on. The
// transports themselves are the registry's entries (halox/extend/registry.hpp,
// for those who write one).
#pragma once

#include <mpi.h>

#include <string>
#include <string_view>
#include <vector>

namespace halox {

struct transport_entry;

class transport_choice {
 public:
  // The default: mpi-p2p for every neighbour.
  transport_choice();
  // `local` carries on-node neighbours and self copies, `remote` the others
  // (the same entry when one transport carries all). Throws usage_error when
  // remote reaches only its own node.
  transport_choice(const transport_entry& local, const transport_entry& remote);
  explicit transport_choice(const transport_entry& only);

  const transport_entry& local() const { return *local_; }
  const transport_entry& remote() const { return *remote_; }
  bool routed() const { return local_ != remote_; }
  // The shortest spelling that parses back to this choice: "shm" for
  // shm+mpi-p2p, "shm+ucx", "mpi-types".
  std::string name() const;
  // Why the choice cannot run on this rank (a transport unavailable here); empty when it can.
  std::string unavailable() const;
  bool operator==(const transport_choice& other) const {
    return local_ == other.local_ && remote_ == other.remote_;
  }

 private:
  const transport_entry* local_;
  const transport_entry* remote_;
};

// Parses "NAME" or "LOCAL+REMOTE"; throws usage_error for unknown names, a
// same-node transport as REMOTE, or a transport unavailable on this rank.
transport_choice parse_transport_choice(std::string_view text);

// The choices "all" stands for: every available transport of the registry
// alone that moves host memory (cuda-ipc moves device fields only).
std::vector<transport_choice> available_transport_choices();
// Collective: the same, available on every rank of comm.
std::vector<transport_choice> available_transport_choices(MPI_Comm comm);

// One line per registry entry: name, availability (and why not), reach, summary.
std::string list_transports();

// The message bytes a transport was handed to send, by where the receiving
// rank is (local copies are not messages); counted as stages start.
struct transport_stats {
  std::string transport;                      // the registry name
  unsigned long long bytes_to_same_node = 0;  // to other ranks of this rank's node
  unsigned long long bytes_to_other_nodes = 0;
};

}  // namespace halox
