// exchange_options' overrides from the environment, applied in this one place;
// the table of every HALOX_* variable.
#include <fmt/core.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "halox/common/environment.hpp"
#include "halox/common/error.hpp"
#include "halox/exchange.hpp"
#include "halox/extend/wait_policy.hpp"
#include "halox/extend/topology.hpp"

namespace halox {

namespace {

// The variables that are not knobs of the transports' tuning (those are transport_knobs').
constexpr environment_variable option_variables[] = {
    {"HALOX_TIMEOUT", "exchange_options::timeout_seconds",
     "seconds a wait may last before the run fails naming the peer (600)"},
    {"HALOX_RANKS_PER_NODE", "exchange_options::ranks_per_node",
     "groups of N consecutive ranks count as nodes (0: real shared-memory nodes)"},
    {"HALOX_WISDOM", "exchange_options::wisdom_file",
     "file of earlier automatic choices, read before measuring and appended after"},
    {"HALOX_CUDA_AWARE_MPI", "the MPI library's own answer",
     "mpi-p2p on device fields: 1 hands device pointers to MPI, 0 copies through pinned host "
     "memory"},
};

}  // namespace

std::span<const environment_variable> environment_variables() {
  static const std::vector<environment_variable> table = [] {
    std::vector<environment_variable> all(std::begin(option_variables), std::end(option_variables));
    for (const auto& knob : transport_knobs) all.push_back({knob.variable, knob.option, knob.meaning});
    return all;
  }();
  return table;
}

exchange_options with_environment(exchange_options o) {
  if (o.timeout_seconds <= 0) o.timeout_seconds = wait_policy::default_timeout();
  if (o.wisdom_file.empty())
    if (auto file = environment_value("HALOX_WISDOM")) o.wisdom_file = *file;
  check_ranks_per_node(o.ranks_per_node, false);
  if (o.ranks_per_node == 0)
    if (auto n = ranks_per_node_from_environment()) o.ranks_per_node = *n;
  for (const auto& knob : transport_knobs) {
    if (knob.count) {
      auto& value = knob.count(o.tuning);
      if (!value) value = environment_count(knob.variable);
    } else {
      auto& value = knob.on(o.tuning);
      if (!value) value = environment_switch(knob.variable);
    }
  }
  return o;
}

}  // namespace halox
