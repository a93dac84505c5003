// mpi-types: one MPI derived datatype per message over the field memory (all
// fields of a neighbour in one struct type in compact mode), no packing by
// halox; the MPI library moves the data, self-neighbours included.
//
// Reference algorithm per stage:
//   for m in recvs (and self copies): MPI_Irecv(MPI_BOTTOM, 1, type[m], m.peer, m.tag)
//   for m in sends (and self copies): MPI_Isend(MPI_BOTTOM, 1, type[m], m.peer, m.tag)
//   MPI_Waitall(all)
#pragma once

#include <vector>

#include "halox/transport.hpp"

namespace halox {

class mpi_types_transport final : public transport {
 public:
  explicit mpi_types_transport(const transport_context& ctx);
  ~mpi_types_transport() override;
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return "mpi-types"; }

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
