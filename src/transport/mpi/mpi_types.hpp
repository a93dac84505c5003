// mpi-types: the plain-MPI reference, the algorithm of the ghexbench cartex
// benchmark's `benchmark_mpi_comm --MPI-datatypes`
// (cartex/src/runtime/mpi_comm/runtime.cpp). One MPI derived datatype per
// direction over the field memory, no packing by halox; the MPI library moves
// the data, self-neighbours included. Unlike the other transports it sends a
// peer that is a neighbour in several directions one message per direction,
// as a plain MPI code does.
//
// Datatypes: a message of one box (every message of the sequence grouping) is cartex's
// plain MPI_Type_create_subarray over its field, sent from the field's first
// allocated cell; a message of several boxes (the compact groupings) is a struct
// of subarrays at MPI_BOTTOM.
//
// Reference algorithm per stage (cartex posts afresh every exchange):
//   for each receive, from the +d neighbour first: MPI_Irecv(field, 1, type, peer, tag)
//   for each send, to the -d neighbour first:      MPI_Isend(field, 1, type, peer, tag)
//   MPI_Waitall(all)   (under halox's watchdog: a timeout names the stage's peers;
//                       with more ranks than cores, halox's polling wait that yields)
#pragma once

#include <string>
#include <vector>

#include "halox/extend/transport.hpp"
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
  struct post {
    void* data = nullptr;  // a field's first allocated cell, or MPI_BOTTOM
    MPI_Datatype type = MPI_DATATYPE_NULL;
    int peer = -1;
    int tag = 0;
    ivec3 direction{0, 0, 0};  // toward (sends) or from (receives)
  };
  struct stage_posts {
    std::vector<post> recvs, sends;     // in cartex's order
    std::vector<MPI_Request> requests;  // receives first, then sends
    std::string what;                   // for a timeout: the stage and its peers
  };
  std::vector<stage_posts> stages_;
  MPI_Comm comm_;
  const wait_policy& waits_;
};

}  // namespace halox
