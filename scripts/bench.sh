#!/usr/bin/env bash
# The default sweep of `make bench`: 2 ranks pinned to cores, 64^3 cells per rank,
# halo 1 and 5, 1 and 8 fields, every transport x algorithm x field mode, interleaved
# rounds, on two rank grids: MPI_Dims_create's (split along x, the fastest-running
# dimension: strided x faces) and one split along z (contiguous z faces). Prints each
# job's summary, then the seeds' tables from the JSON records under results/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${HALOX_BUILD_DIR:-$here/build/${HALOX_MPI:-openmpi}}
mkdir -p "$here/results"
out="$here/results/bench-${HALOX_MPI:-openmpi}-$(date +%Y%m%d-%H%M%S).jsonl"
ranks=${HALOX_BENCH_RANKS:-2}
grids=("0 0 0" "1 1 $ranks")
for grid in "${grids[@]}"; do
  echo "== rank grid ${grid/0 0 0/from MPI_Dims_create}"
  # shellcheck disable=SC2086
  "$here/scripts/mpirun.sh" "$ranks" "$build/halox-bench" --mpicart $grid \
    --domain 64 64 64 --halo 1,5 --nfields 1,8 --type double \
    --transport all --algorithm all --fields all \
    --time "${HALOX_BENCH_TIME:-0.2}" --rounds "${HALOX_BENCH_ROUNDS:-3}" --warmup 5 \
    --json "$out" --quiet "$@"
  echo
done
echo "results: $out"
venv=${HALOX_VENV:-$here/.venv}
if [[ -x "$venv/bin/halox" ]]; then
  "$venv/bin/halox" report "$out" --transport mpi-types,mpi-p2p,shm || true
fi
