// Which MPI library halox runs on, as programs record it and the Python
// package checks mpi4py against it.
#pragma once

#include <string>
#include <string_view>

namespace halox {

// The first line of MPI_Get_library_version, as version_line makes it:
// "Open MPI v4.1.4, package: ...", "MPICH Version: 4.0.2". Callable before
// MPI_Init.
std::string mpi_library_version();

// The first line of a library version text, trailing blanks, commas and NULs
// removed (so that two spellings of one version text compare equal).
std::string version_line(std::string_view text);

}  // namespace halox
