// Transports execute the stages of a plan: start(stage) then wait(stage).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "halox/plan.hpp"

namespace halox {

enum class transport_kind {
  mpi_p2p,    // pack into per-neighbour buffers, persistent Isend/Irecv
  mpi_types,  // MPI derived datatypes over the field memory, no packing
  shm,        // on-node: single copy from the neighbour's fields; off-node: mpi-p2p
};
transport_kind parse_transport(const std::string& name);  // throws usage_error
std::string to_string(transport_kind t);
std::vector<std::string> transport_names();

class transport {
 public:
  virtual ~transport() = default;
  // Posts the receives and sends of a stage (and does its local copies).
  virtual void start(size_t stage) = 0;
  // Completes a stage: every halo cell of the stage holds its final value.
  virtual void wait(size_t stage) = 0;
  virtual std::string name() const = 0;
};

// fields[f] points at the first allocated cell of field f; the plan and the
// fields must outlive the transport, and the transport must be destroyed
// before MPI_Finalize.
std::unique_ptr<transport> make_transport(transport_kind kind, const exchange_plan& plan,
                                          MPI_Comm comm, const std::vector<std::byte*>& fields);

}  // namespace halox
