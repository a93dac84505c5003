// The built-in transports' registry names, one place for the table
// (registry.cpp) and the classes that report them.
#pragma once

#include <string_view>

namespace halox::transport_names {

inline constexpr std::string_view mpi_p2p = "mpi-p2p";
inline constexpr std::string_view mpi_types = "mpi-types";
inline constexpr std::string_view mpi_cartex = "mpi-cartex";
inline constexpr std::string_view mpi_neighbor = "mpi-neighbor";
inline constexpr std::string_view mpi_rma = "mpi-rma";
inline constexpr std::string_view mpi_rma_fence = "mpi-rma-fence";
inline constexpr std::string_view shm = "shm";
inline constexpr std::string_view ucx = "ucx";
inline constexpr std::string_view cma = "cma";
inline constexpr std::string_view cuda_ipc = "cuda-ipc";

}  // namespace halox::transport_names
