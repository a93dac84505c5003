#!/usr/bin/env bash
# `make bench`: the default sweep (examples/sweeps/default.toml: 2 ranks pinned to cores, 64^3
# cells per rank, halo 1 and 5, 1 and 8 fields, every transport x algorithm x grouping,
# interleaved rounds until every cell's ratio settles, on the rank grid of MPI_Dims_create and
# on one split along z), then one screen - per rank grid and shape the variant to use here, its
# time, speed-up over the plain-MPI baseline (taken round by round), efficiency against the floor
# of the lines and how far to trust it, the causes of instability - and a Markdown report with
# every table and PNG plots under results/ (HALOX_BENCH_TABLES=1 prints the tables too).
# HALOX_BENCH_TIME (seconds per configuration and round) and HALOX_BENCH_ROUNDS (a count, or
# auto) shorten or lengthen the measurement; HALOX_CARTEX adds the real cartex programs and the
# baselines' fidelity to them.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mpi=${HALOX_MPI:-openmpi}
build=${HALOX_BUILD_DIR:-$here/build/$mpi}
halox=${HALOX_VENV:-$here/.venv}/bin/halox
out=$here/results/bench-$mpi-$(date +%Y%m%d-%H%M%S).jsonl
overrides=()
[[ -n ${HALOX_BENCH_TIME:-} ]] && overrides+=(--set "bench.time=$HALOX_BENCH_TIME")
[[ -n ${HALOX_BENCH_ROUNDS:-} ]] && overrides+=(--set "bench.rounds=$HALOX_BENCH_ROUNDS")
# HALOX_CARTEX (docs/peers.md): the real cartex programs run beside the baselines and become
# the (xN) reference; every variant is then timed as they time themselves (a barrier before each
# exchange), so that the ratios compare like with like.
[[ -n ${HALOX_CARTEX:-} ]] && overrides+=(--set "bench.timing=latency")

status=0
"$halox" sweep "$here/examples/sweeps/default.toml" --mpi "$mpi" --build-dir "$build" \
  --output "$out" "${overrides[@]}" || status=$?
echo
if [[ -s $out ]]; then
  [[ -n ${HALOX_BENCH_TABLES:-} ]] && "$halox" report "$out" --efficiency
  "$halox" report "$out" --summary --save "${out%.jsonl}"
fi
exit "$status"
