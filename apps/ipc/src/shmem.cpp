#include "halox_programs/ipc/shmem.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "halox/common/error.hpp"
#include "halox_programs/ipc/spin_wait.hpp"

namespace halox::ipc {

namespace {
// One flag per cache line: the owner writing flag c+1 must not disturb the
// peers polling flag c.
constexpr size_t flag_stride = 64;
}  // namespace

shmem_copy::shmem_copy(ipc_context& context, size_t max_payload, size_t chunk_bytes)
    : copy_mechanism(context), max_payload_(max_payload), chunk_bytes_(chunk_bytes) {
  if (pipelined())
    max_chunks_ = std::max<size_t>(1, (max_payload_ + chunk_bytes_ - 1) / chunk_bytes_);
  size_t control = (max_chunks_ + static_cast<size_t>(context.peer_count())) * flag_stride;

  std::string problem;
  int fd = -1;
  if (context.is_owner()) {
    try {
      bounce_ = shared_arena::create(pipelined() ? "halox-ipc-shmem-p" : "halox-ipc-shmem-np",
                                      max_payload_, control);
      fd = bounce_.fd();
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  if (auto error = agree_on_error(context.comm(), problem); !error.empty())
    throw run_error(fmt::format("{}: cannot create the bounce segment: {}", name(), error));
  auto shared = share_fd(context.comm(), 0, fd);
  if (!context.is_owner()) {
    try {
      bounce_ = shared_arena::import(shared.fd, /*map_data=*/true);
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  if (auto error = agree_on_error(context.comm(), problem); !error.empty())
    throw run_error(fmt::format("{}: cannot map the bounce segment: {}", name(), error));
  // Touch the bounce pages now, so that no copy pays their first fault.
  if (context.is_owner()) std::fill_n(bounce_.data(), max_payload_, std::byte{0});
}

std::atomic<uint64_t>& shmem_copy::ready(size_t chunk) {
  return *reinterpret_cast<std::atomic<uint64_t>*>(bounce_.control() + chunk * flag_stride);
}

std::atomic<uint64_t>& shmem_copy::done(int peer) {
  return *reinterpret_cast<std::atomic<uint64_t>*>(
      bounce_.control() + (max_chunks_ + static_cast<size_t>(peer)) * flag_stride);
}

void shmem_copy::on_prepare() {
  size_t payload = layout_.payload();
  if (payload > max_payload_)
    throw std::invalid_argument(fmt::format("{}: payload {} B exceeds the bounce segment {} B",
                                            name(), payload, max_payload_));
  chunk_ = pipelined() ? std::min(chunk_bytes_, payload) : payload;
  chunks_ = std::max<size_t>(1, (payload + chunk_ - 1) / chunk_);
}

void shmem_copy::on_copy() {
  // Sequence numbers only grow, so flags never need resetting between copies
  // or layouts; every rank counts the copies alike.
  const uint64_t seq = ++sequence_;
  const size_t payload = layout_.payload();
  std::byte* bounce = bounce_.data();
  if (context_.is_owner()) {
    for (int p = 0; p < context_.peer_count(); ++p) wait_at_least(done(p), seq - 1);
    for (size_t c = 0; c < chunks_; ++c) {
      size_t begin = c * chunk_, end = std::min(payload, begin + chunk_);
      pack_range(bounce + begin, source_, layout_, begin, end);
      ready(c).store(seq, std::memory_order_release);
    }
  } else {
    for (size_t c = 0; c < chunks_; ++c) {
      size_t begin = c * chunk_, end = std::min(payload, begin + chunk_);
      wait_at_least(ready(c), seq);
      unpack_range(destination_, bounce + begin, layout_, begin, end);
    }
    done(context_.peer_index()).store(seq, std::memory_order_release);
  }
}

}  // namespace halox::ipc
