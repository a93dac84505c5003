// mpi-p2p: pack each neighbour's boxes (all directions and fields of the
// message) into one buffer, persistent MPI_Recv_init/MPI_Send_init requests,
// unpack as receives land (message_buffers.hpp: one buffer for all stages).
//
// Reference algorithm per stage:
//   for m in recvs: MPI_Start(recv[m])
//   for m in sends: pack(m.boxes -> buf[m]); MPI_Start(send[m])
//   for c in copies: copy c.from -> c.to
//   while receives pending: MPI_Waitany -> unpack(buf[m] -> m.boxes)
//   MPI_Waitall(sends)
#pragma once

#include <string>
#include <vector>

#include "halox/extend/transport.hpp"
#include "transport/common/message_buffers.hpp"
#include "transport/core/names.hpp"

namespace halox {

class mpi_p2p_transport final : public transport {
 public:
  explicit mpi_p2p_transport(const transport_context& ctx);
  ~mpi_p2p_transport() override;
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return std::string(transport_names::mpi_p2p); }
  std::string settings() const override {
    return fetch_ahead_ ? std::string(transport_names::mpi_p2p) + ": " + describe_fetch_ahead(*fetch_ahead_)
                        : std::string();
  }
  bool idle(size_t stage) const override;
  void tuning_as_built(transport_tuning& tuning) const override {
    if (fetch_ahead_) tuning.p2p.fetch_ahead = fetch_ahead_->on;
  }

 private:
  struct stage_requests {
    std::vector<MPI_Request> recvs, sends;
  };

  const wait_policy& waits_;
  message_buffers buffers_;
  std::vector<stage_requests> stages_;
  std::optional<fetch_ahead_choice> fetch_ahead_;  // empty: small halos, nothing fetched ahead
};

}  // namespace halox
