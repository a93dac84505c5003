// Transport tuning knobs: each left unset is measured when the exchange is
// built (or follows the transport's rule); each set is used as given. The
// environment can set them too (HALOX_* variables, see
// halox/common/environment.hpp); an option set in code wins over the
// environment.
//
//   exchange_options o;
//   o.transport = halox::parse_transport_choice("shm");
//   o.tuning.shm.push = false;                 // readers pull, never push
//   o.tuning.shm.direct_min_run = 256;         // runs under 256 B through the outbox
#pragma once

#include <cstddef>
#include <optional>

namespace halox {

// The single-copy transports (shm, cma, and mpi-rma's landing buffers):
// which boxes the owner packs into its outbox and which the reader copies
// straight from the owner's fields.
struct single_copy_tuning {
  // Runs (contiguous pieces of a box row) shorter than this many bytes go
  // through the outbox, longer ones are copied directly; 0: every box direct;
  // unset: measured (HALOX_<T>_DIRECT_MIN_RUN).
  std::optional<size_t> direct_min_run;
  // Fetch short strided runs a few rows ahead while copying; unset: measured
  // (HALOX_<T>_FETCH_AHEAD=0|1).
  std::optional<bool> fetch_ahead;
};

struct shm_tuning : single_copy_tuning {
  // The owner writes the halos of readers that are not ready yet instead of
  // waiting for them to pull; unset: measured (HALOX_SHM_PUSH=0|1).
  std::optional<bool> push;
};

// The packing message transports (mpi-p2p, ucx).
struct message_tuning {
  // As single_copy_tuning::fetch_ahead (HALOX_P2P_FETCH_AHEAD, HALOX_UCX_FETCH_AHEAD).
  std::optional<bool> fetch_ahead;
};

struct transport_tuning {
  shm_tuning shm;
  single_copy_tuning cma;
  single_copy_tuning rma;  // mpi-rma, mpi-rma-fence: direct_min_run only
  message_tuning p2p;
  message_tuning ucx;
};

}  // namespace halox
