#include "halox/common/mpi_library.hpp"

#include <mpi.h>

namespace halox {

std::string mpi_library_version() {
  char buffer[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(buffer, &length);
  std::string version(buffer, static_cast<size_t>(length));
  if (auto newline = version.find('\n'); newline != std::string::npos) version.resize(newline);
  while (!version.empty() && (version.back() == '\0' || version.back() == ' ' ||
                              version.back() == '\t' || version.back() == ','))
    version.pop_back();
  return version;
}

}  // namespace halox
