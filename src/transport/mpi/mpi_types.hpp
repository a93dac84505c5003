// mpi-types: the plain-MPI reference. One MPI derived datatype per
// direction over the field memory (all fields of the stage in one struct
// type), no packing by halox; the MPI library moves the data, self-neighbours
// included. Unlike the other transports it sends a peer that is a neighbour
// in several directions one message per direction, as a plain MPI code does.
//
// Reference algorithm per stage:
//   for each direction d of each m in recvs (and self copies):
//     MPI_Irecv(MPI_BOTTOM, 1, type[m, d], m.peer, tag(d))
//   for each direction d of each m in sends (and self copies):
//     MPI_Isend(MPI_BOTTOM, 1, type[m, d], m.peer, tag(d))
//   MPI_Waitall(all)
#pragma once

#include <vector>

#include "halox/transport.hpp"
#include "transport/core/names.hpp"

namespace halox {

class mpi_types_transport final : public transport {
 public:
  explicit mpi_types_transport(const transport_context& ctx);
  ~mpi_types_transport() override;
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return std::string(transport_names::mpi_types); }

 private:
  struct stage_requests {
    std::vector<MPI_Request> requests;  // receives first, then sends
    std::vector<std::string> what;      // per request, for a timeout
  };
  std::vector<stage_requests> stages_;
  std::vector<MPI_Datatype> types_;
  const wait_policy& waits_;
};

}  // namespace halox
