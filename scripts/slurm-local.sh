#!/usr/bin/env bash
# A one-node Slurm cluster on this host, for the tests of `halox sweep` under Slurm:
#
#   scripts/slurm-local.sh start    # write the configuration, start munged, slurmctld, slurmd
#   scripts/slurm-local.sh conf     # print the path of slurm.conf (for SLURM_CONF=...)
#   scripts/slurm-local.sh stop     # stop the daemons this script started (munged among them)
#   scripts/slurm-local.sh stop munged slurmctld slurmd
#                                   # only those named (what one `start` said it started)
#
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge. `start` is idempotent (a
# running cluster is reused; concurrent calls wait for each other); its stdout is a line
# `started: DAEMON...` naming the daemons this call started (none when it reused them all), then
# the path of slurm.conf; when it fails, it stops what it started. It leaves /etc/slurm alone:
# the configuration lives in HALOX_SLURM_DIR (default /var/tmp/halox-slurm), clients find it
# through SLURM_CONF. The node is this host (NodeName = hostname, CPUs and memory as slurmd -C
# reports them); the daemons run as root (SlurmUser=root, SlurmdUser=root), MPI programs start
# with PMIx (MpiDefault=pmix, which Debian's Open MPI speaks). On failure, the last line on
# stderr says why, and the exit status is non-zero.
set -euo pipefail

dir=${HALOX_SLURM_DIR:-/var/tmp/halox-slurm}
conf=$dir/slurm.conf
munge_socket=/run/munge/munge.socket.2

fail() {
  echo "slurm-local: $*" >&2
  exit 1
}

# shellcheck source=slurm-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/slurm-common.sh"

alive() { # pidfile
  [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

write_conf() {
  local host node
  host=$(hostname -s)
  # slurmd -C describes this host as a node line: CPUs, sockets, cores, threads, memory.
  node=$(slurmd -C | head -n 1)
  [[ $node == NodeName=* ]] || fail "slurmd -C gave no node description: $node"
  mkdir -p "$dir/state" "$dir/spool"
  cat >"$conf.new" <<EOF
# Written by halox scripts/slurm-local.sh: a one-node test cluster on $host.
ClusterName=halox
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
$(scheduling_conf)
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$conf.new" "$conf"
}


start() {
  [[ $(id -u) -eq 0 ]] || fail "needs root to start slurmctld and slurmd as root"
  for program in slurmctld slurmd sinfo munged; do
    command -v "$program" >/dev/null || fail "$program is not installed (apt-get install slurmctld slurmd slurm-client munge)"
  done
  mkdir -p "$dir"
  exec 9>"$dir/lock"
  flock 9 # concurrent starts (two test runs) wait for each other
  started=()
  trap stop_started EXIT # a failed start leaves nothing of its own running
  start_munge
  ((munge_started)) && started+=(munged)
  if ! alive "$dir/slurmctld.pid" || ! alive "$dir/slurmd.pid"; then
    stop_daemons
    write_conf
    # -i: ignore state saved by an earlier cluster (another host name or core count).
    slurmctld -f "$conf" -i 9>&- || fail "slurmctld did not start: $(tail -n 3 "$dir/slurmctld.log" 2>/dev/null)"
    env "${slurmd_env[@]}" slurmd -f "$conf" 9>&- || fail "slurmd did not start: $(tail -n 3 "$dir/slurmd.log" 2>/dev/null)"
    started+=(slurmctld slurmd)
  fi
  export SLURM_CONF=$conf
  local state=""
  for _ in $(seq 150); do
    state=$(sinfo -h -N -o %t 2>/dev/null | head -n 1 || true)
    case $state in
      idle | mix | alloc)
        trap - EXIT
        echo "started: ${started[*]}"
        echo "$conf"
        return
        ;;
      down* | drain* | fail*) scontrol update nodename="$(hostname -s)" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 0.2
  done
  fail "the node did not come up (state '${state:-none}'; logs in $dir)"
}

stop_all() {
  stop_daemons
  stop_munge
}

# stop DAEMON...: the named ones of this script's cluster (slurmctld and slurmd go together).
stop_named() {
  started=("$@")
  for name in "${started[@]}"; do
    [[ $name == munged || $name == slurmctld || $name == slurmd ]] ||
      fail "stop: '$name' is none of munged, slurmctld, slurmd"
  done
  [[ " ${started[*]} " == *" slurmctld "* ]] && started+=(slurmd)
  stop_started
}

# What this call of start started (the global `started`), and nothing else.
stop_started() {
  [[ " ${started[*]} " == *" slurmd "* ]] && stop_daemons
  [[ " ${started[*]} " == *" munged "* ]] && stop_munge
  return 0
}

stop_daemons() {
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
    if alive "$pidfile"; then
      local pid
      pid=$(cat "$pidfile")
      kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  done
}

case ${1:-} in
  start) start ;;
  stop)
    shift
    if (($#)); then stop_named "$@"; else stop_all; fi
    ;;
  conf) echo "$conf" ;;
  *) echo "usage: $0 start|stop [DAEMON...]|conf" >&2; exit 2 ;;
esac
