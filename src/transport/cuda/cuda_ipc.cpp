#include "transport/cuda/cuda_ipc.hpp"

#include <cuda.h>
#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>

#include "common/yielding_mpi.hpp"
#include "halox/common/error.hpp"
#include "halox/device.hpp"
#include "transport/common/node_publication.hpp"
#include "transport/core/names.hpp"
#include "transport/cuda/cuda_transports.hpp"
#include "transport/cuda/peer_reads.hpp"

namespace halox {

namespace {

constexpr size_t handle_words = sizeof(cudaIpcMemHandle_t) / sizeof(uint64_t);
static_assert(sizeof(cudaIpcMemHandle_t) % sizeof(uint64_t) == 0);
static_assert(sizeof(cudaIpcEventHandle_t) == sizeof(cudaIpcMemHandle_t));

template <class Handle>
void append(std::vector<uint64_t>& words, const Handle& h) {
  uint64_t w[handle_words];
  std::memcpy(w, &h, sizeof h);
  words.insert(words.end(), w, w + handle_words);
}

template <class Handle>
Handle read_handle(const std::vector<uint64_t>& words, size_t at) {
  Handle h;
  std::memcpy(&h, words.data() + at, sizeof h);
  return h;
}

// The start of the allocation that holds `p`: an IPC handle maps a whole
// allocation. Asked of the driver through the runtime, so that nothing links
// libcuda (it comes from the machine that runs the program).
std::byte* allocation_base(std::byte* p) {
  using address_range = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  static const auto get_range =
      reinterpret_cast<address_range>(device::driver_function("cuMemGetAddressRange"));
  CUdeviceptr base = 0;
  size_t size = 0;
  if (get_range(&base, &size, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS)
    throw usage_error(fmt::format("{}: a field is not in device memory the driver knows",
                                  transport_names::cuda_ipc));
  return reinterpret_cast<std::byte*>(base);
}

constexpr int ready_tag(size_t stage) {
  return static_cast<int>(2 * stage);
}
constexpr int done_tag(size_t stage) {
  return static_cast<int>(2 * stage + 1);
}

}  // namespace

// Published once: per field its allocation's handle and its offset there,
// per stage the handles of my ready and done events (created here). On
// failure `problem` says why and the words are zeros of the same length.
std::vector<uint64_t> cuda_ipc_transport::publish_handles(const std::vector<std::byte*>& fields,
                                                          int me, std::string& problem) {
  const size_t nstages = plan_.stages.size();
  std::vector<uint64_t> words;
  try {
    for (std::byte* f : fields) {
      std::byte* base = allocation_base(f);
      cudaIpcMemHandle_t h{};
      device::check(cudaIpcGetMemHandle(&h, base), "cudaIpcGetMemHandle");
      append(words, h);
      words.push_back(static_cast<uint64_t>(f - base));
    }
    for (size_t s = 0; s < nstages; ++s)
      for (auto* events : {&ready_, &done_}) {
        cudaEvent_t e = nullptr;
        device::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventInterprocess),
                      "cudaEventCreate (interprocess)");
        events->push_back(e);
        cudaIpcEventHandle_t h{};
        device::check(cudaIpcGetEventHandle(&h, e), "cudaIpcGetEventHandle");
        append(words, h);
      }
  } catch (const std::exception& e) {
    problem = fmt::format("rank {}: {}", me, e.what());
    words.assign(fields.size() * (handle_words + 1) + nstages * 2 * handle_words, 0);
  }
  return words;
}

cuda_ipc_transport::cuda_ipc_transport(const transport_context& ctx)
    : plan_(ctx.plan), waits_(ctx.waits), stream_(static_cast<cudaStream_t>(ctx.fields.stream)) {
  require_on_node(ctx, transport_names::cuda_ipc);
  MPI_Comm_dup(ctx.comm, &comm_);
  int me = 0;
  MPI_Comm_rank(ctx.comm, &me);
  const auto& fields = ctx.fields.pointers;

  std::string problem;
  const std::vector<uint64_t> words = publish_handles(fields, me, problem);
  require_all(ctx.comm, problem);
  const auto layouts = gather_layouts(plan_, words, ctx.node, node_neighbours(plan_, ctx.node));
  const size_t per_field = handle_words + 1, events_at = fields.size() * per_field;
  auto node_rank = [&](int peer) { return ctx.node.node_rank_of[static_cast<size_t>(peer)]; };

  auto field_of = [&](int peer, int field) -> const std::byte* {
    const int r = node_rank(peer);
    const auto& w = layouts[static_cast<size_t>(r)].words;
    const size_t at = static_cast<size_t>(field) * per_field;
    const auto h = read_handle<cudaIpcMemHandle_t>(w, at);
    const std::string key(reinterpret_cast<const char*>(&h), sizeof h);
    void*& base = mapped_[{r, key}];
    if (!base)
      device::check(cudaIpcOpenMemHandle(&base, h, cudaIpcMemLazyEnablePeerAccess),
                    "cudaIpcOpenMemHandle");
    return static_cast<const std::byte*>(base) + w[at + handle_words];
  };
  auto event_of = [&](int peer, size_t stage, int which) {
    const auto& w = layouts[static_cast<size_t>(node_rank(peer))].words;
    cudaEvent_t e = nullptr;
    device::check(
        cudaIpcOpenEventHandle(
            &e, read_handle<cudaIpcEventHandle_t>(
                    w, events_at + (2 * stage + static_cast<size_t>(which)) * handle_words)),
        "cudaIpcOpenEventHandle");
    return e;
  };

  problem.clear();
  try {
    auto planned = device::plan_peer_reads(ctx, layouts, field_of, problem);
    for (size_t s = 0; s < planned.size() && problem.empty(); ++s) {
      stage_work w;
      w.owners = planned[s].owners;
      w.readers = planned[s].readers;
      for (int owner : w.owners) w.owner_ready.push_back(event_of(owner, s, 0));
      for (int reader : w.readers) w.reader_done.push_back(event_of(reader, s, 1));
      w.reads = device::launch_batch(planned[s].reads);
      w.local = device::launch_batch(planned[s].local);
      w.ready_in.resize(w.owners.size(), MPI_REQUEST_NULL);
      w.done_out.resize(w.owners.size(), MPI_REQUEST_NULL);
      w.ready_out.resize(w.readers.size(), MPI_REQUEST_NULL);
      w.done_in.resize(w.readers.size(), MPI_REQUEST_NULL);
      stages_.push_back(std::move(w));
    }
  } catch (const std::exception& e) {
    if (problem.empty()) problem = fmt::format("rank {}: {}", me, e.what());
  }
  require_all(ctx.comm, problem);
}

cuda_ipc_transport::~cuda_ipc_transport() {
  // My readers are done with my fields: every wait ended with their word.
  for (auto& w : stages_) {
    for (cudaEvent_t e : w.owner_ready) cudaEventDestroy(e);
    for (cudaEvent_t e : w.reader_done) cudaEventDestroy(e);
  }
  for (auto& [key, base] : mapped_)
    if (base) cudaIpcCloseMemHandle(base);
  for (auto* events : {&ready_, &done_})
    for (cudaEvent_t e : *events) cudaEventDestroy(e);
  int finalized = 0;
  MPI_Finalized(&finalized);
  // Unwinding from an error (a timeout: peers may be stuck), the job ends anyway.
  if (finalized || comm_ == MPI_COMM_NULL || std::uncaught_exceptions() > 0) return;
  // Every reader has unmapped my fields before I may go on to free them.
  yielding_barrier(comm_);
  MPI_Comm_free(&comm_);
}

void cuda_ipc_transport::start(size_t stage) {
  stage_work& w = stages_[stage];
  device::check(cudaEventRecord(ready_[stage], stream_), "cudaEventRecord (ready)");
  for (size_t i = 0; i < w.owners.size(); ++i)
    MPI_Irecv(nullptr, 0, MPI_BYTE, w.owners[i], ready_tag(stage), comm_, &w.ready_in[i]);
  for (size_t i = 0; i < w.readers.size(); ++i)
    MPI_Isend(nullptr, 0, MPI_BYTE, w.readers[i], ready_tag(stage), comm_, &w.ready_out[i]);
  w.local.launch(stream_);
}

void cuda_ipc_transport::wait(size_t stage) {
  stage_work& w = stages_[stage];
  auto named = [&](const std::vector<int>& peers, const char* what) {
    return [&peers, what](size_t i) {
      return fmt::format("{} of rank {} ({})", what, peers[i], transport_names::cuda_ipc);
    };
  };
  waits_.wait_all(
      w.ready_in,
      [&](size_t i) {
        device::check(cudaStreamWaitEvent(stream_, w.owner_ready[i], 0),
                      "cudaStreamWaitEvent (ready)");
      },
      named(w.owners, "the ready word"));
  w.reads.launch(stream_);
  device::check(cudaEventRecord(done_[stage], stream_), "cudaEventRecord (done)");
  for (size_t i = 0; i < w.readers.size(); ++i)
    MPI_Irecv(nullptr, 0, MPI_BYTE, w.readers[i], done_tag(stage), comm_, &w.done_in[i]);
  for (size_t i = 0; i < w.owners.size(); ++i)
    MPI_Isend(nullptr, 0, MPI_BYTE, w.owners[i], done_tag(stage), comm_, &w.done_out[i]);
  waits_.wait_all(
      w.done_in,
      [&](size_t i) {
        device::check(cudaStreamWaitEvent(stream_, w.reader_done[i], 0),
                      "cudaStreamWaitEvent (done)");
      },
      named(w.readers, "the done word"));
  waits_.wait_all(w.ready_out, {}, named(w.readers, "the ready word to"));
  waits_.wait_all(w.done_out, {}, named(w.owners, "the done word to"));
  device::check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

std::unique_ptr<transport> make_cuda_ipc_transport(const transport_context& ctx) {
  return std::make_unique<cuda_ipc_transport>(ctx);
}

std::string cuda_ipc_unavailable() {
  return cuda::unavailable();
}

}  // namespace halox
