#!/usr/bin/env bash
# What one loopback TCP round trip costs the process that writes, with the answering
# process on the writer's CPU and on the other one, alternating, RTT_ROUNDS times
# (queen-bench rtt, bench/rtt). The difference is what a wake-up across CPUs costs the
# writer: the broker pays it for every bundle it sends a PostgreSQL pinned to the other
# CPU (docs/benchmarks.md, "The dedup cache's key, and what this machine charges for a
# round trip"). Used by `make bench-rtt`; needs bin/queen-bench (make build) and taskset.
#
#   RTT_ROUNDS   rounds of both pinnings (default 3)
#   RTT_N        round trips per measurement (default 20000)
#   RTT_SIZE     request bytes (default 4096; the answer is 64)
#   RTT_PORT     server port (default 16650)
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "bench-rtt: $*" >&2; exit 1; }
command -v taskset >/dev/null || die "taskset is missing (util-linux)"
[ -x bin/queen-bench ] || die "bin/queen-bench is missing: run make build"
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs, this machine has $(nproc)"

rounds=${RTT_ROUNDS:-3}
n=${RTT_N:-20000}
size=${RTT_SIZE:-4096}
port=${RTT_PORT:-16650}

# measure SERVER_CPU: one measurement with the client on CPU 1.
measure() {
  taskset -c "$1" ./bin/queen-bench rtt -serve "127.0.0.1:$port" -size "$size" >/dev/null &
  local pid=$!
  local out=""
  for _ in $(seq 50); do # the server listens within a second
    if out=$(taskset -c 1 ./bin/queen-bench rtt -addr "127.0.0.1:$port" -n "$n" -size "$size" 2>/dev/null); then
      break
    fi
    sleep 0.02
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  [ -n "$out" ] || die "no measurement with the server on CPU $1"
  echo "$out" | sed -n 's/.*client CPU \([0-9.]*\) µs, wall \([0-9.]*\) µs.*/\1 \2/p'
}

echo "bench-rtt: $n round trips of $size bytes a measurement, client on CPU 1, $rounds rounds"
echo "| round | server on CPU 1: client CPU µs | wall µs | server on CPU 0: client CPU µs | wall µs |"
echo "|---|---:|---:|---:|---:|"
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then
    read -r same_cpu same_wall < <(measure 1)
    read -r cross_cpu cross_wall < <(measure 0)
  else
    read -r cross_cpu cross_wall < <(measure 0)
    read -r same_cpu same_wall < <(measure 1)
  fi
  echo "| $r | $same_cpu | $same_wall | $cross_cpu | $cross_wall |"
done
