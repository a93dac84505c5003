// Fetching short strided runs ahead (copy_list::fetch_ahead): measured or
// forced once per transport, for the single-copy and the message transports.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "halox/extend/pack.hpp"
#include "halox/extend/transport.hpp"

namespace halox {

// Whether the copy lists of a schedule fetch short strided runs ahead
// (copy_list::fetch_ahead), and how that was decided.
struct fetch_ahead_choice {
  bool on = false;
  std::string how;
};

// Collective over node_comm: sets `lists` to fetch ahead or not. As `forced`
// says when set (the option's name, `forced_by`, is the reason); otherwise off
// when no rank has a run to fetch, on when every rank's longest fetched end
// spans more than its L2 cache (copy_list::fetched_span), else measured both
// ways (trial.hpp) and the faster kept.
fetch_ahead_choice choose_fetch_ahead(transport& t, size_t stages,
                                      const std::vector<copy_list*>& lists,
                                      std::optional<bool> forced, std::string_view forced_by,
                                      MPI_Comm node_comm);

// "strided runs fetched ahead (how)" or "no run fetched ahead (how)".
std::string describe_fetch_ahead(const fetch_ahead_choice& choice);

}  // namespace halox
