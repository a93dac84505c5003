#include "transport/cuda/runtime.hpp"

#include <cuda.h>
#include <fmt/core.h>

#include <new>
#include <stdexcept>

#include "halox/common/error.hpp"
#include "halox/device.hpp"

namespace halox {

namespace device {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(fmt::format("CUDA error in {}: {} ({})", what,
                                         cudaGetErrorString(status), cudaGetErrorName(status)));
}

void* driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found),
        "cudaGetDriverEntryPointByVersion");
  if (found != cudaDriverEntryPointSuccess || !fn)
    throw std::runtime_error(fmt::format("the CUDA driver has no {}", name));
  return fn;
}

device_memory::device_memory(size_t bytes) {
  if (bytes > 0) check(cudaMalloc(&p, bytes), "cudaMalloc");
}
device_memory::~device_memory() {
  if (p) cudaFree(p);
}
pinned_memory::pinned_memory(size_t bytes) {
  if (bytes > 0) check(cudaMallocHost(&p, bytes), "cudaMallocHost");
}
pinned_memory::~pinned_memory() {
  if (p) cudaFreeHost(p);
}

}  // namespace device

namespace cuda {

namespace {

// The runtime's answer, asked once: a process without a driver or a device
// gets the same answer every time.
struct device_census {
  int count = 0;
  std::string problem;
  device_census() {
    const cudaError_t status = cudaGetDeviceCount(&count);
    int driver = 0;
    cudaDriverGetVersion(&driver);
    if (status != cudaSuccess) {
      count = 0;
      // Without libcuda the runtime reports an "insufficient" driver.
      problem = driver == 0 ? std::string("no CUDA device (no CUDA driver on this machine)")
                            : fmt::format("no CUDA device ({})", cudaGetErrorString(status));
      cudaGetLastError();  // the error is not sticky: clear it for later calls
    } else if (count == 0) {
      problem = "no CUDA device";
    }
  }
};
const device_census& census() {
  static const device_census c;
  return c;
}

void require_device() {
  if (!census().problem.empty()) throw usage_error(census().problem);
}

std::string dotted(int version) {
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

}  // namespace

bool built() {
  return true;
}
std::string unavailable() {
  return census().problem;
}
int device_count() {
  return census().count;
}

int select_device(int node_rank) {
  require_device();
  const int device = node_rank % census().count;
  device::check(cudaSetDevice(device), "cudaSetDevice");
  return device;
}

std::string device_name() {
  require_device();
  int device = 0;
  device::check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  device::check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  return prop.name;
}

std::string version() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  return fmt::format("runtime {}, driver {}", dotted(runtime),
                     driver > 0 ? dotted(driver) : "none");
}

namespace {

// Whether this process has a CUDA context (a primary one active, or one
// current): without one no pointer of it is device memory, and the runtime
// would create one (hundreds of MB of device memory per rank) to answer.
bool has_context() {
  using current_t = CUresult (*)(CUcontext*);
  using device_t = CUresult (*)(CUdevice*, int);
  using state_t = CUresult (*)(CUdevice, unsigned*, int*);
  static const auto current =
      reinterpret_cast<current_t>(device::driver_function("cuCtxGetCurrent"));
  static const auto device_of = reinterpret_cast<device_t>(device::driver_function("cuDeviceGet"));
  static const auto state =
      reinterpret_cast<state_t>(device::driver_function("cuDevicePrimaryCtxGetState"));
  CUcontext context = nullptr;
  if (current(&context) == CUDA_SUCCESS && context) return true;
  for (int d = 0; d < census().count; ++d) {
    CUdevice dev = 0;
    unsigned flags = 0;
    int active = 0;
    if (device_of(&dev, d) == CUDA_SUCCESS && state(dev, &flags, &active) == CUDA_SUCCESS && active)
      return true;
  }
  return false;
}

}  // namespace

bool is_device_pointer(const void* p) {
  if (!census().problem.empty() || !p || !has_context()) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

}  // namespace cuda
}  // namespace halox
