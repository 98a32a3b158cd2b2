#!/usr/bin/env bash
# Install (Debian packages) and start the system services the test suite needs:
# munge + a single-node Slurm, PostgreSQL, Chromium, libkrb5-dev (code-server's build),
# Prometheus, Alertmanager and the node exporter. Idempotent: safe to run twice.
# Prints the environment the tests read; `source <(.ci/services.sh --env)` exports it.
set -euo pipefail

log() { printf '[services] %s\n' "$*" >&2; }

install_packages() {
  local missing=()
  command -v slurmctld >/dev/null || missing+=(slurm-wlm)
  command -v munged >/dev/null || missing+=(munge)
  [ -x /usr/lib/postgresql/15/bin/postgres ] || ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql)
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  # code-server's native modules (make code-server, the VS Code browser test) build against it
  dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
  # monitoring and alerts (the operations tests start their own instances under a temporary data
  # directory; the packages' own daemons are not started)
  command -v prometheus >/dev/null || missing+=(prometheus)
  command -v prometheus-alertmanager >/dev/null || missing+=(prometheus-alertmanager)
  command -v prometheus-node-exporter >/dev/null || missing+=(prometheus-node-exporter)
  if [ ${#missing[@]} -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

start_munge() {
  if pgrep -x munged >/dev/null; then return; fi
  [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none; }
  chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge
  log "starting munged"
  runuser -u munge -- /usr/sbin/munged --force
}

write_slurm_conf() {
  local cpus mem
  cpus=$(nproc)
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
  mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
  chown slurm:slurm /var/spool/slurmctld /var/log/slurm
  cat > /etc/slurm/slurm.conf <<CONF
ClusterName=yitong
SlurmctldHost=localhost
SlurmUser=slurm
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
MpiDefault=none
JobCompType=jobcomp/filetxt
JobCompLoc=/var/log/slurm/jobcomp.log
MinJobAge=30
KillWait=5
SlurmdTimeout=60
InactiveLimit=0
NodeName=localhost CPUs=${cpus} RealMemory=${mem} State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
}

start_slurm() {
  if sinfo -h >/dev/null 2>&1 && pgrep -x slurmd >/dev/null; then return; fi
  write_slurm_conf
  pkill -x slurmctld 2>/dev/null || true; pkill -x slurmd 2>/dev/null || true
  log "starting slurmctld and slurmd"
  /usr/sbin/slurmctld -i
  /usr/sbin/slurmd -N localhost
  for _ in $(seq 1 60); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then return; fi
    scontrol update nodename=localhost state=resume >/dev/null 2>&1 || true
    sleep 1
  done
  log "Slurm did not come up"; sinfo || true; tail -n 20 /var/log/slurm/*.log || true
  return 1
}

PG_PORT=${YITONG_PG_PORT:-5432}
start_postgres() {
  local ver
  ver=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
  if ! runuser -u postgres -- psql -p "$PG_PORT" -tAc 'select 1' >/dev/null 2>&1; then
    log "starting PostgreSQL $ver"
    if command -v pg_ctlcluster >/dev/null && pg_lsclusters -h | grep -q "^$ver main"; then
      pg_ctlcluster "$ver" main start
    else
      local dir=/var/lib/postgresql/yitong-ci
      mkdir -p "$dir"; chown postgres:postgres "$dir"
      [ -f "$dir/PG_VERSION" ] || runuser -u postgres -- "/usr/lib/postgresql/$ver/bin/initdb" -D "$dir" >/dev/null
      runuser -u postgres -- "/usr/lib/postgresql/$ver/bin/pg_ctl" -D "$dir" -o "-p $PG_PORT -k /tmp" -l "$dir/log" -w start
    fi
  fi
  runuser -u postgres -- psql -p "$PG_PORT" -tAc "select 1 from pg_roles where rolname='yitong'" | grep -q 1 \
    || runuser -u postgres -- psql -p "$PG_PORT" -qc "create role yitong login superuser password 'yitong'"
  runuser -u postgres -- psql -p "$PG_PORT" -tAc "select 1 from pg_database where datname='yitong_test'" | grep -q 1 \
    || runuser -u postgres -- createdb -p "$PG_PORT" -O yitong yitong_test
}

print_env() {
  echo "export YITONG_TEST_POSTGRES_URL=postgresql+psycopg://yitong:yitong@127.0.0.1:${PG_PORT}/yitong_test"
  echo "export YITONG_TEST_SLURM=1"
  echo "export YITONG_TEST_CHROMIUM=/usr/bin/chromium"
}

if [ "${1:-}" = "--env" ]; then print_env; exit 0; fi
# Only the environment goes to stdout (the caller evals it): whatever the service tools print
# (pg_ctlcluster's "Removed stale pid file", apt notices) goes to stderr.
# The daemons must not inherit fd 3, or they hold the caller's pipe open for ever.
exec 3>&1 1>&2
{
  install_packages
  start_munge
  start_slurm
  start_postgres
} 3>&-
print_env >&3
