// The transports' tuning, knob by knob: each left unset is measured when the exchange is
// built (or follows the transport's rule); each set is used as given. The
// environment can set them too (the variable of each is in transport_knobs
// below); an option set in code wins over the environment.
//
//   exchange_options o;
//   o.transport = halox::parse_transport_choice("shm");
//   o.tuning.shm.push = false;                 // readers pull, never push
//   o.tuning.shm.direct_min_run = 256;         // runs under 256 B through the outbox
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace halox {

// The single-copy transports (shm, cma, and mpi-rma's landing buffers):
// which boxes the owner packs into its outbox and which the reader copies
// straight from the owner's fields.
struct single_copy_tuning {
  // Runs (contiguous pieces of a box row) shorter than this many bytes go
  // through the outbox, longer ones are copied directly; 0: every box direct;
  // unset: measured.
  std::optional<size_t> direct_min_run;
  // Fetch short strided runs a few rows ahead while copying; unset: measured.
  std::optional<bool> fetch_ahead;
};

struct shm_tuning : single_copy_tuning {
  // The owner writes the halos of readers that are not ready yet instead of
  // waiting for them to pull; unset: measured.
  std::optional<bool> push;
};

// The packing message transports (mpi-p2p, ucx).
struct message_tuning {
  // As single_copy_tuning::fetch_ahead.
  std::optional<bool> fetch_ahead;
};

struct transport_tuning {
  shm_tuning shm;
  single_copy_tuning cma;
  single_copy_tuning rma;  // mpi-rma, mpi-rma-fence: direct_min_run only
  message_tuning p2p;
  message_tuning ucx;
};

// Every knob above, named once: its option, its environment variable, what
// it means, and where it lives. The environment table, with_environment, the
// transports' "forced by" texts and docs/library.md follow this list (a test
// holds them to it).
struct transport_knob {
  std::string_view option;    // "tuning.shm.push": the member of exchange_options
  std::string_view variable;  // "HALOX_SHM_PUSH": the same, upper case, in the environment
  std::string_view meaning;
  std::optional<size_t>& (*count)(transport_tuning&) = nullptr;  // a number of bytes
  std::optional<bool>& (*on)(transport_tuning&) = nullptr;       // 0 or 1
};

inline constexpr transport_knob transport_knobs[] = {
    {"tuning.shm.direct_min_run", "HALOX_SHM_DIRECT_MIN_RUN",
     "shm: runs under N bytes go through the outbox, longer ones are copied directly",
     [](transport_tuning& t) -> auto& { return t.shm.direct_min_run; }},
    {"tuning.shm.fetch_ahead", "HALOX_SHM_FETCH_AHEAD",
     "shm: 1 fetches short strided runs ahead, 0 does not", nullptr,
     [](transport_tuning& t) -> auto& { return t.shm.fetch_ahead; }},
    {"tuning.shm.push", "HALOX_SHM_PUSH", "shm: 1 lets owners write ready halos, 0 only pulls",
     nullptr, [](transport_tuning& t) -> auto& { return t.shm.push; }},
    {"tuning.cma.direct_min_run", "HALOX_CMA_DIRECT_MIN_RUN", "cma: as HALOX_SHM_DIRECT_MIN_RUN",
     [](transport_tuning& t) -> auto& { return t.cma.direct_min_run; }},
    {"tuning.cma.fetch_ahead", "HALOX_CMA_FETCH_AHEAD", "cma: as HALOX_SHM_FETCH_AHEAD", nullptr,
     [](transport_tuning& t) -> auto& { return t.cma.fetch_ahead; }},
    {"tuning.rma.direct_min_run", "HALOX_RMA_DIRECT_MIN_RUN",
     "mpi-rma: messages whose runs average under N bytes are packed into landing buffers",
     [](transport_tuning& t) -> auto& { return t.rma.direct_min_run; }},
    {"tuning.p2p.fetch_ahead", "HALOX_P2P_FETCH_AHEAD", "mpi-p2p: as HALOX_SHM_FETCH_AHEAD",
     nullptr, [](transport_tuning& t) -> auto& { return t.p2p.fetch_ahead; }},
    {"tuning.ucx.fetch_ahead", "HALOX_UCX_FETCH_AHEAD", "ucx: as HALOX_SHM_FETCH_AHEAD", nullptr,
     [](transport_tuning& t) -> auto& { return t.ucx.fetch_ahead; }},
};

}  // namespace halox
