#!/usr/bin/env bash
# A replicated PostgreSQL as operators run it, on loopback ports: one etcd and HA_NODES
# PostgreSQL nodes under Patroni (docs/reliability.md, "Failover"). The failover tests
# (e2e/faults/ha_test.go) start their clusters with this script; `make ha-up` and
# `make ha-down` run it by hand.
#
#   scripts/ha.sh up   [DIR]   start etcd and the nodes, wait for a leader (and, in sync
#                              mode, a synchronous standby), print the broker's URL
#   scripts/ha.sh down [DIR]   stop the nodes and etcd, remove DIR (HA_KEEP=1 keeps it)
#   scripts/ha.sh url  [DIR]   print the broker's QUEEN_PG_URL again
#
# DIR defaults to /tmp/queen-ha. Settings (environment):
#   HA_MODE=sync|async   Patroni's synchronous_mode on (default) or off
#   HA_NODES=3           PostgreSQL nodes (2 or more)
#   HA_BASE_PORT=15400   etcd listens on BASE (clients) and BASE+1 (peers); node i
#                        (1..HA_NODES) has PostgreSQL on BASE+10+i, Patroni's REST API on
#                        BASE+20+i
#   HA_PG_PORTS          node i's PostgreSQL address as clients and the other nodes see it,
#                        when a proxy sits in front of each node: comma-separated ports,
#                        node 1 first (the printed URL and replication use them; default
#                        the nodes' own ports)
#   HA_ETCD_PORTS        the port node i's Patroni reaches etcd on, same form (a proxy
#                        per node lets a test cut one node off etcd; default etcd's own)
#   HA_PG_BIN            PostgreSQL's binaries (default the newest /usr/lib/postgresql/*/bin)
#
# Patroni runs PostgreSQL as the user running it: as root, the nodes run as the user
# postgres (runuser), and DIR is theirs. Every node logs to DIR/nodeI/patroni.log, etcd to
# DIR/etcd.log; DIR/nodeI/patroni.yml is the node's configuration, for patronictl:
#   patronictl -c DIR/node1/patroni.yml list
set -euo pipefail

cmd=${1:-}
dir=${2:-/tmp/queen-ha}
mode=${HA_MODE:-sync}
nodes=${HA_NODES:-3}
base=${HA_BASE_PORT:-15400}
etcd_client=$base
etcd_peer=$((base + 1))

pg_bin=${HA_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}

die() { echo "ha.sh: $*" >&2; exit 1; }

# nth N LIST DEFAULT: the Nth (1-based) comma-separated entry of LIST, DEFAULT when empty.
nth() {
  local list=$2
  if [ -z "$list" ]; then echo "$3"; return; fi
  echo "$list" | cut -d, -f"$1"
}

pg_port() { echo $((base + 10 + $1)); }
rest_port() { echo $((base + 20 + $1)); }

# as_pg prefixes a command to run it as the user PostgreSQL runs as (ourselves unless
# root).
as_pg=()
[ "$(id -u)" -eq 0 ] && as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups --)

url() {
  local hosts="" i
  for i in $(seq 1 "$nodes"); do
    hosts+="${hosts:+,}127.0.0.1:$(nth "$i" "${HA_PG_PORTS:-}" "$(pg_port "$i")")"
  done
  echo "postgres://postgres@${hosts}/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=3"
}

write_config() {
  local i=$1 node=$dir/node$1 sync=false
  [ "$mode" = sync ] && sync=true
  cat >"$node/patroni.yml" <<EOF
scope: queen-ha
namespace: /queen/
name: node$i
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$(rest_port "$i")
  connect_address: 127.0.0.1:$(rest_port "$i")
etcd3:
  hosts: 127.0.0.1:$(nth "$i" "${HA_ETCD_PORTS:-}" "$etcd_client")
  # The address above is the only way to etcd (no discovery of etcd's own addresses), so
  # that a proxy there cuts the node off.
  use_proxies: true
bootstrap:
  dcs:
    # Patroni's smallest lease: a lost primary is replaced within ttl seconds.
    ttl: 20
    loop_wait: 1
    retry_timeout: 5
    # A primary whose PostgreSQL crashed fails over at once instead of restarting in place.
    primary_start_timeout: 0
    maximum_lag_on_failover: 1048576
    synchronous_mode: $sync
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 200
        max_wal_senders: 10
        max_replication_slots: 10
        wal_log_hints: "on"
        fsync: "on"
        synchronous_commit: "on"
  initdb:
    - encoding: UTF8
    - locale: C
    - data-checksums
  pg_hba:
    - local all all trust
    - host replication all 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$(pg_port "$i")
  # What the other nodes replicate from, too: with a proxy in front (HA_PG_PORTS), a
  # partitioned node is cut off its standbys as well as off the brokers.
  connect_address: 127.0.0.1:$(nth "$i" "${HA_PG_PORTS:-}" "$(pg_port "$i")")
  data_dir: $node/data
  bin_dir: $pg_bin
  pgpass: $node/pgpass
  authentication:
    superuser: {username: postgres, password: postgres}
    replication: {username: replicator, password: replicator}
    rewind: {username: postgres, password: postgres}
  parameters:
    unix_socket_directories: $node
EOF
}

# members prints "name|role|state|lag MB" per node, from patronictl.
members() {
  patronictl -c "$dir/node1/patroni.yml" list -f json 2>/dev/null |
    python3 -c 'import json,sys
for m in json.load(sys.stdin): print("|".join(str(v) for v in (m["Member"], m["Role"], m["State"], m.get("Lag in MB", 0))))'
}

wait_ready() {
  local deadline=$((SECONDS + 180)) want_sync=0 out
  [ "$mode" = sync ] && want_sync=1
  while [ $SECONDS -lt $deadline ]; do
    out=$(members || true)
    local leaders syncs running
    leaders=$(echo "$out" | awk -F'|' '$2=="Leader" && $3=="running"' | wc -l)
    syncs=$(echo "$out" | awk -F'|' '$2=="Sync Standby" && ($3=="streaming" || $3=="running")' | wc -l)
    running=$(echo "$out" | awk -F'|' '$3=="running" || $3=="streaming"' | wc -l)
    if [ "$leaders" -eq 1 ] && [ "$running" -eq "$nodes" ] && [ "$syncs" -ge "$want_sync" ]; then
      return 0
    fi
    sleep 1
  done
  echo "$out" >&2
  die "the cluster in $dir has no leader with $nodes running nodes after 180 s (logs: $dir/*/patroni.log, $dir/etcd.log)"
}

up() {
  command -v patroni >/dev/null || die "patroni missing (apt-get install patroni)"
  command -v etcd >/dev/null || die "etcd missing (apt-get install etcd-server)"
  [ -x "$pg_bin/initdb" ] || die "no PostgreSQL binaries in '$pg_bin' (set HA_PG_BIN)"
  [ "$nodes" -ge 2 ] || die "HA_NODES must be 2 or more"
  [ -e "$dir/etcd.pid" ] && die "$dir holds a running cluster (scripts/ha.sh down $dir first)"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd -P)
  if [ "$(id -u)" -eq 0 ]; then
    # postgres must reach its directories: every parent searchable.
    local p=$dir
    while [ "$p" != / ]; do chmod o+x "$p"; p=$(dirname "$p"); done
  fi
  setsid etcd --name queen-ha --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "queen-ha=http://127.0.0.1:$etcd_peer" >"$dir/etcd.log" 2>&1 </dev/null &
  echo $! >"$dir/etcd.pid"
  local i
  for i in $(seq 1 "$nodes"); do
    mkdir -p "$dir/node$i"
    write_config "$i"
  done
  [ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$dir"/node*
  # The first node bootstraps the cluster alone; the others clone it once it leads.
  for i in $(seq 1 "$nodes"); do
    # setsid and setpriv exec: the pid recorded is Patroni's own.
    setsid "${as_pg[@]}" patroni "$dir/node$i/patroni.yml" >"$dir/node$i/patroni.log" 2>&1 </dev/null &
    echo $! >"$dir/node$i/patroni.pid"
    [ "$i" -eq 1 ] && sleep 2
  done
  wait_ready
  url >"$dir/url"
  url
}

# stop_pid PIDFILE: SIGTERM, then SIGKILL after 30 s.
stop_pid() {
  local f=$1 pid
  [ -e "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

down() {
  [ -d "$dir" ] || return 0
  local node
  for node in "$dir"/node*; do # every node that was started, whatever HA_NODES says now
    [ -d "$node" ] || continue
    stop_pid "$node/patroni.pid"
    # A PostgreSQL Patroni left behind (Patroni killed): stop it too.
    if [ -e "$node/data/postmaster.pid" ]; then
      "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$node/data" stop -m immediate >/dev/null 2>&1 || true
    fi
  done
  stop_pid "$dir/etcd.pid"
  [ "${HA_KEEP:-0}" = 1 ] || rm -rf "$dir"
}

case $cmd in
  up) up ;;
  down) down ;;
  url) url ;;
  *) die "usage: scripts/ha.sh up|down|url [DIR]" ;;
esac
