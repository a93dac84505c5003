#include "halox_programs/device_memory.hpp"

#include <fmt/core.h>

#include <new>
#include <stdexcept>

#include "halox/common/error.hpp"
#include "halox/device.hpp"

#ifdef HALOX_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace halox::cuda {

namespace {

void require_device() {
  if (const auto why = unavailable(); !why.empty()) throw usage_error(why);
}

#ifdef HALOX_WITH_CUDA
void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(fmt::format("CUDA error in {}: {} ({})", what,
                                         cudaGetErrorString(status), cudaGetErrorName(status)));
}
#endif

}  // namespace

#ifdef HALOX_WITH_CUDA
void* allocate(size_t bytes) {
  require_device();
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();
    throw std::bad_alloc();
  }
  return p;
}
void release(void* p) {
  if (p) cudaFree(p);
}
void copy_to_device(void* device, const void* host, size_t bytes) {
  check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
}
void copy_to_host(void* host, const void* device, size_t bytes) {
  check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
}
void copy_on_device(void* to, const void* from, size_t bytes) {
  check(cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy on the device");
  // A copy within the device returns before it is done: wait for it.
  check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
}
#else
void* allocate(size_t) {
  require_device();
  throw usage_error("halox was built without CUDA");
}
void release(void*) {}
void copy_to_device(void*, const void*, size_t) { require_device(); }
void copy_to_host(void*, const void*, size_t) { require_device(); }
void copy_on_device(void*, const void*, size_t) { require_device(); }
#endif

}  // namespace halox::cuda
