#!/usr/bin/env bash
# Several hosts on one machine, for running halox across real (TCP) node boundaries:
#
#   scripts/testhosts.sh up [N]            # N hosts (default 2): hosta, hostb, ...
#   scripts/testhosts.sh run HOST CMD...   # run CMD on HOST (e.g. mpirun, started on hosta)
#   scripts/testhosts.sh status            # which hosts are up, their addresses
#   scripts/testhosts.sh launch            # how to launch MPI programs on them
#   scripts/testhosts.sh down              # remove them all
#
# Each host is a network namespace hx<letter> with its own host name and System V IPC (UTS and
# IPC namespaces kept in $HALOX_HOSTS_DIR), one interface eth0 with the address 10.77.0.<n>/24,
# and a hosts file (/etc/netns/hx<letter>/hosts, which `ip netns exec` puts over /etc/hosts)
# that names all of them. Two hosts are joined by a veth pair; more are joined by a bridge that lives in a
# namespace of its own (hxsw), so that nothing is added to this machine's own network.
# scripts/nsrsh is the remote-shell agent: `nsrsh HOST CMD` runs CMD on HOST like ssh would.
# HALOX_HOSTS_IPC=shared (for `run` and nsrsh) keeps this machine's IPC namespace instead: then
# UCX (MPICH's transport) takes shared memory between the hosts instead of TCP, whose clean-up
# in UCX 1.13 can hang MPI_Finalize.
#
# Needs root. `up` and `down` are idempotent; concurrent calls wait for each other. On failure
# the last line on stderr says why and the exit status is non-zero.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${HALOX_HOSTS_DIR:-/run/halox-hosts}
subnet=10.77.0
letters=(a b c d e f g h)

fail() {
  echo "testhosts: $*" >&2
  exit 1
}

ns_of() { echo "hx${1#host}"; } # hosta -> hxa
host_of_index() { echo "host${letters[$1]}"; }

hosts_up() { # the hosts now up, in order
  [[ -s $dir/hosts ]] && cat "$dir/hosts" || true
}

need_root() {
  [[ $(id -u) -eq 0 ]] || fail "needs root (network and UTS namespaces)"
  command -v ip >/dev/null || fail "ip is not installed (apt-get install iproute2)"
  command -v unshare >/dev/null && command -v nsenter >/dev/null ||
    fail "unshare/nsenter are not installed (apt-get install util-linux)"
}

lock() {
  mkdir -p "$dir"
  exec 9>"$dir/lock"
  flock 9
}

write_hosts_file() { # ns count
  local i
  mkdir -p "/etc/netns/$1"
  {
    echo "127.0.0.1 localhost"
    for ((i = 0; i < $2; i++)); do echo "$subnet.$((i + 1)) $(host_of_index "$i")"; done
  } >"/etc/netns/$1/hosts"
}

up() {
  local count=${1:-2}
  [[ $count =~ ^[0-9]+$ ]] && ((count >= 2 && count <= ${#letters[@]})) ||
    fail "the number of hosts must be 2..${#letters[@]}, got '$count'"
  need_root
  lock
  if [[ -s $dir/hosts ]]; then
    local have
    have=$(wc -l <"$dir/hosts")
    if ((have == count)) && all_alive; then
      return
    fi
    teardown
  fi
  trap 'teardown; trap - ERR' ERR
  local i host ns
  for ((i = 0; i < count; i++)); do
    host=$(host_of_index "$i")
    ns=$(ns_of "$host")
    ip netns add "$ns" || fail "cannot create network namespace $ns (no CAP_SYS_ADMIN here?)"
    ip -n "$ns" link set lo up
    # A UTS and an IPC namespace per host, kept as bind-mounted files, so that every process
    # on the host (the MPI daemons, slurmd) sees the same host name, and shared-memory
    # transports that tell machines apart by IPC namespace (UCX's) do not reach across hosts.
    touch "$dir/$ns.uts" "$dir/$ns.ipc"
    unshare --uts="$dir/$ns.uts" --ipc="$dir/$ns.ipc" hostname "$host" ||
      fail "cannot create UTS and IPC namespaces for $host"
    write_hosts_file "$ns" "$count"
    echo "$host" >>"$dir/hosts"
  done
  if ((count == 2)); then
    ip link add eth0 netns hxa type veth peer name eth0 netns hxb
  else
    ip netns add hxsw
    ip -n hxsw link add br0 type bridge
    ip -n hxsw link set br0 up
    for ((i = 0; i < count; i++)); do
      ns=$(ns_of "$(host_of_index "$i")")
      ip link add eth0 netns "$ns" type veth peer name "port-$ns" netns hxsw
      ip -n hxsw link set "port-$ns" master br0 up
    done
  fi
  for ((i = 0; i < count; i++)); do
    ns=$(ns_of "$(host_of_index "$i")")
    ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  trap - ERR
}

all_alive() {
  local host
  for host in $(hosts_up); do
    [[ -e /run/netns/$(ns_of "$host") && -e $dir/$(ns_of "$host").uts && -e $dir/$(ns_of "$host").ipc ]] ||
      return 1
  done
}

teardown() { # everything a former `up` made, whatever is left of it
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^hx([a-h]|sw)$' || true); do
    # Processes left on the host (an MPI daemon of a killed run) would keep it alive.
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
  for kept in "$dir"/hx?.uts "$dir"/hx?.ipc; do
    [[ -e $kept ]] || continue
    umount "$kept" 2>/dev/null || true
    rm -f "$kept"
  done
  rm -f "$dir/hosts"
}

down() {
  need_root
  lock
  teardown
}

status() {
  local host ns
  if [[ -z $(hosts_up) ]]; then
    echo "no test hosts are up (scripts/testhosts.sh up)"
    return 1
  fi
  for host in $(hosts_up); do
    ns=$(ns_of "$host")
    printf '%-8s namespace %-4s %s\n' "$host" "$ns" \
      "$(ip -n "$ns" -br -4 addr show dev eth0 2>/dev/null | awk '{print $1, $2, $3}' || echo 'MISSING')"
  done
}

launch() {
  local hosts first
  hosts=$(hosts_up | tr '\n' ' ')
  [[ -n $hosts ]] || fail "no test hosts are up (scripts/testhosts.sh up)"
  first=${hosts%% *}
  local ompi_hosts="" mpich_hosts=""
  for h in $hosts; do
    ompi_hosts+="${ompi_hosts:+,}$h:2"
    mpich_hosts+="${mpich_hosts:+,}$h:2"
  done
  cat <<EOF
Test hosts up: $hosts(addresses $subnet.1.., only inside their namespaces).
Start programs from $first; the agent $here/nsrsh starts the remote parts.

Open MPI:
  $here/testhosts.sh run $first mpirun --host $ompi_hosts \\
      --mca plm_rsh_agent $here/nsrsh --mca btl tcp,vader,self \\
      --mca btl_tcp_if_include $subnet.0/24 --mca oob_tcp_if_include $subnet.0/24 \\
      -n 4 --bind-to core halox-bench --transport all --halo 1,5 --nfields 1,8

MPICH (Hydra):
  $here/testhosts.sh run $first mpiexec.mpich -hosts $mpich_hosts \\
      -launcher ssh -launcher-exec $here/nsrsh \\
      -n 4 -bind-to core halox-bench --transport all --halo 1,5 --nfields 1,8

All hosts share the $(nproc) cores of this machine.
EOF
}

run() {
  (($# >= 2)) || fail "usage: run HOST CMD..."
  local host=$1
  shift
  grep -qx "$host" <(hosts_up) || fail "$host is not up (hosts up: $(hosts_up | tr '\n' ' '))"
  local ns
  ns=$(ns_of "$host")
  local ipc=(--ipc="$dir/$ns.ipc")
  [[ ${HALOX_HOSTS_IPC:-} == shared ]] && ipc=()
  exec ip netns exec "$ns" nsenter --uts="$dir/$ns.uts" "${ipc[@]}" -- "$@"
}

case ${1:-} in
  up) shift; up "$@"; status; echo; launch ;;
  down) down ;;
  status) status ;;
  launch) launch ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 up [N] | down | status | launch | run HOST CMD..." >&2; exit 2 ;;
esac
