#!/usr/bin/env bash
# The default sweep of `make bench`: 2 ranks pinned to cores, 64^3 cells per rank,
# halo 1 and 5, 1 and 8 fields, every transport x algorithm x field mode, interleaved
# rounds; prints the summary table and appends JSON records under results/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${HALOX_BUILD_DIR:-$here/build/${HALOX_MPI:-openmpi}}
mkdir -p "$here/results"
out="$here/results/bench-${HALOX_MPI:-openmpi}-$(date +%Y%m%d-%H%M%S).jsonl"
ranks=${HALOX_BENCH_RANKS:-2}
"$here/scripts/mpirun.sh" "$ranks" "$build/halox-bench" \
  --domain 64 64 64 --halo 1,5 --nfields 1,8 --type double \
  --transport all --algorithm all --fields all \
  --time "${HALOX_BENCH_TIME:-0.2}" --rounds "${HALOX_BENCH_ROUNDS:-3}" --warmup 5 \
  --json "$out" --quiet "$@"
echo
echo "results: $out"
if [[ -x "$here/.venv/bin/halox" ]]; then
  "$here/.venv/bin/halox" report "$out" || true
fi
