#!/usr/bin/env bash
# Installs the Debian packages halox builds and runs with, when any is missing.
#   scripts/install-deps.sh          what building and `make bench` need
#   scripts/install-deps.sh --test   and what the test suite needs besides: a one-node Slurm
#                                    (slurmctld, slurmd, the clients, munge) for the tests of
#                                    halox sweep under sbatch and salloc, and the test hosts
set -euo pipefail

packages=(build-essential cmake pkg-config git python3 python3-venv python3-pip python3-dev
  libopenmpi-dev openmpi-bin libmpich-dev mpich libhwloc-dev hwloc
  libucx-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  gfortran)  # the Fortran module (HALOX_FORTRAN=AUTO builds it when gfortran is here)
# Only the tests need these: a Slurm (slurmctld, slurmd, the clients, munge) for the tests of
# halox sweep under sbatch and salloc, and test hosts in network namespaces
# (scripts/testhosts.sh) with a two-node Slurm on them (scripts/slurm-testhosts.sh).
test_packages=(iproute2 util-linux slurmctld slurmd slurm-client munge)

[[ ${1:-} == --test ]] && packages=("${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing Debian packages: ${missing[*]}" >&2
  echo "install-deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
  # The test packages are optional: the Slurm tests say why they are skipped.
  [[ ${1:-} == --test ]] && exit 0
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
