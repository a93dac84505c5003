// mpi-neighbor: the neighbours of a stage form a distributed-graph
// communicator, and one neighbourhood collective per stage moves all its
// messages, each described by one derived datatype over the field memory (a
// struct of subarrays over all fields of the message, as mpi-types builds).
// Where the MPI library has MPI 4's persistent MPI_Neighbor_alltoallw_init
// (detected when configuring) the collective is set up once and started each
// time; path() then reads "mpi-neighbor(persistent)".
//
// Reference algorithm:
//   set-up, per distinct neighbour list of the stages (collective):
//     sources      = peers of the stage's receives, by the direction the peer sent toward
//     destinations = peers of the stage's sends, by send direction
//     (a direction with a message only one way gets an empty edge the other way)
//     graph = MPI_Dist_graph_create_adjacent(sources, destinations, reorder = 0)
//   per stage s:
//     start: MPI_Ineighbor_alltoallw(MPI_BOTTOM, 1, send_type[j], MPI_BOTTOM, 1, recv_type[i], graph)
//            copy_boxes(self copies)
//     wait:  MPI_Wait (through the wait policy: yields, times out)
#pragma once

#include <string>
#include <vector>

#include "halox/extend/transport.hpp"
#include "transport/core/names.hpp"

namespace halox {

class mpi_neighbor_transport final : public transport {
 public:
  explicit mpi_neighbor_transport(const transport_context& ctx);
  ~mpi_neighbor_transport() override;
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return std::string(transport_names::mpi_neighbor); }
  std::string path() const override;

 private:
  struct stage_collective {
    MPI_Comm graph = MPI_COMM_NULL;  // one of graphs_; null when no rank moves data in the stage
    std::vector<int> send_counts, recv_counts;
    std::vector<MPI_Aint> send_displs, recv_displs;
    std::vector<MPI_Datatype> send_types, recv_types;
    MPI_Request request = MPI_REQUEST_NULL;
    std::string what;  // the sources, for a timeout
  };
  const exchange_plan& plan_;
  const field_set& fields_;
  const wait_policy& waits_;
  std::vector<stage_collective> stages_;
  std::vector<MPI_Comm> graphs_;
  std::vector<MPI_Datatype> types_;
};

}  // namespace halox
