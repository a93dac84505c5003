// Every HALOX_* variable is read here, and parsed by one of the functions
// below, so that the same kind of value is accepted and refused alike
// whichever variable carries it.
#include "halox/common/environment.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "halox/common/error.hpp"

namespace halox {

std::optional<std::string> environment_value(std::string_view name) {
  if (!name.starts_with("HALOX_"))
    throw std::logic_error("halox reads only HALOX_* variables, not " + std::string(name));
  const char* value = std::getenv(std::string(name).c_str());
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

std::optional<size_t> environment_count(std::string_view name) {
  const auto text = environment_value(name);
  if (!text) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text->c_str(), &end, 10);
  if (end == text->c_str() || *end != '\0' || errno != 0 || text->front() == '-')
    throw usage_error(fmt::format("{}='{}' is not a non-negative integer", name, *text));
  return static_cast<size_t>(value);
}

std::optional<bool> environment_switch(std::string_view name) {
  const auto text = environment_value(name);
  if (!text) return std::nullopt;
  if (*text != "0" && *text != "1")
    throw usage_error(fmt::format("{}='{}' is not 0 or 1", name, *text));
  return *text == "1";
}

std::optional<double> environment_seconds(std::string_view name) {
  const auto text = environment_value(name);
  if (!text) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text->c_str(), &end);
  if (end == text->c_str() || *end != '\0' || errno != 0 || !(value > 0))
    throw usage_error(fmt::format("{}='{}' is not a positive number of seconds", name, *text));
  return value;
}

}  // namespace halox
