#!/usr/bin/env bash
# The hot-list on against off (docs/benchmarks.md, "The hot-list: on against off"), side by side in one run: for each scenario and
# round, a broker with QUEEN_HOTLIST=1 and one with QUEEN_HOTLIST=0 (the order alternates
# by round), each on a fresh embedded PostgreSQL in its own temporary QUEEN_DATA_DIR, then
# one table (on, off, on/off per round) and the JSON lines. Used by `make bench-hotlist`;
# needs bin/queen-server and bin/queen-bench (make build) and PostgreSQL's binaries (as
# `make run` does). docs/benchmarks.md ("The hot-list: on against off") explains the
# figures.
#
#   HOTLIST_SCENARIOS   scenarios to run, in order (default: pop1k pop10k idle latency rss)
#     pop1k    prefill 1,000 partitions x 20 messages, consume them: 8 consumers, batch 100
#     pop10k   prefill 10,000 partitions x 2 messages, consume HOTLIST_POP10K_COUNT of them
#     idle     10,000 drained partitions, 50 parked long polls, no traffic: SQL calls/s, CPU
#     latency  push-to-pop at 500 msgs/s over 100 partitions, 16 long-poll consumers
#     rss      broker memory with 100,000 partitions seeded, drained, then swept
#   HOTLIST_ROUNDS      rounds of every scenario (default 2); HOTLIST_RSS_ROUNDS caps rss (1)
#   HOTLIST_PORT        broker port (default 16640; the script stops if it is in use)
#   HOTLIST_QUICK=1     every size and duration small: a check that the script works
#   HOTLIST_KEEP=1      keep the data directories (the logs are always kept)
#   sizes and durations: HOTLIST_POP1K_PARTITIONS (1000), HOTLIST_POP1K_PER_PARTITION (20),
#     HOTLIST_POP10K_PARTITIONS (10000), HOTLIST_POP10K_PER_PARTITION (2),
#     HOTLIST_POP10K_COUNT (10000), HOTLIST_CONSUMERS (8), HOTLIST_BATCH (100),
#     HOTLIST_IDLE_PARTITIONS (10000), HOTLIST_IDLE_CONSUMERS (50), HOTLIST_IDLE_SECONDS (30),
#     HOTLIST_IDLE_WARMUP (75: past autovacuum's one-minute nap, which cleans the consume's
#     churn; before it, every read of the consumed tables walks dead row versions),
#     HOTLIST_LATENCY_RATE (500), HOTLIST_LATENCY_PARTITIONS (100),
#     HOTLIST_LATENCY_CONSUMERS (16), HOTLIST_LATENCY_SECONDS (20),
#     HOTLIST_RSS_PARTITIONS (100000), HOTLIST_SWEEP_MS (5000: QUEEN_HOTLIST_IDLE_SWEEP_MS
#     of the rss brokers), HOTLIST_GC_WAIT (130 s: an idle Go program collects at least
#     every 2 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
name=bench-hotlist
# stop_broker (and the other pinned benchmarks' helpers; this script starts its brokers
# its own way, start_broker below).
. scripts/lib-pinned.sh

quick=${HOTLIST_QUICK:-0}
q() { if [ "$quick" = 1 ]; then echo "$2"; else echo "$1"; fi; }
scenarios=${HOTLIST_SCENARIOS:-pop1k pop10k idle latency rss}
rounds=${HOTLIST_ROUNDS:-2}
rss_rounds=${HOTLIST_RSS_ROUNDS:-1}
port=${HOTLIST_PORT:-16640}
consumers=${HOTLIST_CONSUMERS:-8}
batch=${HOTLIST_BATCH:-100}
pop1k_parts=${HOTLIST_POP1K_PARTITIONS:-$(q 1000 200)}
pop1k_per=${HOTLIST_POP1K_PER_PARTITION:-$(q 20 10)}
pop10k_parts=${HOTLIST_POP10K_PARTITIONS:-$(q 10000 2000)}
pop10k_per=${HOTLIST_POP10K_PER_PARTITION:-2}
pop10k_count=${HOTLIST_POP10K_COUNT:-$(q 10000 2000)}
idle_parts=${HOTLIST_IDLE_PARTITIONS:-$(q 10000 2000)}
idle_consumers=${HOTLIST_IDLE_CONSUMERS:-50}
idle_seconds=${HOTLIST_IDLE_SECONDS:-$(q 30 10)}
idle_warmup=${HOTLIST_IDLE_WARMUP:-$(q 75 3)}
lat_rate=${HOTLIST_LATENCY_RATE:-500}
lat_parts=${HOTLIST_LATENCY_PARTITIONS:-100}
lat_consumers=${HOTLIST_LATENCY_CONSUMERS:-16}
lat_seconds=${HOTLIST_LATENCY_SECONDS:-$(q 20 5)}
rss_parts=${HOTLIST_RSS_PARTITIONS:-$(q 100000 10000)}
sweep_ms=${HOTLIST_SWEEP_MS:-$(q 5000 2000)}
gc_wait=${HOTLIST_GC_WAIT:-$(q 130 10)}

for b in bin/queen-server bin/queen-bench; do
  [ -x "$b" ] || { echo "bench-hotlist: $b is missing: run make build" >&2; exit 2; }
done
run=$(mktemp -d /tmp/queen-hotlist.XXXXXX)
chmod 755 "$run" # the embedded PostgreSQL runs as the postgres user when we are root
results="$run/results.jsonl"
: >"$results"
url="http://127.0.0.1:$port"
pid="" # the broker now running, started by this script
failed=0


cleanup() {
  stop_broker
  if [ "${HOTLIST_KEEP:-0}" != 1 ]; then
    rm -rf "$run"/*/data
  fi
  echo "bench-hotlist: run directory (logs, results.jsonl): $run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_broker NAME HOTLIST [VAR=VALUE...]: a broker on a fresh embedded PostgreSQL.
start_broker() {
  local name=$1 hl=$2
  shift 2
  dir="$run/$name"
  mkdir -p "$dir"
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "bench-hotlist: port $port is in use by a server this script did not start: set HOTLIST_PORT" >&2
    exit 2
  fi
  echo "=== $name: QUEEN_HOTLIST=$hl; load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$dir/bench.log"
  env QUEEN_DATA_DIR="$dir/data" PORT="$port" QUEEN_BIND_ADDR=127.0.0.1 LOG_LEVEL="${LOG_LEVEL:-warn}" \
    QUEEN_HOTLIST="$hl" "$@" ./bin/queen-server >"$dir/server.log" 2>&1 &
  pid=$!
}

# pg_pid / pg_url: the embedded PostgreSQL of the running broker (its postmaster.pid).
pg_pid() { sed -n 1p "$dir/data/pg/postmaster.pid"; }
pg_url() { echo "postgres://postgres@127.0.0.1:$(sed -n 4p "$dir/data/pg/postmaster.pid")/postgres?sslmode=disable"; }

# step SCENARIO STEP ROUND HOTLIST RECORD MODE ARGS...: one queen-bench mode against the
# running broker; its JSON line goes to results.jsonl when RECORD is 1.
step() {
  local scn=$1 st=$2 r=$3 hl=$4 record=$5 mode=$6
  shift 6
  local out="$dir/$st.out"
  echo "--- $scn round $r, hot-list $hl: queen-bench $mode $*" | tee -a "$dir/bench.log"
  if ! ./bin/queen-bench "$mode" -url "$url" -ready-timeout 120s "$@" 2>&1 | tee "$out" | tee -a "$dir/bench.log"; then
    echo "bench-hotlist: $scn/$st failed (round $r, hot-list $hl): see $dir" >&2
    failed=1
    return 1
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "bench-hotlist: the broker of $scn exited: see $dir/server.log" >&2
    failed=1
    return 1
  fi
  local summary
  summary=$(grep '^{"mode":' "$out" | tail -n 1 || true)
  if [ "$record" = 1 ] && [ -n "$summary" ]; then
    printf '{"scenario":"%s","step":"%s","round":%d,"hotlist":%d,"summary":%s}\n' "$scn" "$st" "$r" "$hl" "$summary" >>"$results"
  fi
}

# scenario NAME ROUND HOTLIST
scenario() {
  local scn=$1 r=$2 hl=$3
  local name="$scn-r$r-hl$hl"
  case $scn in
  pop1k | pop10k)
    local parts=$pop1k_parts per=$pop1k_per count=$((pop1k_parts * pop1k_per))
    if [ "$scn" = pop10k ]; then parts=$pop10k_parts per=$pop10k_per count=$pop10k_count; fi
    start_broker "$name" "$hl"
    step "$scn" prefill "$r" "$hl" 1 prefill -queue hl -partitions "$parts" -messages $((parts * per)) &&
      step "$scn" consume "$r" "$hl" 1 consume -queue hl -consumers "$consumers" -batch "$batch" -partitions 1 \
        -count "$count" -duration 600s || true
    ;;
  idle)
    start_broker "$name" "$hl"
    # The partitions exist and are drained: the long polls find nothing, and nothing comes.
    step "$scn" prefill "$r" "$hl" 0 prefill -queue hl -partitions "$idle_parts" -messages "$idle_parts" &&
      step "$scn" drain "$r" "$hl" 0 consume -queue hl -consumers "$consumers" -batch 100 -partitions 100 \
        -count "$idle_parts" -duration 600s &&
      step "$scn" idle "$r" "$hl" 1 idle -queue hl -consumers "$idle_consumers" -warmup "${idle_warmup}s" \
        -duration "${idle_seconds}s" -pg-pid "$(pg_pid)" -pg-url "$(pg_url)" -broker-pid "$pid" || true
    ;;
  latency)
    start_broker "$name" "$hl"
    step "$scn" latency "$r" "$hl" 1 latency -rate "$lat_rate" -partitions "$lat_parts" \
      -consumers "$lat_consumers" -duration "${lat_seconds}s" || true
    ;;
  rss)
    start_broker "$name" "$hl" QUEEN_HOTLIST_IDLE_SWEEP_MS="$sweep_ms"
    # Two sweep periods and a little: the sweep drops a queue untouched for a whole period.
    step "$scn" rss "$r" "$hl" 1 rss -partitions "$rss_parts" -duration 600s -broker-pid "$pid" \
      -sweep-wait "$((sweep_ms * 2 + 5000))ms" -gc-wait "${gc_wait}s" || true
    ;;
  *)
    echo "bench-hotlist: unknown scenario $scn (pop1k pop10k idle latency rss)" >&2
    exit 2
    ;;
  esac
  stop_broker
  [ "${HOTLIST_KEEP:-0}" = 1 ] || rm -rf "$run/$name/data"
}

echo "bench-hotlist: scenarios: $scenarios; $rounds rounds; run directory $run"
for r in $(seq 1 "$rounds"); do
  order="1 0"
  if [ $((r % 2)) = 0 ]; then order="0 1"; fi
  for scn in $scenarios; do
    if [ "$scn" = rss ] && [ "$r" -gt "$rss_rounds" ]; then continue; fi
    for hl in $order; do
      scenario "$scn" "$r" "$hl"
    done
  done
done

echo
echo "== the hot-list: on (QUEEN_HOTLIST=1) against off (QUEEN_HOTLIST=0)"
./bin/queen-bench report -file "$results"
echo
echo "== JSON lines ($results)"
cat "$results"
exit "$failed"
