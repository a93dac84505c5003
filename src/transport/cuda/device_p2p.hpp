// mpi-p2p for fields in device memory: each stage's sends packed by one
// kernel into a device send-receive area, its local copies by another; the
// messages leave through pinned host buffers (one copy down for all sends of
// the stage, one copy up for all receives), or straight from the device area
// where the MPI library reports CUDA support (MPIX_Query_cuda_support; forced
// with HALOX_CUDA_AWARE_MPI=0|1).
//
// Reference algorithm per stage:
//   start: post the receives; launch pack; (pinned) copy the sends down;
//          record `packed`; launch the local copies; wait for `packed`
//          (the pack only); post the sends            -- messages in flight
//   wait:  complete the receives; (pinned) copy the receives up; launch
//          unpack; complete the sends; synchronise the stream
// start() returns once the pack kernel is done, so that the caller's interior
// work overlaps the messages' flight (the long part off-node), as
// halox/device.hpp promises.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "transport/core/names.hpp"
#include "transport/cuda/runtime.hpp"
#include "halox/extend/transport.hpp"

namespace halox {

class device_p2p_transport final : public transport {
 public:
  explicit device_p2p_transport(const transport_context& ctx);
  ~device_p2p_transport() override;
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return std::string(transport_names::mpi_p2p); }
  std::string path() const override {
    return std::string(transport_names::mpi_p2p) +
           (direct_ ? "(device, CUDA-aware MPI)" : "(device, through pinned host buffers)");
  }

 private:
  struct stage_work {
    device::stage_layout layout;
    device::launch_batch pack, unpack, local;
    std::vector<MPI_Request> recvs, sends;
  };

  const exchange_plan& plan_;
  const wait_policy& waits_;
  cudaStream_t stream_ = nullptr;
  bool direct_ = false;
  size_t area_bytes_ = 0;
  std::unique_ptr<device::device_memory> area_;
  std::unique_ptr<device::pinned_memory> host_;
  cudaEvent_t packed_ = nullptr;
  std::vector<stage_work> stages_;
};

}  // namespace halox
