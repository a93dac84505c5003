#include "halox/common/mpi_library.hpp"

#include <mpi.h>

namespace halox {

std::string version_line(std::string_view text) {
  std::string line(text.substr(0, text.find('\n')));
  while (!line.empty() && (line.back() == '\0' || line.back() == ' ' || line.back() == '\t' ||
                           line.back() == ',' || line.back() == '\r'))
    line.pop_back();
  return line;
}

std::string mpi_library_version() {
  char buffer[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(buffer, &length);
  return version_line(std::string_view(buffer, static_cast<size_t>(length)));
}

}  // namespace halox
