#include "halox/transport.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "halox/common/error.hpp"
#include "halox/transport/mpi_p2p.hpp"
#include "halox/transport/mpi_types.hpp"
#include "halox/transport/shm.hpp"

namespace halox {

std::vector<std::string> transport_names() { return {"mpi-p2p", "mpi-types", "shm"}; }

transport_kind parse_transport(const std::string& name) {
  if (name == "mpi-p2p") return transport_kind::mpi_p2p;
  if (name == "mpi-types") return transport_kind::mpi_types;
  if (name == "shm") return transport_kind::shm;
  throw usage_error(fmt::format("unknown transport '{}' (expected one of: {})", name,
                                fmt::join(transport_names(), ", ")));
}

std::string to_string(transport_kind t) {
  switch (t) {
    case transport_kind::mpi_p2p: return "mpi-p2p";
    case transport_kind::mpi_types: return "mpi-types";
    case transport_kind::shm: return "shm";
  }
  return "?";
}

std::unique_ptr<transport> make_transport(transport_kind kind, const exchange_plan& plan,
                                          MPI_Comm comm, const std::vector<std::byte*>& fields) {
  switch (kind) {
    case transport_kind::mpi_p2p: return std::make_unique<mpi_p2p_transport>(plan, comm, fields);
    case transport_kind::mpi_types: return std::make_unique<mpi_types_transport>(plan, comm, fields);
    case transport_kind::shm: return std::make_unique<shm_transport>(plan, comm, fields);
  }
  throw usage_error("unknown transport");
}

}  // namespace halox
