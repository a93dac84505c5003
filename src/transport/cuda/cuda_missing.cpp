// halox built without CUDA: device memory is never detected, and whatever
// asks for it learns why it is missing.
#include "transport/cuda/cuda_transports.hpp"
#include "halox/common/error.hpp"
#include "halox/device.hpp"

namespace halox {

namespace {
constexpr const char* not_built = "halox was built without CUDA";
[[noreturn]] void fail() {
  throw usage_error(not_built);
}
}  // namespace

std::unique_ptr<transport> make_device_p2p_transport(const transport_context&) {
  fail();
}
std::unique_ptr<transport> make_cuda_ipc_transport(const transport_context&) {
  fail();
}
std::string cuda_ipc_unavailable() {
  return not_built;
}

namespace cuda {
bool built() {
  return false;
}
std::string unavailable() {
  return not_built;
}
int device_count() {
  return 0;
}
int select_device(int) {
  fail();
}
std::string device_name() {
  fail();
}
std::string version() {
  return "none";
}
bool is_device_pointer(const void*) {
  return false;
}
}  // namespace cuda

}  // namespace halox
