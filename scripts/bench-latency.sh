#!/usr/bin/env bash
# Push-to-consume latency of queen-go beside River's (a Go job queue on PostgreSQL) in one
# run: one broker on a fresh embedded PostgreSQL, a database river_bench in the same
# cluster for River, then for each rate and round `queen-bench latency` through the broker
# and `peer-river` (bench/peers/river: the same pacer, histograms and summary line, push =
# River's Insert, pop = the start of the job's work) against River, alternating the order.
# Prints one markdown table (each side's latency percentiles, achieved rate and CPU per
# message; per rate the median of the rounds and queen/river ratios) and keeps the logs,
# the JSON lines and results.tsv (and with KEEP_DATA=1 the data directory) in a temporary
# directory, whose path it prints. Used by `make bench-latency`; needs bin/queen-server,
# bin/queen-bench (make build) and bin/peer-river (built by make bench-latency), PostgreSQL's
# server binaries with psql (Debian: the postgresql package) and, when pinned, taskset.
#
#   PIN                1 (default): the cluster (postmaster and every backend) on PG_CPUS,
#                      the broker, queen-bench and peer-river (which holds River itself) on
#                      CLIENT_CPUS; 0: nothing pinned
#   PG_CPUS            cores of PostgreSQL when pinned (taskset list, default 0)
#   CLIENT_CPUS        cores of the broker and both clients (default 1)
#   RATES              offered rates, msgs/s, in order (default "500 5000")
#   ROUNDS             rounds per rate (default 3): queen then river in odd rounds, river
#                      then queen in even ones
#   SECONDS_PER_SIDE   paced seconds of each side per round (default 15), the first WARMUP
#                      of them not measured
#   WARMUP             each side's unmeasured start (default 2s: queen-bench latency -warmup,
#                      peer-river -warmup): messages scheduled then are consumed, not measured
#   WARMUP_SECONDS     one unmeasured run of each side at the first rate before the rounds
#                      (default 5; 0: none): the broker's first queue, River's migrations
#   PARTITIONS         the queen side's partitions (default 100; River's jobs have none)
#   CONSUMERS          queen-bench's long-poll consumers and River's MaxWorkers (default 16)
#   PRODUCERS          producer connections (queen-bench) and Insert goroutines (peer-river),
#                      the same on both sides (default: 32 up to 1,000 msgs/s, 128 above).
#                      Each producer has one push in flight, so a side pushes at most
#                      producers / push time: a queen-go push is answered after its commit
#                      cycle, 13-15 ms at 5,000 msgs/s on the 2-core machine, where 64
#                      producers capped it near 4,600 msgs/s (send lag p99 0.6 s) and 128
#                      kept up (send lag p99 2 ms). The table's send lag column shows it.
#                      peer-river's pool holds producers + 8 connections: mind
#                      max_connections (the embedded cluster's is 300, the broker's pool
#                      takes up to DB_POOL_SIZE of them)
#   LATENCY_PORT       broker port (default 16642; the script stops if it is in use)
#   RIVER_ARGS         more peer-river flags (e.g. "-fetch-cooldown 100ms -fetch-poll 1s",
#                      River's own defaults; peer-river's are 2ms and 50ms)
#   KEEP_DATA          0 (default): remove the cluster's data directory on exit; 1: keep it
#   LOG_LEVEL          the broker's (default warn); other broker settings pass through the
#                      environment
#
# Each side is a process of its own per round. The queen side pushes one message per
# request to a queue of its own per rate and round (lat-RATE-ROUND) over PARTITIONS
# partitions; the river side truncates river_job first, so every round starts on an
# empty table. Latency is from each message's scheduled instant (no coordinated omission)
# to its pop (queen) or work start (River); CPU is read from /proc over each side's whole
# run (warm-up and drain included) and divided by the messages consumed: PostgreSQL's
# (the postmaster and its children, -pg-pid), and the client's, which for queen-go is
# queen-bench's plus the broker's (-broker-pid) and for River peer-river's own (River is
# a library: its fetcher, executors and completer run in that process). After each queen
# run one line gives the broker's stage breakdown (queen_push_stage_seconds,
# queen_pop_stage_seconds: means over the run) and the mean WAL flush of the cluster
# (pg_stat_wal, with track_wal_io_timing turned on for the run).
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C # decimal points in awk and sort
name=bench-latency
# die, pg_bin_dir, ports_free, commit_label, json_tsv, start_broker, stop_broker.
. scripts/lib-pinned.sh

pin=${PIN:-1}
pg_cpus=${PG_CPUS:-0}
client_cpus=${CLIENT_CPUS:-1}
rates=${RATES:-500 5000}
rounds=${ROUNDS:-3}
secs=${SECONDS_PER_SIDE:-15}
warmup=${WARMUP:-2s}
warmup_secs=${WARMUP_SECONDS:-5}
partitions=${PARTITIONS:-100}
consumers=${CONSUMERS:-16}
port=${LATENCY_PORT:-16642}
keep_data=${KEEP_DATA:-0}
read -r -a river_args <<<"${RIVER_ARGS:-}"

for b in bin/queen-server bin/queen-bench bin/peer-river; do
  [ -x "$b" ] || die "$b is missing: run make bench-latency (it builds them)"
done
for r in $rates; do
  [[ $r =~ ^[0-9]+$ ]] && [ "$r" -gt 0 ] || die "RATES must be positive integers (msgs/s): $r"
done
if [ "$pin" = 1 ]; then
  command -v taskset >/dev/null || die "taskset not found (PIN=1 needs it: Debian package util-linux), or run with PIN=0"
fi
bindir=$(pg_bin_dir)
[ -n "$bindir" ] || die "PostgreSQL's server binaries (initdb, postgres) not found: install them (Debian: apt-get install postgresql)"
ports_free LATENCY_PORT "$port"

# producers RATE: the producers of both sides at RATE.
producers() {
  if [ -n "${PRODUCERS:-}" ]; then
    echo "$PRODUCERS"
  elif [ "$1" -le 1000 ]; then
    echo 32
  else
    echo 128
  fi
}

# The CPU flags of queen-bench latency, when this queen-bench has them.
cpu_flags=0
./bin/queen-bench latency -h 2>&1 | grep -q -- '-broker-pid' && cpu_flags=1
# Its -pg-url (the run's WAL flushes), likewise.
wal_flag=0
./bin/queen-bench latency -h 2>&1 | grep -q -- '-pg-url' && wal_flag=1

dir=$(mktemp -d /tmp/queen-latency.XXXXXX)
chmod 755 "$dir" # the embedded PostgreSQL runs as the postgres user when we are root
results="$dir/results.tsv"
printf 'rate\tround\tside\tmsgs_per_s\tsent\tconsumed\terrors\tp50_ms\tp90_ms\tp99_ms\tp999_ms\tmax_ms\tsend_lag_p99_ms\tpg_us\tbroker_us\tbench_us\tproducers\n' >"$results"
commit_label

pid="" # the broker
cleanup() {
  stop_broker
  [ "$keep_data" = 1 ] || rm -rf "$dir/data"
  echo "bench-latency: run directory (logs, JSON lines, results.tsv): $dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "bench-latency: commit $commit, PIN=$pin, rates: $rates msgs/s, $rounds rounds of ${secs}s a side (warm-up $warmup);" \
  "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
pg_tools=(psql)
clients_desc="queen-bench and peer-river"
start_broker
echo "bench-latency: broker $pid on $url, PostgreSQL $("${psql[@]}" -d postgres -Atc 'SHOW server_version' 2>/dev/null) (postmaster $pm, port $pgport)"
[ "$cpu_flags" = 1 ] || echo "bench-latency: this queen-bench latency has no -pg-pid/-broker-pid: the queen side's CPU columns stay empty"
"${psql[@]}" -d postgres -c 'CREATE DATABASE river_bench'
river_dsn="postgres://postgres@127.0.0.1:$pgport/river_bench"
# The WAL flushes' durations (pg_stat_wal.wal_sync_time), for the queen side's stage
# line: the share of a commit that is the disk's.
"${psql[@]}" -d postgres -c 'ALTER SYSTEM SET track_wal_io_timing = on' -c 'SELECT pg_reload_conf()' >/dev/null
pg_url="postgres://postgres@127.0.0.1:$pgport/postgres"

# run_side SIDE RATE SECONDS QUEUE OUT: one run of a side; its output in OUT.out, its JSON
# line in OUT.json.
run_side() {
  local side=$1 rate=$2 s=$3 queue=$4 out=$5 n
  n=$(producers "$rate")
  local cmd
  if [ "$side" = queen ]; then
    cmd=(./bin/queen-bench latency -url "$url" -queue "$queue" -rate "$rate" -partitions "$partitions"
      -consumers "$consumers" -producers "$n" -duration "${s}s" -warmup "$warmup" -progress off)
    [ "$cpu_flags" = 0 ] || cmd+=(-pg-pid "$pm" -broker-pid "$pid")
    [ "$wal_flag" = 0 ] || cmd+=(-pg-url "$pg_url")
  else
    cmd=(./bin/peer-river -dsn "$river_dsn" -rate "$rate" -producers "$n" -workers "$consumers"
      -duration "${s}s" -warmup "$warmup" -pg-pid "$pm" "${river_args[@]}")
  fi
  echo "${cmd[*]}" >"$out.cmd"
  if ! "${client[@]}" "${cmd[@]}" >"$out.out" 2>&1; then
    tail -n 20 "$out.out" >&2
    die "$side side failed: see $out.out"
  fi
  grep '^{"mode":' "$out.out" | tail -n 1 >"$out.json"
  [ -s "$out.json" ] || die "no summary line in $out.out"
  kill -0 "$pid" 2>/dev/null || die "the broker exited: see $dir/server.log"
}

# measure SIDE RATE ROUND: one measured run, appended to results.tsv.
measure() {
  local side=$1 rate=$2 r=$3 out="$dir/$1-$2-r$3"
  run_side "$side" "$rate" "$secs" "lat-$rate-$r" "$out"
  # queen-bench counts pushed/consumed, peer-river inserted/worked: one of each is empty.
  json_tsv "$out.json" rates.consumed rates.worked totals.pushed totals.inserted totals.consumed totals.worked \
    totals.errors p50_ms p90_ms p99_ms p999_ms p100_ms extra.send_lag_p99_ms extra.pg_us_per_msg \
    extra.broker_us_per_msg extra.bench_us_per_msg |
    awk -F'\t' -v rate="$rate" -v r="$r" -v side="$side" -v n="$(producers "$rate")" '
      function f(v, fmt) { return v == "" ? "" : sprintf(fmt, v) }
      { printf "%d\t%d\t%s\t%.1f\t%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%d\n", rate, r, side,
          $1 + $2, $3 + $4, $5 + $6, $7, $8, $9, $10, $11, $12, f($13, "%.2f"), f($14, "%.1f"), f($15, "%.1f"), f($16, "%.1f"), n }' >>"$results"
  tail -n 1 "$results" | awk -F'\t' '{ printf "    %-6s %s msgs/s, p50 %s ms, p99 %s ms, p999 %s ms, max %s ms, send lag p99 %s ms, PG %s µs/msg, client %s%s µs/msg\n",
    $3 ":", $4, $8, $10, $11, $12, $13, $14, $16, ($15 == "" ? "" : " + broker " $15) }'
  [ "$side" = queen ] && stage_line "$out.json"
  return 0
}

# stage_line JSON: the broker's stage breakdown of a queen run (means, ms) and the mean
# WAL flush, on one line; nothing without python3 or without the figures.
stage_line() {
  command -v python3 >/dev/null || return 0
  python3 - "$1" <<'PY' || true
import json, sys
x = json.load(open(sys.argv[1])).get("extra") or {}
push, pop = x.get("push_stages") or [], x.get("pop_stages") or []
if push:
    f = lambda l: ", ".join("%s %.2f" % (s["stage"], s["mean_ms"]) for s in l)
    wal = x.get("wal_sync_mean_ms")
    print("           stages, mean ms: push %s%s | pop %s" % (f(push), "" if wal is None else " (WAL flush %.2f)" % wal, f(pop)))
PY
}

first=${rates%% *}
if [ "$warmup_secs" -gt 0 ]; then
  echo "--- warm-up, unmeasured: ${warmup_secs}s of each side at $first msgs/s"
  run_side queen "$first" "$warmup_secs" lat-warmup "$dir/warmup-queen"
  run_side river "$first" "$warmup_secs" "" "$dir/warmup-river"
fi
# One checkpoint before the rounds, none between them (as bench-pinned.sh).
"${psql[@]}" -d postgres -c CHECKPOINT
sleep 2

for rate in $rates; do
  for r in $(seq 1 "$rounds"); do
    echo "--- $rate msgs/s, round $r ($(producers "$rate") producers, $consumers consumers; load average $(cut -d' ' -f1-3 /proc/loadavg))"
    if [ $((r % 2)) = 1 ]; then sides=(queen river); else sides=(river queen); fi
    for side in "${sides[@]}"; do
      measure "$side" "$rate" "$r"
      sleep 0.5
    done
  done
done

echo
echo "Push-to-consume latency, queen-go against River $(sed -n 's/.*"river":"\([^"]*\)".*/\1/p' "$dir"/river-*.json 2>/dev/null | head -n 1):" \
  "commit $commit, $([ "$pin" = 1 ] && echo "pinned: PostgreSQL on CPU $pg_cpus, broker and clients on CPU $client_cpus" || echo "unpinned"),"\
  "$(nproc) cores, ${secs}s a side per round (the first $warmup unmeasured)"
echo
awk -F'\t' '
  function label(s) { return s == "queen" ? "queen-go (queen-bench latency)" : "River (peer-river)" }
  function median(key, col,    k, m, i, v, t) {
    m = cnt[key]
    if (m == 0) return ""
    for (i = 1; i <= m; i++) {
      t = val[key, col, i]
      if (t == "") return ""
      for (k = i; k > 1 && v[k - 1] > t + 0; k--) v[k] = v[k - 1] # insertion sort
      v[k] = t + 0
    }
    return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
  }
  function cell(v, fmt) { return v == "" ? "" : sprintf(fmt, v) }
  function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "" : sprintf("%.2fx", a / b) }
  function client(b, k) { return b == "" && k == "" ? "" : b + k }
  NR == 1 { next }
  {
    rows[++n] = $0
    key = $1 SUBSEP $3
    i = ++cnt[key]
    val[key, "rate", i] = $4; val[key, "p50", i] = $8; val[key, "p90", i] = $9; val[key, "p99", i] = $10
    val[key, "p999", i] = $11; val[key, "max", i] = $12; val[key, "lag", i] = $13; val[key, "pg", i] = $14
    val[key, "cl", i] = client($15, $16)
    errs[key] += $7; left[key] += ($5 > $6 ? $5 - $6 : 0)
    if (!($1 in seen)) { seen[$1] = 1; order[++m] = $1 }
  }
  END {
    print "| rate msgs/s | round | side | msgs/s | p50 ms | p90 ms | p99 ms | p999 ms | max ms | send lag p99 ms | PG µs/msg | client(+broker) µs/msg | errors | unconsumed |"
    print "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= n; i++) {
      split(rows[i], f, "\t")
      printf "| %d | %d | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d |\n", f[1], f[2], label(f[3]), f[4],
        f[8], f[9], f[10], f[11], f[12], f[13], f[14], cell(client(f[15], f[16]), "%.1f"), f[7], (f[5] > f[6] ? f[5] - f[6] : 0)
    }
    for (j = 1; j <= m; j++) {
      rt = order[j]
      for (s = 0; s < 2; s++) {
        side = s == 0 ? "queen" : "river"; key = rt SUBSEP side
        if (!(key in cnt)) continue
        printf "| %d | median of %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d |\n", rt, cnt[key], label(side),
          cell(median(key, "rate"), "%.0f"), cell(median(key, "p50"), "%.2f"), cell(median(key, "p90"), "%.2f"),
          cell(median(key, "p99"), "%.2f"), cell(median(key, "p999"), "%.2f"), cell(median(key, "max"), "%.2f"),
          cell(median(key, "lag"), "%.2f"), cell(median(key, "pg"), "%.1f"), cell(median(key, "cl"), "%.1f"), errs[key], left[key]
      }
      q = rt SUBSEP "queen"; v = rt SUBSEP "river"
      if ((q in cnt) && (v in cnt))
        printf "| %d | medians | **queen/river** | | **%s** | %s | **%s** | %s | %s | | %s | %s | | |\n", rt,
          ratio(median(q, "p50"), median(v, "p50")), ratio(median(q, "p90"), median(v, "p90")),
          ratio(median(q, "p99"), median(v, "p99")), ratio(median(q, "p999"), median(v, "p999")),
          ratio(median(q, "max"), median(v, "max")), ratio(median(q, "pg"), median(v, "pg")),
          ratio(median(q, "cl"), median(v, "cl"))
    }
  }' "$results"
echo
echo "latency: from each message's scheduled instant to its pop (queen-go) or work start (River), messages scheduled after the warm-up;" \
  "send lag: scheduled instant to the push's start; CPU per consumed message over the whole run: PostgreSQL (the cluster)," \
  "client: queen-bench + broker, or peer-river (River runs in it); unconsumed: pushed but not consumed within the 5 s drain"
