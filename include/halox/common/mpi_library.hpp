// Which MPI library halox runs on, as programs record it and the Python
// package checks mpi4py against it.
#pragma once

#include <string>

namespace halox {

// The first line of MPI_Get_library_version, trailing blanks and commas
// removed: "Open MPI v4.1.4, package: ...", "MPICH Version: 4.0.2". Callable
// before MPI_Init.
std::string mpi_library_version();

}  // namespace halox
