# Sourced by the test Slurm scripts (slurm-local.sh, slurm-testhosts.sh): what their clusters
# share. munged is started once per machine and serves every Slurm on it; start_munge and
# stop_munge need dir, munge_socket and fail() from the caller. The script that started munged
# keeps its pid in its own folder ($dir/munged.pid): its `stop` ends that munged and no other.

# The environment slurmd starts with. PMIx's shared-memory job store (gds/ds21) segfaults
# now and then in MPI_Init under srun (openpmix/openpmix#1114, open-mpi/ompi#12495: a rank
# dies within a second of start); its hash store has no shared segment and serves the
# same data. Clients take the store their server offers.
slurmd_env=(PMIX_MCA_gds=hash)

# slurm.conf lines of every test cluster: scheduling, tracking and binding.
scheduling_conf() {
  cat <<'EOF'
# No cgroup hierarchy is needed: process groups track the tasks, affinity binds them.
ProctrackType=proctrack/pgid
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
EOF
}

munge_answers() {
  munge -n -S "$munge_socket" 2>/dev/null | unmunge -S "$munge_socket" >/dev/null 2>&1
}

# Sets munge_started=1 when it started munged (0 when one was running).
start_munge() {
  munge_started=0
  munge_answers && return
  [[ -r /etc/munge/munge.key ]] || fail "no /etc/munge/munge.key (install munge)"
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  chmod 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged 9>&- || fail "munged did not start (see /var/log/munge/munged.log)"
  munge_started=1
  local pid=""
  for _ in $(seq 50); do
    pid=$(cat /run/munge/munged.pid 2>/dev/null || pgrep -n -u munge -x munged || true)
    [[ -n $pid ]] && echo "$pid" >"$dir/munged.pid"
    munge_answers && return
    sleep 0.1
  done
  fail "munged does not answer on $munge_socket"
}

# Ends the munged this script started, if it still runs.
stop_munge() {
  local pid
  pid=$(cat "$dir/munged.pid" 2>/dev/null || true)
  rm -f "$dir/munged.pid"
  [[ -n $pid ]] && [[ $(ps -o comm= -p "$pid" 2>/dev/null) == munged ]] || return 0
  kill "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}
