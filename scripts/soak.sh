#!/usr/bin/env bash
# The soak of docs/reliability.md (load profile L3) against a broker on a fresh embedded
# PostgreSQL: queen-bench soak (the verified fault load, the L1 mix over SOAK_PARTITIONS
# partitions at SOAK_RATE msg/s on a queue with completedRetentionSeconds=120), a CSV row
# of the broker's resources every 10 s, then the final drain, the verifier and the leak
# criteria. Prints the criteria's table and verdict, exits 1 on FAIL, and keeps soak.csv,
# soak.log and server.log in a temporary directory whose path it prints. Used by
# `make soak`; needs bin/queen-server and bin/queen-bench (make build).
#   SOAK_DURATION    loaded phase, warm-up included (default 30m)
#   SOAK_WARMUP      samples before it are not checked (default 5m)
#   SOAK_RATE        accepted messages per second (default 2000)
#   SOAK_PARTITIONS  partitions (default 1000)
#   SOAK_INTERVAL    time between samples (default 10s)
#   SOAK_PORT        broker port (default 16635; the script stops if it is in use)
#   SOAK_ARGS        more queen-bench soak flags
#   KEEP_DATA        0 (default): remove the cluster's data directory on exit; 1: keep it
#   DB_POOL_SIZE     the broker's pool (default 160), passed to it and to -pool-size;
#                    other broker settings (LOG_LEVEL, RETENTION_INTERVAL, ...) pass
#                    through the environment
set -euo pipefail
cd "$(dirname "$0")/.."

port=${SOAK_PORT:-16635}
pool=${DB_POOL_SIZE:-160}
keep_data=${KEEP_DATA:-0}

die() {
  echo "soak: $*" >&2
  exit 2
}

for b in bin/queen-server bin/queen-bench; do
  [ -x "$b" ] || die "$b is missing: run make build"
done
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  die "port $port is in use by a server this script did not start: set SOAK_PORT"
fi
dir=$(mktemp -d /tmp/queen-soak.XXXXXX)
chmod 755 "$dir" # the embedded PostgreSQL may run as another user

DB_POOL_SIZE="$pool" QUEEN_DATA_DIR="$dir/data" PORT="$port" QUEEN_BIND_ADDR=127.0.0.1 LOG_LEVEL=${LOG_LEVEL:-warn} \
  ./bin/queen-server >"$dir/server.log" 2>&1 &
pid=$!
cleanup() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  [ "$keep_data" = 1 ] || rm -rf "$dir/data"
  echo "soak: run directory (soak.csv, soak.log, server.log): $dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Ready: GET /health answers 200 (the schema is applied). Only then does the embedded
# PostgreSQL's postmaster.pid name the running postmaster and its port (line 4): initdb's
# single-user runs leave one naming the default port.
health() {
  (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 &&
    head -n 1 <&3 | grep -q ' 200') 2>/dev/null
}
for _ in $(seq 240); do
  health && break
  kill -0 "$pid" 2>/dev/null || { tail -n 20 "$dir/server.log" >&2; die "the broker exited: see $dir/server.log"; }
  sleep 0.5
done
health || die "the broker did not answer GET /health within 120 s: see $dir/server.log"
pidfile="$dir/data/pg/postmaster.pid"
[ -r "$pidfile" ] || die "no $pidfile: is the broker on an embedded PostgreSQL? (unset QUEEN_PG_URL, PG_HOST, ...)"
pm=$(sed -n 1p "$pidfile")
pgport=$(sed -n 4p "$pidfile")
[ "$(cat "/proc/$pm/comm" 2>/dev/null)" = postgres ] || die "process $pm of $pidfile is not a postgres postmaster"

echo "soak: broker $pid on http://127.0.0.1:$port, PostgreSQL $pm on port $pgport, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2086
./bin/queen-bench soak -url "http://127.0.0.1:$port" -ready-timeout 120s \
  -duration "${SOAK_DURATION:-30m}" -warmup "${SOAK_WARMUP:-5m}" -interval "${SOAK_INTERVAL:-10s}" \
  -rate "${SOAK_RATE:-2000}" -partitions "${SOAK_PARTITIONS:-1000}" -pool-size "$pool" \
  -broker-pid "$pid" -pg-url "postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable" \
  -csv "$dir/soak.csv" ${SOAK_ARGS:-} 2>&1 | tee "$dir/soak.log"
