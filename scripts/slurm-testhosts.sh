#!/usr/bin/env bash
# A two-node Slurm cluster on the test hosts of scripts/testhosts.sh (hosta, hostb):
#
#   scripts/slurm-testhosts.sh start          # hosts up, munged, slurmctld on hosta, slurmd on each
#   scripts/slurm-testhosts.sh run CMD...     # a Slurm client on hosta: sbatch --wait job.sh, sinfo
#   scripts/slurm-testhosts.sh conf           # the path of slurm.conf (SLURM_CONF)
#   scripts/slurm-testhosts.sh stop           # stop the daemons this script started (munged too)
#
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge. The configuration lives in
# HALOX_SLURM_HOSTS_DIR (default /var/tmp/halox-slurm-hosts), /etc/slurm is left alone. The
# daemons listen on the hosts' addresses only (10.77.0.x, inside their namespaces), so a Slurm
# of this machine keeps its ports. Nodes describe this machine's cores (slurmd -C): both hosts
# share them. MPI programs start with PMIx (MpiDefault=pmix, which Debian's Open MPI speaks).
# `start` is idempotent; on failure the last line on stderr says why.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${HALOX_SLURM_HOSTS_DIR:-/var/tmp/halox-slurm-hosts}
conf=$dir/slurm.conf
munge_socket=/run/munge/munge.socket.2
hosts=(hosta hostb)

fail() {
  echo "slurm-testhosts: $*" >&2
  exit 1
}

# shellcheck source=slurm-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/slurm-common.sh"

on() { "$here/testhosts.sh" run "$@"; } # on HOST CMD...

alive() { # pidfile
  [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

write_conf() {
  local node
  # slurmd -C describes this machine as a node line: CPUs, sockets, cores, threads, memory.
  node=$(slurmd -C | head -n 1)
  [[ $node == NodeName=* ]] || fail "slurmd -C gave no node description: $node"
  node=${node#NodeName=* } # keep the hardware, the names are ours
  mkdir -p "$dir/state"
  cat >"$conf.new" <<EOF
# Written by halox scripts/slurm-testhosts.sh: two nodes on the test hosts of one machine.
ClusterName=haloxhosts
SlurmctldHost=hosta(10.77.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
# A temporary folder per node: PMIx names its folders by job and step only.
TmpFS=$dir/tmp-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
$(scheduling_conf)
NodeName=hosta NodeAddr=10.77.0.1 $node State=UNKNOWN
NodeName=hostb NodeAddr=10.77.0.2 $node State=UNKNOWN
PartitionName=hosts Nodes=hosta,hostb Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$conf.new" "$conf"
}


all_alive() {
  alive "$dir/slurmctld.pid" || return 1
  for h in "${hosts[@]}"; do alive "$dir/slurmd-$h.pid" || return 1; done
}

start() {
  [[ $(id -u) -eq 0 ]] || fail "needs root to start slurmctld and slurmd as root"
  for program in slurmctld slurmd sinfo sbatch munged; do
    command -v "$program" >/dev/null ||
      fail "$program is not installed (apt-get install slurmctld slurmd slurm-client munge)"
  done
  "$here/testhosts.sh" up 2 >/dev/null
  mkdir -p "$dir"
  exec 9>"$dir/lock"
  flock 9
  start_munge
  if ! all_alive; then
    stop_daemons
    write_conf
    # -c: a new cluster, without the jobs of an earlier one.
    on hosta slurmctld -f "$conf" -c 9>&- ||
      fail "slurmctld did not start: $(tail -n 3 "$dir/slurmctld.log" 2>/dev/null)"
    for h in "${hosts[@]}"; do
      mkdir -p "$dir/spool-$h" "$dir/tmp-$h"
      # `ip netns exec` gives the host a sysfs of its own, without the cgroup mounts that
      # slurmd's cgroup plugin looks for (it checks them even when tracking by process group):
      # mount the systemd hierarchy again, in the host's own mount namespace.
      on "$h" sh -c 'mount -t tmpfs cgroup_root /sys/fs/cgroup && mkdir /sys/fs/cgroup/systemd &&
        mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd && exec "$@"' \
        slurmd env "${slurmd_env[@]}" slurmd -f "$conf" -N "$h" 9>&- ||
        fail "slurmd on $h did not start: $(tail -n 3 "$dir/slurmd-$h.log" 2>/dev/null)"
    done
  fi
  local states=""
  for _ in $(seq 150); do
    states=$(client sinfo -h -N -o '%N=%t' 2>/dev/null | sort -u | tr '\n' ' ' || true)
    if [[ $states =~ hosta=(idle|mix|alloc) ]] && [[ $states =~ hostb=(idle|mix|alloc) ]]; then
      echo "$conf"
      return
    fi
    for h in "${hosts[@]}"; do
      [[ $states =~ $h=(down|drain|fail) ]] &&
        client scontrol update nodename="$h" state=resume >/dev/null 2>&1 || true
    done
    sleep 0.2
  done
  fail "the nodes did not come up (states: ${states:-none}; logs in $dir)"
}

stop_daemons() {
  if alive "$dir/slurmctld.pid"; then
    # Jobs first: their steps would outlive the daemons and hold the hosts' cores.
    client scancel --quiet --user=root 2>/dev/null || true
    for _ in $(seq 50); do
      [[ -z $(client squeue -h -o %i 2>/dev/null) ]] && break
      sleep 0.2
    done
  fi
  for pidfile in "$dir"/slurmd-*.pid "$dir/slurmctld.pid"; do
    if alive "$pidfile"; then
      local pid
      pid=$(cat "$pidfile")
      kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$pidfile"
  done
}

client() { "$here/testhosts.sh" run hosta env SLURM_CONF="$conf" "$@"; }

case ${1:-} in
  start) start ;;
  stop) stop_daemons; stop_munge ;;
  conf) echo "$conf" ;;
  run) shift; exec "$here/testhosts.sh" run hosta env SLURM_CONF="$conf" "$@" ;;
  *) echo "usage: $0 start|stop|conf|run CMD..." >&2; exit 2 ;;
esac
