#!/usr/bin/env bash
# A one-node Slurm on this machine for plload's real Slurm tier: Debian's slurm-wlm and munge,
# with munged, slurmctld -D and slurmd -D started in the background (no systemd), one node that is
# this machine on loopback with its CPUs and memory, one partition whose cores two jobs may share
# (OverSubscribe=FORCE:2), so that two jobs run on the node at once, as on a busy cluster. Needs root
# and apt-get.
#
#   .ci/slurm.sh          # install (if missing), configure, start; waits until the node is idle
#   PLLOAD_SLURM=require go test -p 1 -run SlurmReal -v ./cli     # the tier
#   .ci/slurm.sh stop     # stop the daemons this script started
#
# The daemons' logs and state are in $PLLOAD_SLURM_DIR (default /tmp/plload-slurm). The
# configuration is /etc/slurm/slurm.conf; one this script did not write is left alone (it stops).
set -euo pipefail
base="${PLLOAD_SLURM_DIR:-/tmp/plload-slurm}"
conf=/etc/slurm/slurm.conf
marker="# written by plload's .ci/slurm.sh"

stop() {
  local name pid
  for name in slurmd slurmctld; do
    if [ -f "$base/$name.pid" ]; then
      pid=$(cat "$base/$name.pid")
      kill "$pid" 2>/dev/null || true
      # Wait (10 s at most) until it has gone: a new one could not bind its port before.
      for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      rm -f "$base/$name.pid"
    fi
  done
}
if [ "${1:-}" = stop ]; then stop; echo "slurm.sh: stopped slurmd and slurmctld"; exit 0; fi

if [ "$(id -u)" != 0 ]; then echo "slurm.sh: needs root (it installs packages and runs slurmd)" >&2; exit 1; fi
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  echo "== apt-get install slurm-wlm munge"
  (timeout 300 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends slurm-wlm munge) >/dev/null
fi
if [ -f "$conf" ] && ! grep -qF "$marker" "$conf"; then
  echo "slurm.sh: $conf exists and was not written by this script; leaving this machine's Slurm alone" >&2; exit 1
fi

echo "== munged"
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null; }
  chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  runuser -u munge -- /usr/sbin/munged
  munge -n </dev/null | unmunge >/dev/null
fi

echo "== slurm.conf: this machine as one node on 127.0.0.1"
stop
host=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 * 9 / 10 ))
mkdir -p "$base/ctld" "$base/d" /etc/slurm
cat > "$conf" <<CONF
$marker
ClusterName=plload-ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
StateSaveLocation=$base/ctld
SlurmdSpoolDir=$base/d
SlurmctldPidFile=$base/slurmctld.daemon.pid
SlurmdPidFile=$base/slurmd.daemon.pid
SlurmctldLogFile=$base/slurmctld.log
SlurmdLogFile=$base/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:2
CONF

echo "== slurmctld -D, slurmd -D (logs in $base)"
slurmctld -D -i >"$base/slurmctld.out" 2>&1 &
echo $! > "$base/slurmctld.pid"
slurmd -D >"$base/slurmd.out" 2>&1 &
echo $! > "$base/slurmd.pid"
for ((i = 0; i < 600; i++)); do
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
  if [ "$state" = idle ]; then
    echo "one-node Slurm is up: $host idle, $cpus CPUs, $mem MB; the tier: PLLOAD_SLURM=require go test -p 1 -run SlurmReal -v ./cli"
    exit 0
  fi
  sleep 0.1
done
echo "slurm.sh: the node did not become idle within 60 s (state: ${state:-none}); the daemons' logs:" >&2
tail -n 20 "$base"/slurmctld.out "$base"/slurmctld.log "$base"/slurmd.out "$base"/slurmd.log >&2 || true
stop
exit 1
