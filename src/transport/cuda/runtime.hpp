// CUDA runtime helpers shared by the device transports.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "transport/cuda/copy_batch.hpp"

namespace halox::device {

// Throws std::runtime_error "CUDA error in WHAT: <the runtime's text>".
void check(cudaError_t status, const char* what);

// A driver API function (CUDA 12 signature), found through the runtime so that
// nothing links libcuda; throws when the driver lacks it.
void* driver_function(const char* name);

// A copy_batch's records in device memory, run as one kernel launch.
class launch_batch {
 public:
  launch_batch() = default;
  explicit launch_batch(const copy_batch& batch);
  launch_batch(launch_batch&& other) noexcept;
  launch_batch& operator=(launch_batch&& other) noexcept;
  launch_batch(const launch_batch&) = delete;
  launch_batch& operator=(const launch_batch&) = delete;
  ~launch_batch();

  void launch(cudaStream_t stream) const;  // nothing to do when empty
  bool empty() const { return count_ == 0; }

 private:
  box_record* records_ = nullptr;  // device memory
  uint32_t count_ = 0;
  uint64_t blocks_ = 0;
};

// Device memory freed when the owner goes (cudaMalloc / cudaMallocHost).
struct device_memory {
  void* p = nullptr;
  explicit device_memory(size_t bytes);
  ~device_memory();
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
};
struct pinned_memory {
  void* p = nullptr;
  explicit pinned_memory(size_t bytes);
  ~pinned_memory();
  pinned_memory(const pinned_memory&) = delete;
  pinned_memory& operator=(const pinned_memory&) = delete;
};

}  // namespace halox::device
