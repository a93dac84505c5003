// The ucx transport of a build without UCX: listed, never available.
#include <stdexcept>
#include "transport/core/names.hpp"

#include "transport/ucx/ucx.hpp"

namespace halox {

std::string ucx_transport_unavailable() {
  return "built without UCX (libucx-dev not found when configuring)";
}

std::unique_ptr<transport> make_ucx_transport(const transport_context&) {
  throw std::logic_error(std::string(transport_names::ucx) + " requested in a build without UCX");
}

}  // namespace halox
