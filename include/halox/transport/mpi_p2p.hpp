// mpi-p2p: pack each neighbour's boxes (all fields fused) into one buffer,
// persistent MPI_Recv_init/MPI_Send_init requests, unpack as receives land.
//
// Reference algorithm per stage:
//   for m in recvs: MPI_Irecv(buf[m], m.peer, m.tag)
//   for m in sends: pack(m.boxes -> buf[m]); MPI_Isend(buf[m], m.peer, m.tag)
//   for c in copies: copy c.from -> c.to
//   while receives pending: MPI_Waitany -> unpack(buf[m] -> m.boxes)
//   MPI_Waitall(sends)
#pragma once

#include <vector>

#include "halox/transport.hpp"

namespace halox {

class mpi_p2p_transport final : public transport {
 public:
  explicit mpi_p2p_transport(const transport_context& ctx);
  ~mpi_p2p_transport() override;
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return "mpi-p2p"; }

 private:
  struct stage_requests {
    std::vector<MPI_Request> recvs, sends;
    std::vector<std::byte*> recv_buffers, send_buffers;
  };
  const exchange_plan& plan_;
  std::vector<std::byte*> fields_;
  const wait_policy& waits_;
  std::vector<stage_requests> stages_;
  std::byte* buffer_ = nullptr;  // one aligned block for all messages
};

}  // namespace halox
