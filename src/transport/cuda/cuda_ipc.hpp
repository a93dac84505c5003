// cuda-ipc: the ranks of a node map each other's device fields
// (cudaIpcGetMemHandle / cudaIpcOpenMemHandle) and every rank copies its
// halos straight out of its on-node neighbours' fields, one kernel per stage
// for all peers, boxes and fields: the device counterpart of shm. Readiness
// travels as inter-process CUDA events, their recording announced by empty
// MPI messages on a communicator of the transport's own.
//
// Reference algorithm per stage s (owners: the peers I read from; readers:
// the peers that read from me):
//   start: record ready[s] on my stream; tell my readers; launch my local copies
//   wait:  for each owner: its word that ready[s] is recorded, then my stream
//          waits for its ready[s]; launch the reads; record done[s]; tell my
//          owners; for each reader: its word, then my stream waits for its
//          done[s]; synchronise the stream (nobody reads my fields after this)
#pragma once

#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "transport/core/names.hpp"
#include "transport/cuda/runtime.hpp"
#include "halox/extend/transport.hpp"

namespace halox {

class cuda_ipc_transport final : public transport {
 public:
  explicit cuda_ipc_transport(const transport_context& ctx);
  ~cuda_ipc_transport() override;
  void start(size_t stage) override;
  void wait(size_t stage) override;
  std::string name() const override { return std::string(transport_names::cuda_ipc); }

 private:
  struct stage_work {
    std::vector<int> owners, readers;                   // exchange ranks
    std::vector<cudaEvent_t> owner_ready, reader_done;  // opened from the peers' handles
    device::launch_batch reads, local;
    std::vector<MPI_Request> ready_in, ready_out, done_in, done_out;
  };
  std::vector<uint64_t> publish_handles(const std::vector<std::byte*>& fields, int me,
                                        std::string& problem);

  const exchange_plan& plan_;
  const wait_policy& waits_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> ready_, done_;                // mine, one per stage
  std::map<std::pair<int, std::string>, void*> mapped_;  // (node rank, handle bytes) -> base
  std::vector<stage_work> stages_;
};

}  // namespace halox
