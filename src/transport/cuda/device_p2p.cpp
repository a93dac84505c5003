#include "transport/cuda/device_p2p.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "transport/core/names.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI declares MPIX_Query_cuda_support here
#endif

#include "common/yielding_mpi.hpp"
#include "halox/common/environment.hpp"
#include "transport/cuda/cuda_transports.hpp"

namespace halox {

namespace {

// Whether this MPI takes device pointers: HALOX_CUDA_AWARE_MPI=0|1, else the
// library's own answer where it has the query. Agreed by all ranks (the
// path is recorded once).
bool cuda_aware_mpi(MPI_Comm comm) {
  int aware = 0;
  if (const auto forced = environment_switch("HALOX_CUDA_AWARE_MPI")) {
    aware = *forced;
  } else {
#if defined(HALOX_HAVE_MPIX_QUERY_CUDA_SUPPORT)
    aware = MPIX_Query_cuda_support();
#endif
  }
  yielding_allreduce(MPI_IN_PLACE, &aware, 1, MPI_INT, MPI_MIN, comm);
  return aware != 0;
}

}  // namespace

device_p2p_transport::device_p2p_transport(const transport_context& ctx)
    : plan_(ctx.plan), waits_(ctx.waits), stream_(static_cast<cudaStream_t>(ctx.fields.stream)) {
  direct_ = cuda_aware_mpi(ctx.comm);
  for (const auto& s : plan_.stages)
    area_bytes_ = std::max(area_bytes_, device::layout_of(s).total());
  area_ = std::make_unique<device::device_memory>(area_bytes_);
  if (!direct_) host_ = std::make_unique<device::pinned_memory>(area_bytes_);
  device::check(cudaEventCreateWithFlags(&packed_, cudaEventDisableTiming), "cudaEventCreate");

  auto* area = static_cast<std::byte*>(area_->p);
  auto* wire = direct_ ? area : static_cast<std::byte*>(host_ ? host_->p : nullptr);
  std::byte* const* fields = ctx.fields.pointers.data();
  for (const auto& s : plan_.stages) {
    stage_work w;
    w.layout = device::layout_of(s);
    w.pack = device::launch_batch(device::pack_batch(s, w.layout, area, fields, plan_));
    w.unpack = device::launch_batch(device::unpack_batch(s, w.layout, area, fields, plan_));
    w.local = device::launch_batch(device::local_copy_batch(s, fields, plan_));
    for (size_t i = 0; i < s.recvs.size(); ++i) {
      w.recvs.emplace_back();
      MPI_Recv_init(wire + w.layout.recv_offsets[i], static_cast<int>(s.recvs[i].bytes), MPI_BYTE,
                    s.recvs[i].peer, s.recvs[i].tag, ctx.comm, &w.recvs.back());
    }
    for (size_t i = 0; i < s.sends.size(); ++i) {
      w.sends.emplace_back();
      MPI_Send_init(wire + w.layout.send_offsets[i], static_cast<int>(s.sends[i].bytes), MPI_BYTE,
                    s.sends[i].peer, s.sends[i].tag, ctx.comm, &w.sends.back());
    }
    stages_.push_back(std::move(w));
  }
}

device_p2p_transport::~device_p2p_transport() {
  for (auto& w : stages_) {
    for (auto& r : w.recvs) MPI_Request_free(&r);
    for (auto& r : w.sends) MPI_Request_free(&r);
  }
  if (packed_) cudaEventDestroy(packed_);
}

void device_p2p_transport::start(size_t stage) {
  stage_work& w = stages_[stage];
  if (!w.recvs.empty()) MPI_Startall(static_cast<int>(w.recvs.size()), w.recvs.data());
  w.pack.launch(stream_);
  if (!direct_ && w.layout.send_bytes > 0)
    device::check(
        cudaMemcpyAsync(host_->p, area_->p, w.layout.send_bytes, cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync (sends to pinned memory)");
  device::check(cudaEventRecord(packed_, stream_), "cudaEventRecord");
  // Queued behind the event: the local copies do not delay the sends.
  w.local.launch(stream_);
  if (w.sends.empty()) return;
  // The host waits for the pack (and its copy down) only, then posts the
  // sends from this thread: the messages are in flight when start() returns,
  // while the caller computes the interior. Posting from a stream callback
  // would call MPI from the driver's thread (MPI_THREAD_MULTIPLE).
  device::check(cudaEventSynchronize(packed_), "cudaEventSynchronize (packed sends)");
  MPI_Startall(static_cast<int>(w.sends.size()), w.sends.data());
}

void device_p2p_transport::wait(size_t stage) {
  stage_work& w = stages_[stage];
  const auto& s = plan_.stages[stage];
  waits_.wait_all(w.recvs, {}, [&](size_t i) {
    return describe_message(s.recvs[i], "from", transport_names::mpi_p2p);
  });
  if (!direct_ && w.layout.recv_bytes > 0)
    device::check(cudaMemcpyAsync(static_cast<std::byte*>(area_->p) + w.layout.recv_start,
                                  static_cast<std::byte*>(host_->p) + w.layout.recv_start,
                                  w.layout.recv_bytes, cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpyAsync (receives from pinned memory)");
  w.unpack.launch(stream_);
  waits_.wait_all(w.sends, {}, [&](size_t i) {
    return describe_message(s.sends[i], "to", transport_names::mpi_p2p);
  });
  device::check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

std::unique_ptr<transport> make_device_p2p_transport(const transport_context& ctx) {
  return std::make_unique<device_p2p_transport>(ctx);
}

}  // namespace halox
