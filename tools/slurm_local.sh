#!/usr/bin/env bash
# A private one-node Slurm on this machine, for the cluster tests
# (tests/cluster/run_under_slurm.py): munged, slurmctld and slurmd started as
# root from a configuration under DIR, on ports of their own, so an existing
# Slurm installation is left alone. Debian's slurm-wlm and munge
# (tools/install_deps.sh --cluster).
#
#   eval "$(tools/slurm_local.sh start DIR)"   # prints: export SLURM_CONF=DIR/slurm.conf
#   sbatch ... / srun ... / scontrol ...
#   tools/slurm_local.sh stop DIR
#
# The configuration is what worked on this machine: process tracking by
# /proc (no cgroups in a container), no task affinity plugin, consumable
# cores, and the node's CPUs as the machine counts them.
set -euo pipefail
action=${1:?start or stop}
dir=$(realpath -m "${2:?state folder}")
port=${ORT_TRAIN_SLURM_PORT:-16817}

stop() {
  for daemon in slurmd slurmctld; do
    [[ -f "$dir/$daemon.pid" ]] && kill "$(cat "$dir/$daemon.pid")" 2>/dev/null || true
  done
  [[ -f "$dir/munged.pid" ]] && kill "$(cat "$dir/munged.pid")" 2>/dev/null || true
  sleep 0.5
}

if [[ $action == stop ]]; then
  stop
  exit 0
fi
[[ $action == start ]] || { echo "usage: $0 start|stop DIR" >&2; exit 64; }
for tool in munged slurmctld slurmd sbatch srun scontrol; do
  command -v "$tool" > /dev/null || { echo "$tool is not installed (tools/install_deps.sh --cluster)" >&2; exit 3; }
done
[[ $(id -u) -eq 0 ]] || { echo "slurmd must start as root to run jobs" >&2; exit 3; }
mkdir -p "$dir/spool/ctld" "$dir/spool/d" "$dir/log" "$dir/munge"
node=$(hostname -s)
cat > "$dir/slurm.conf" <<EOF
ClusterName=ort_train_test
SlurmctldHost=$node
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/spool/ctld
SlurmdSpoolDir=$dir/spool/d
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=pmix
ReturnToService=2
KillWait=30
JobRequeue=1
# Job ids of this instance's own (PMIx and slurmstepd name files by job id).
FirstJobId=$port
SchedulerType=sched/backfill
NodeName=$node CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
# munge with a socket of its own (Debian's key, made when the package was installed).
munged --force --socket="$dir/munge/munge.socket" --pid-file="$dir/munged.pid" \
  --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
# Up to 40 s for the node to come up. Each query is bounded: a client whose
# controller is not answering retries for its MessageTimeout (10 s) before it
# gives up, and a loop of those ran past the caller's limit under a loaded CI.
# A daemon that has exited ends the wait at once.
deadline=$((SECONDS + 40))
while (( SECONDS < deadline )); do
  if timeout 3 sinfo -h -o %t 2>/dev/null | grep -q -E '^(idle|mix|alloc)'; then
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  for daemon in slurmctld slurmd; do
    if [[ -s "$dir/$daemon.pid" ]] && ! kill -0 "$(cat "$dir/$daemon.pid")" 2>/dev/null; then
      echo "$daemon exited while starting; logs in $dir/log:" >&2
      tail -n 20 "$dir"/log/*.log >&2 || true
      stop
      exit 1
    fi
  done
  sleep 0.2
done
echo "Slurm did not bring its node up within 40 s; logs in $dir/log:" >&2
tail -n 20 "$dir"/log/*.log >&2 || true
stop
exit 1
