// The transports of device memory, built by the registry (registry.cpp):
// mpi-p2p for device fields (device_p2p.hpp) and cuda-ipc (cuda_ipc.hpp).
// Without CUDA the builders throw and cuda-ipc is unavailable with the reason.
#pragma once

#include <memory>
#include <string>

#include "halox/extend/transport.hpp"

namespace halox {

// Fields in device memory: the exchange has checked that the transport moves them.
std::unique_ptr<transport> make_device_p2p_transport(const transport_context& ctx);
std::unique_ptr<transport> make_cuda_ipc_transport(const transport_context& ctx);
// Why cuda-ipc cannot run here (no CUDA in this build, no device); empty when it can.
std::string cuda_ipc_unavailable();

}  // namespace halox
