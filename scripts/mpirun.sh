#!/usr/bin/env bash
# Launches a halox program with the build's MPI library: scripts/mpirun.sh NRANKS PROGRAM ARGS...
# Pins ranks to cores when they fit, oversubscribes (with yielding waits) when not.
set -euo pipefail
ranks=$1
shift
mpi=${HALOX_MPI:-openmpi}
cores=$(nproc)
if [[ $mpi == openmpi ]]; then
  # PMIx's munge authentication, where munge is installed but not running, costs every launch
  # about 2 s of retries; launches on one machine need only the native check (docs/testing.md).
  export PMIX_MCA_psec=${PMIX_MCA_psec:-native}
  flags=()
  [[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
  if ((ranks <= cores)); then
    flags+=(--bind-to core --map-by core)
  else
    flags+=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
  fi
  exec mpiexec.openmpi "${flags[@]}" -n "$ranks" "$@"
else
  flags=()
  ((ranks <= cores)) && flags+=(-bind-to core)
  exec mpiexec.mpich "${flags[@]}" -n "$ranks" "$@"
fi
