#include <fmt/core.h>

#include "halox/common/error.hpp"
#include "halox/device.hpp"

namespace halox {

memory_kind parse_memory_kind(const std::string& name) {
  if (name == "detect") return memory_kind::detect;
  if (name == "host") return memory_kind::host;
  if (name == "device") return memory_kind::device;
  throw usage_error(
      fmt::format("unknown field memory '{}' (expected detect, host or device)", name));
}

std::string to_string(memory_kind kind) {
  switch (kind) {
    case memory_kind::detect:
      return "detect";
    case memory_kind::host:
      return "host";
    case memory_kind::device:
      return "device";
  }
  return "?";
}

}  // namespace halox
