// Fields in CUDA device memory.
//
// halo_exchange takes device pointers as it takes host pointers: with
// exchange_options::memory = memory_kind::device, or detected (memory_kind::
// detect, the default: cudaPointerGetAttributes on every field). Packing,
// unpacking and local copies then run as CUDA kernels, one launch per stage
// for all boxes and fields of its messages, on exchange_options::cuda_stream
// (a cudaStream_t; null: the default stream). start() returns once the
// stage's pack kernel has run and its messages are posted (its other launches
// queued), so that interior work overlaps them; wait() returns once
// the halos are complete on the device (the stream synchronised). Device
// fields move by `mpi-p2p` (pinned host buffers, or device pointers handed
// to a CUDA-aware MPI) and `cuda-ipc` (ranks of a node map each other's
// device fields and copy halos device to device), routed as on the host:
// "cuda-ipc" means cuda-ipc+mpi-p2p.
//
// The functions below work in every build; without CUDA they say so
// (unavailable()) or throw usage_error.
#pragma once

#include <string>

namespace halox {

enum class memory_kind {
  detect,  // device when cudaPointerGetAttributes says so, host otherwise
  host,    // any memory the CPU reads (heap, node-shared windows, pinned)
  device,  // CUDA device (or managed) memory
};
memory_kind parse_memory_kind(const std::string& name);  // "detect" | "host" | "device"
std::string to_string(memory_kind kind);

namespace cuda {

// Whether this build of halox has CUDA support.
bool built();
// Why device memory cannot be used here ("halox was built without CUDA", "no
// CUDA device: ..."); empty when a device is usable.
std::string unavailable();
// CUDA devices this process sees (0 without CUDA or without a driver).
int device_count();
// Makes device (node_rank mod device_count) current: ranks of a node share
// the devices round robin. Returns the device.
int select_device(int node_rank);
// The current device's name, and "runtime X.Y, driver X.Y".
std::string device_name();
std::string version();
// Whether `p` points into device (or managed) memory.
bool is_device_pointer(const void* p);

}  // namespace cuda
}  // namespace halox
