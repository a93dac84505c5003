#!/usr/bin/env bash
# Installs the Debian packages halox builds and runs with, when any is missing.
set -euo pipefail

packages=(build-essential cmake pkg-config git python3 python3-venv python3-pip
  libopenmpi-dev openmpi-bin libmpich-dev mpich libhwloc-dev hwloc
  libucx-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev)
# Only the tests need these: test hosts in network namespaces (scripts/testhosts.sh) and a
# two-node Slurm on them (scripts/slurm-testhosts.sh).
test_packages=(iproute2 util-linux slurmctld slurmd slurm-client munge)
packages+=("${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing Debian packages: ${missing[*]}" >&2
  echo "install-deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
