// exchange_options' overrides from the environment, read in this one place.
#include <fmt/core.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include "halox/common/environment.hpp"
#include "halox/common/error.hpp"
#include "halox/exchange.hpp"

namespace halox {

namespace {

void fill_count(std::optional<size_t>& knob, std::string_view variable) {
  if (knob) return;
  const auto text = environment_value(variable);
  if (!text) return;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text->c_str(), &end, 10);
  if (end == text->c_str() || *end != '\0' || errno != 0 || text->front() == '-')
    throw usage_error(fmt::format("{}='{}' is not a non-negative integer", variable, *text));
  knob = static_cast<size_t>(value);
}

void fill_switch(std::optional<bool>& knob, std::string_view variable) {
  if (knob) return;
  const auto text = environment_value(variable);
  if (!text) return;
  if (*text != "0" && *text != "1")
    throw usage_error(fmt::format("{}='{}' is not 0 or 1", variable, *text));
  knob = *text == "1";
}

}  // namespace

exchange_options with_environment(exchange_options o) {
  if (o.timeout_seconds <= 0) o.timeout_seconds = wait_policy::default_timeout();
  if (o.wisdom_file.empty())
    if (auto file = environment_value("HALOX_WISDOM")) o.wisdom_file = *file;
  auto& t = o.tuning;
  fill_count(t.shm.direct_min_run, "HALOX_SHM_DIRECT_MIN_RUN");
  fill_switch(t.shm.fetch_ahead, "HALOX_SHM_FETCH_AHEAD");
  fill_switch(t.shm.push, "HALOX_SHM_PUSH");
  fill_count(t.cma.direct_min_run, "HALOX_CMA_DIRECT_MIN_RUN");
  fill_switch(t.cma.fetch_ahead, "HALOX_CMA_FETCH_AHEAD");
  fill_count(t.rma.direct_min_run, "HALOX_RMA_DIRECT_MIN_RUN");
  fill_switch(t.p2p.fetch_ahead, "HALOX_P2P_FETCH_AHEAD");
  fill_switch(t.ucx.fetch_ahead, "HALOX_UCX_FETCH_AHEAD");
  return o;
}

}  // namespace halox
