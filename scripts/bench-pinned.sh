#!/usr/bin/env bash
# The push comparison of docs/benchmarks.md ("Performance round 2") end to end, with the processes pinned to
# cores: a broker on a fresh embedded PostgreSQL, then, in rounds, one-row commits by
# pgbench into a plain table of the same cluster (the baseline: what one transaction per
# message can do at best) against queen-bench pushes through the broker (fusion), with the
# CPU per message of PostgreSQL, the broker and the client. Prints one markdown table and
# keeps its logs, pgbench scripts and transaction logs and results.tsv (and with
# KEEP_DATA=1 the data directory) in a temporary directory, whose path it prints. Used by `make bench-pinned`;
# needs bin/queen-server and bin/queen-bench (make build), PostgreSQL's server binaries
# with pgbench (Debian: the postgresql package) and, when pinned, taskset (util-linux).
#
#   PIN                1 (default): the cluster (postmaster and every backend: new ones
#                      inherit the postmaster's affinity) on PG_CPUS, the broker, pgbench
#                      and queen-bench on CLIENT_CPUS; 0: nothing pinned (the honest
#                      unpinned comparison)
#   PG_CPUS            cores of PostgreSQL when pinned (taskset list, default 0)
#   CLIENT_CPUS        cores of the broker and the load generators (default 1)
#   SCENARIOS          in order (default: single)
#     single           64 connections, one message per request / one row per transaction
#     batch100         16 connections, 100 messages per request / 100 rows per transaction
#     writes           the write floor of the storage layout, no broker: one-row commits
#                      (64 connections) against pgbench transactions that each write what
#                      a fused bundle of WRITES_BUNDLE single-message segments writes
#                      (one statement: the partition rows locked in id order and moved,
#                      their segment rows and hash rows), and the same without the hash
#                      rows, into copies of queen.log_partitions/log_segments/log_txns
#                      (pg_dump --schema-only of the broker's, so indexes and fillfactor
#                      are the real ones) in the baseline's database
#     floor            the broker's CPU per single-message push against the HTTP floor
#                      (queen-bench floor: the broker's router, middleware and push
#                      handler over a push that only waits for a 3 ms commit cycle), 64
#                      connections each, no pgbench; prints each round's broker/floor
#                      ratio of CPU per message and their median
#   WRITES_BUNDLE      segments per transaction of the writes scenario (default 32)
#   WRITES_CONNS       connections of its write sides (default 4: fusion's commits in flight)
#   ROUNDS             rounds per scenario (default 3): baseline then fusion in odd rounds,
#                      fusion then baseline in even ones
#   SECONDS_PER_SIDE   measured seconds of each side per round (default 10)
#   WARMUP_SECONDS     unmeasured warm-up of each side per scenario (default 5)
#   LEADIN_SECONDS     unmeasured start of every pgbench phase once its connections are
#                      open (default 2): pgbench opens new connections per phase, and fresh
#                      backends run slower for their first seconds; the measured window
#                      (CPU, rows, latency) follows it
#   PARTITIONS         partitions, chosen at random per request/transaction (default 1000)
#   PAYLOAD            payload size, bytes, as queen-bench push -payload (default 110)
#   PINNED_PORT        broker port (default 16634; the script stops if it is in use); the
#                      floor scenario's server listens on the next one
#   KEEP_DATA          0 (default): remove the cluster's data directory on exit (a batch100
#                      run leaves about 1 GB); 1: keep it
#   LOG_LEVEL          the broker's (default warn); other broker settings (DB_POOL_SIZE,
#                      QUEEN_SEG_PUSH_*, ...) pass through the environment
#
# The baseline's table mirrors bench/broker/push_test.go's (partition, txn, created_at,
# payload text; bigserial key) in its own database (bench_baseline). pgbench runs
# `-c CONNS -j 2 -n -M prepared -l` as the current user over TCP (user postgres, trust),
# and SIGALRM ends it once its window is measured (its -T counts connecting too).
# CPU is read from /proc as queen-bench's -pg-pid does: the postmaster's utime, stime,
# cutime and cstime (reaped backends land in the last two) plus those of its children.
# The baseline's client CPU is pgbench's, its per-transaction log (-l) included; its
# p50/p99 are those of the transactions completed in the measured window.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C # decimal points in EPOCHREALTIME, awk and sort
name=bench-pinned
# die, pg_bin_dir, ports_free, commit_label, json_tsv, start_broker, stop_broker.
. scripts/lib-pinned.sh

pin=${PIN:-1}
pg_cpus=${PG_CPUS:-0}
client_cpus=${CLIENT_CPUS:-1}
scenarios=${SCENARIOS:-single}
rounds=${ROUNDS:-3}
secs=${SECONDS_PER_SIDE:-10}
warmup=${WARMUP_SECONDS:-5}
leadin=${LEADIN_SECONDS:-2}
partitions=${PARTITIONS:-1000}
payload=${PAYLOAD:-110}
port=${PINNED_PORT:-16634}
keep_data=${KEEP_DATA:-0}

for b in bin/queen-server bin/queen-bench; do
  [ -x "$b" ] || die "$b is missing: run make build"
done
for s in $scenarios; do
  case $s in single | batch100 | writes | floor) ;; *) die "unknown scenario $s (single, batch100, writes, floor)" ;; esac
done
writes_bundle=${WRITES_BUNDLE:-32}
writes_conns=${WRITES_CONNS:-4}
[ "$writes_bundle" -ge 1 ] && [ "$writes_bundle" -le "$partitions" ] || die "WRITES_BUNDLE must be 1..PARTITIONS"
if [ "$pin" = 1 ]; then
  command -v taskset >/dev/null || die "taskset not found (PIN=1 needs it: Debian package util-linux), or run with PIN=0"
fi
bindir=$(pg_bin_dir)
[ -n "$bindir" ] || die "PostgreSQL's server binaries (initdb, postgres) not found: install them (Debian: apt-get install postgresql)"
[ -x "$bindir/pgbench" ] || die "pgbench not found in $bindir (it ships with the PostgreSQL server package; Debian: postgresql)"
ports_free PINNED_PORT "$port" $((port + 1))

dir=$(mktemp -d /tmp/queen-pinned.XXXXXX)
chmod 755 "$dir" # the embedded PostgreSQL runs as the postgres user when we are root
results="$dir/results.tsv"
printf 'scenario\tround\tside\tmsgs\tseconds\tmsgs_per_s\tpg_us\tbroker_us\tclient_us\tp50_ms\tp99_ms\terrors\n' >"$results"
commit_label
tck=$(getconf CLK_TCK)

pid=""       # the broker
pgb_pid=""   # a pgbench running in the background
floor_pid="" # queen-bench floor, for the floor scenario
floor_url="http://127.0.0.1:$((port + 1))"
cleanup() {
  if [ -n "$floor_pid" ]; then
    kill -TERM "$floor_pid" 2>/dev/null || true
    wait "$floor_pid" 2>/dev/null || true
  fi
  if [ -n "$pgb_pid" ]; then
    kill -TERM "$pgb_pid" 2>/dev/null || true
    wait "$pgb_pid" 2>/dev/null || true
  fi
  stop_broker
  [ "$keep_data" = 1 ] || rm -rf "$dir/data"
  echo "bench-pinned: run directory (logs, results.tsv, pgbench scripts and logs): $dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "bench-pinned: commit $commit, PIN=$pin, scenarios: $scenarios, $rounds rounds of ${secs}s a side; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
pg_tools=(pgbench psql)
clients_desc="pgbench and queen-bench"
start_broker
echo "bench-pinned: broker $pid on $url, PostgreSQL $("${psql[@]}" -d postgres -Atc 'SHOW server_version' 2>/dev/null) (postmaster $pm, port $pgport), pgbench $bindir/pgbench"
"${psql[@]}" -d postgres -c 'CREATE DATABASE bench_baseline'

# cpu_ticks [PID]: _cluster = the CPU ticks (utime+stime+cutime+cstime) of the postmaster
# and of its living children (its reaped children are in its cutime and cstime: the
# ClusterCPU of bench/load/proc.go); _client = those of PID (pgbench; its threads are
# in its own). One awk reads every /proc/PID/stat: on a loaded machine a shell loop over
# them takes seconds.
cpu_ticks() {
  local seen
  read -r seen _cluster _client < <(awk -v pm="$pm" -v cl="${1:-0}" 'BEGIN {
    for (i = 1; i < ARGC; i++) {
      if ((getline line < ARGV[i]) <= 0) continue # gone meanwhile
      close(ARGV[i])
      pid = ARGV[i]; gsub(/[^0-9]/, "", pid)
      sub(/^.*\) /, "", line) # from the 3rd field (state) on: the command may hold spaces
      split(line, f, " ")
      t = f[12] + f[13] + f[14] + f[15]
      if (pid == pm) { seen += 1; c += t } else if (f[2] == pm) c += t
      if (pid == cl) { seen += 2; p = t }
    }
    printf "%d %d %d\n", seen, c, p
    exit
  }' /proc/[0-9]*/stat)
  seen=${seen:-0}
  [ $((seen & 1)) = 1 ] || die "the postmaster $pm exited: see $dir/server.log"
  [ -z "${1:-}" ] || [ $((seen & 2)) = 2 ] || return 1
}

# stamp: _now = the time, seconds since the epoch.
stamp() { _now=${EPOCHREALTIME:-$(date +%s.%N)}; }

# start_floor: queen-bench floor on the port after the broker's (once), on the broker's
# cores; sets floor_pid.
start_floor() {
  [ -z "$floor_pid" ] || return 0
  "${client[@]}" ./bin/queen-bench floor -addr "127.0.0.1:$((port + 1))" >"$dir/floor.log" 2>&1 &
  floor_pid=$!
  if ! ./bin/queen-bench push -url "$floor_url" -ready-timeout 30s -count 1 -conns 1 -queue bench-ready \
    >"$dir/floor-ready.log" 2>&1; then
    die "queen-bench floor did not come up: see $dir/floor.log"
  fi
}

# write_scenario NAME: the baseline's table and pgbench script of scenario NAME; sets
# conns, batch, table, script (and for writes, writes_script and nohash_script).
write_scenario() {
  case $1 in
  single | writes | floor) conns=64 batch=1 ;;
  batch100) conns=16 batch=100 ;;
  esac
  [ "$1" = floor ] && { start_floor; return 0; }
  table="bench_onerow_$1"
  script="$dir/pgbench-$1.sql"
  "${psql[@]}" -d bench_baseline -c "CREATE TABLE $table (id bigserial PRIMARY KEY, partition text NOT NULL,
    txn text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), payload text NOT NULL)"
  # The payload has queen-bench's shape and size ({"seq":N,"pad":"xxx..."}, load.Payload).
  local pad
  pad=$(printf "%$((payload > 33 ? payload - 33 : 0))s" '' | tr ' ' x)
  {
    echo "\\set p random(0, $((partitions - 1)))"
    echo '\set s random(1, 1000000000)'
    if [ "$batch" = 1 ]; then
      echo "INSERT INTO $table (partition, txn, payload) VALUES ('p' || :p::text, 'r' || :client_id::text || '-' || :s::text, '{\"seq\":' || :s::text || ',\"pad\":\"$pad\"}');"
    else
      echo "INSERT INTO $table (partition, txn, payload) SELECT 'p' || :p::text, 'r' || :client_id::text || '-' || :s::text || '-i' || i, '{\"seq\":' || i || ',\"pad\":\"$pad\"}' FROM generate_series(1, $batch) i;"
    fi
  } >"$script"
  [ "$1" = writes ] && write_floor_scripts "$pad"
  return 0
}

# write_floor_scripts PAD: the writes scenario's tables (the broker's three, dumped without
# data into the baseline's database, 1,000 partitions of one queue) and its two pgbench
# scripts. Each transaction is one statement, as the bundle's writes are one commit: pick
# WRITES_BUNDLE distinct partitions (a random start, then a stride of 31: distinct while
# the bundle is below PARTITIONS / gcd), lock them in ascending id, move last_offset as the
# allocator does (last_write_at quantised to 1 s), insert one segment row each with a blob
# of a single-message segment's size and, in the full variant, one 16-byte hash row each.
write_floor_scripts() {
  local blob
  "$bindir/pg_dump" -d postgres --schema-only -t queen.log_partitions -t queen.log_segments -t queen.log_txns \
    >"$dir/writes-schema.sql"
  "${psql[@]}" -d bench_baseline -c 'CREATE SCHEMA queen' -f "$dir/writes-schema.sql" >/dev/null
  "${psql[@]}" -d bench_baseline -c "INSERT INTO queen.log_partitions (queue_id, name)
    SELECT '00000000-0000-0000-0000-0000000000aa', 'p' || n FROM generate_series(0, $((partitions - 1))) n"
  "${psql[@]}" -d bench_baseline -c 'VACUUM ANALYZE queen.log_partitions'
  # A single-message segment as the broker stores it: a small header and the raw payload.
  blob="convert_to(repeat('x', $((payload + 40))), 'UTF8')"
  local pick="SELECT lp.id FROM queen.log_partitions lp
     WHERE lp.queue_id = '00000000-0000-0000-0000-0000000000aa'
       AND lp.name IN (SELECT 'p' || ((:b + 31 * i) % $partitions) FROM generate_series(0, $((writes_bundle - 1))) i)
     ORDER BY lp.id FOR NO KEY UPDATE OF lp"
  local move="UPDATE queen.log_partitions lp SET last_offset = lp.last_offset + 1,
         last_write_at = CASE WHEN clock_timestamp() - lp.last_write_at > interval '1 second'
                              THEN clock_timestamp() ELSE lp.last_write_at END
      WHERE lp.id IN (SELECT id FROM l) RETURNING lp.id, lp.last_offset"
  local seg="INSERT INTO queen.log_segments (partition_id, base_offset, msg_count, created_at, blob)
     SELECT u.id, u.last_offset, 1, clock_timestamp(), $blob FROM u"
  writes_script="$dir/pgbench-writes-full.sql"
  nohash_script="$dir/pgbench-writes-nohash.sql"
  # pgbench ends an SQL command at its semicolon, so the statements may span lines.
  {
    echo "\\set b random(0, $((partitions - 1)))"
    echo "WITH l AS ($pick), u AS ($move), s AS ($seg)"
    echo "INSERT INTO queen.log_txns (partition_id, end_offset, base_offset, created_at, hashes)"
    echo "SELECT u.id, u.last_offset, u.last_offset, clock_timestamp(), decode(md5(u.id::text || u.last_offset), 'hex') FROM u;"
  } >"$writes_script"
  {
    echo "\\set b random(0, $((partitions - 1)))"
    echo "WITH l AS ($pick), u AS ($move) $seg;"
  } >"$nohash_script"
}

pgbench_cmd() { # DURATION LOGPREFIX SCRIPT CONNS: pgb = a pgbench command line
  pgb=("${client[@]}" "$bindir/pgbench" -n -M prepared -c "$4" -j 2 -T "$1" -f "$3")
  # The write-floor sides lock several rows per transaction (in one order, but a retry
  # costs nothing to allow).
  [ "$3" = "$script" ] || pgb+=(--max-tries=5)
  [ -z "$2" ] || pgb+=(-l "--log-prefix=$2")
  pgb+=(bench_baseline)
}

# pgbench_side SCENARIO ROUND SIDE SCRIPT CONNS ROWS: one pgbench phase (ROWS: messages per
# transaction). Its measured window starts LEADIN_SECONDS
# after pgbench holds all its connections (seconds on a loaded machine) and lasts
# SECONDS_PER_SIDE; then SIGALRM ends pgbench's run as its -T would (it stops, writes its
# transaction logs and summary). -T itself is only a bound: it counts from the launch,
# connecting included.
pgbench_side() {
  local sc=$1 r=$2 side=$3 sscript=$4 sconns=$5 rows=$6 out="$dir/$3-$1-r$2" ta tb t0 t1 c0 c1 p0 p1 rc=0 launch total connected
  total=$((leadin + secs + 120))
  rm -f "$out".log.*
  pgbench_cmd "$total" "$out.log" "$sscript" "$sconns"
  stamp; launch=$_now
  "${pgb[@]}" >"$out.out" 2>&1 & # taskset execs pgbench: $! is pgbench
  pgb_pid=$!
  until [ "$(find "/proc/$pgb_pid/fd" -lname 'socket:*' 2>/dev/null | wc -l)" -ge "$sconns" ]; do
    if ! kill -0 "$pgb_pid" 2>/dev/null; then
      tail -n 20 "$out.out" >&2
      die "pgbench ended before it had connected: see $out.out"
    fi
    stamp
    awk -v l="$launch" -v n="$_now" 'BEGIN { exit !(n - l > 100) }' && die "pgbench did not connect within 100 s: see $out.out"
    sleep 0.1
  done
  stamp; connected=$_now
  echo "launch $launch connected $connected (pgbench -T $total)" >"$out.times"
  sleep "$leadin"
  stamp; ta=$_now
  cpu_ticks "$pgb_pid" || die "pgbench ended before its measured window: see $out.out"
  c0=$_cluster p0=$_client
  stamp; tb=$_now
  t0=$(awk -v a="$ta" -v b="$tb" 'BEGIN { printf "%.6f", (a + b) / 2 }')
  echo "window start $t0 ($ta to $tb)" >>"$out.times"
  sleep "$secs"
  stamp; ta=$_now
  cpu_ticks "$pgb_pid" || die "pgbench ended before its measured window did: see $out.out"
  c1=$_cluster p1=$_client
  stamp; tb=$_now
  t1=$(awk -v a="$ta" -v b="$tb" 'BEGIN { printf "%.6f", (a + b) / 2 }')
  echo "window end $t1 ($ta to $tb)" >>"$out.times"
  kill -ALRM "$pgb_pid" 2>/dev/null || true
  wait "$pgb_pid" || rc=$?
  pgb_pid=""
  if [ "$rc" != 0 ]; then
    tail -n 20 "$out.out" >&2
    echo "bench-pinned: pgbench exited with $rc (see $out.out)" >&2
  fi
  # Log lines: client_id transaction_no latency_us script_no epoch_s epoch_us (the end).
  # Transactions that ended in the window count; their latency percentiles as
  # bench/broker's percentile (index min(p*n, n-1) of the sorted latencies).
  local txns p50 p99 failed
  compgen -G "$out.log.*" >/dev/null || die "pgbench wrote no transaction log: see $out.out"
  cat "$out".log.* | awk -v t0="$t0" -v t1="$t1" '$3 ~ /^[0-9]+$/ { t = $5 + $6 / 1e6; if (t >= t0 && t < t1) print $3 }' |
    sort -n >"$out.lat"
  txns=$(wc -l <"$out.lat")
  p50=$(awk -v n="$txns" 'NR == (int(0.50 * n) < n - 1 ? int(0.50 * n) : n - 1) + 1 { printf "%.2f", $1 / 1000 }' "$out.lat")
  p99=$(awk -v n="$txns" 'NR == (int(0.99 * n) < n - 1 ? int(0.99 * n) : n - 1) + 1 { printf "%.2f", $1 / 1000 }' "$out.lat")
  failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$out.out")
  [ "$rc" = 0 ] || failed=$((${failed:-0} + 1))
  awk -v sc="$sc" -v r="$r" -v side="$side" -v n=$((txns * rows)) -v t0="$t0" -v t1="$t1" -v c=$((c1 - c0)) -v p=$((p1 - p0)) \
    -v tck="$tck" -v p50="$p50" -v p99="$p99" -v e="${failed:-0}" 'BEGIN {
      s = t1 - t0; us = 1e6 / tck
      if (n > 0) { pg = sprintf("%.1f", c * us / n); cl = sprintf("%.1f", p * us / n) }
      printf "%s\t%d\t%s\t%d\t%.3f\t%.1f\t%s\t\t%s\t%s\t%s\t%d\n", sc, r, side, n, s, n / s, pg, cl, p50, p99, e
    }' >>"$results"
  tail -n 1 "$results" | awk -F'\t' '{ printf "    %s: %s msgs/s, PG %s µs/msg, pgbench %s µs/msg, p50 %s ms, p99 %s ms\n", $3, $6, $7, $9, $10, $11 }'
}

# fusion_counts: _commits and _segments = the broker's queen_fusion_commits_total and
# queen_fusion_segments_total (0 when unreadable).
fusion_counts() {
  read -r _commits _segments < <(curl -fsS "$url/metrics/prometheus" 2>/dev/null | awk '
    $1 == "queen_fusion_commits_total" { c = $2 } $1 == "queen_fusion_segments_total" { s = $2 }
    END { printf "%d %d\n", c, s }') || true
  _commits=${_commits:-0} _segments=${_segments:-0}
}

# fusion SCENARIO ROUND [SIDE]: one queen-bench push phase, through the broker (side
# fusion) or the floor server (side floor: its CPU in the broker column, no PostgreSQL).
fusion() {
  local sc=$1 r=$2 side=${3:-fusion} out="$dir/${3:-fusion}-$1-r$2" c0 s0 target=(-url "$url" -pg-pid "$pm" -broker-pid "$pid")
  [ "$side" = floor ] && target=(-url "$floor_url" -broker-pid "$floor_pid")
  fusion_counts; c0=$_commits s0=$_segments
  if ! "${client[@]}" ./bin/queen-bench push "${target[@]}" -conns "$conns" -batch "$batch" -partitions "$partitions" \
    -payload "$payload" -queue "bench-pinned-$sc" -duration "${secs}s" >"$out.out" 2>&1; then
    tail -n 20 "$out.out" >&2
    die "queen-bench push failed: see $out.out"
  fi
  grep '^{"mode":' "$out.out" | tail -n 1 >"$out.json"
  [ -s "$out.json" ] || die "no summary line in $out.out"
  json_tsv "$out.json" rates.msgs totals.msgs seconds extra.pg_us_per_msg extra.broker_us_per_msg \
    extra.bench_us_per_msg p50_ms p99_ms totals.errors totals.notStored | awk -F'\t' -v sc="$sc" -v r="$r" -v side="$side" 'BEGIN { OFS = "\t" }
    { printf "%s\t%d\t%s\t%d\t%.3f\t%.1f\t%s\t%s\t%s\t%.2f\t%.2f\t%d\n", sc, r, side, $2, $3, $1,
      ($4 == "" ? "" : sprintf("%.1f", $4)), ($5 == "" ? "" : sprintf("%.1f", $5)), ($6 == "" ? "" : sprintf("%.1f", $6)), $7, $8, $9 + $10 }' >>"$results"
  tail -n 1 "$results" | awk -F'\t' '{ printf "    %-9s %s msgs/s, PG %s µs/msg, broker %s µs/msg, queen-bench %s µs/msg, p50 %s ms, p99 %s ms\n", $3 ":", $6, $7, $8, $9, $10, $11 }'
  [ "$side" = floor ] && return 0
  # The bundle size, for the writes scenario's WRITES_BUNDLE (the phase's whole run).
  fusion_counts
  awk -v c=$((_commits - c0)) -v s=$((_segments - s0)) 'BEGIN { if (c > 0) printf "    fusion:   %.1f segments per commit (%d commits)\n", s / c, c }'
}

# side_args SIDE: _script, _conns, _rows of a pgbench side.
side_args() {
  case $1 in
  baseline) _script=$script _conns=$conns _rows=$batch ;;
  writes) _script=$writes_script _conns=$writes_conns _rows=$writes_bundle ;;
  writes-nohash) _script=$nohash_script _conns=$writes_conns _rows=$writes_bundle ;;
  esac
}

# warm SCENARIO SIDE: the side's unmeasured warm-up.
warm() {
  local out="$dir/warmup-$2-$1.out"
  if [ "$2" = fusion ] || [ "$2" = floor ]; then
    local u=$url
    [ "$2" = floor ] && u=$floor_url
    "${client[@]}" ./bin/queen-bench push -url "$u" -conns "$conns" -batch "$batch" -partitions "$partitions" \
      -payload "$payload" -queue "bench-pinned-$1" -duration "${warmup}s" >"$out" 2>&1 && return
    tail -n 20 "$out" >&2
    die "queen-bench push failed: see $out"
  fi
  side_args "$2"
  pgbench_cmd "$warmup" "" "$_script" "$_conns"
  "${pgb[@]}" >"$out" 2>&1 && return
  tail -n 20 "$out" >&2
  die "pgbench failed: see $out"
}

# measure SCENARIO ROUND SIDE: one measured phase of the side.
measure() {
  if [ "$3" = fusion ] || [ "$3" = floor ]; then
    fusion "$1" "$2" "$3"
    return
  fi
  side_args "$3"
  pgbench_side "$1" "$2" "$3" "$_script" "$_conns" "$_rows"
}

for sc in $scenarios; do
  write_scenario "$sc"
  sides=(baseline fusion)
  [ "$sc" = writes ] && sides=(baseline writes writes-nohash)
  [ "$sc" = floor ] && sides=(fusion floor)
  echo "=== $sc: $conns connections, $batch per request/transaction; sides ${sides[*]}; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  # One checkpoint before everything, none between phases (bench/broker's settle).
  "${psql[@]}" -d postgres -c CHECKPOINT
  sleep 2
  echo "--- warm-up, unmeasured: ${warmup}s of each side"
  for side in "${sides[@]}"; do
    warm "$sc" "$side"
  done
  for r in $(seq 1 "$rounds"); do
    echo "--- $sc round $r"
    # Alternate: round r starts with side r-1 of the list and goes round it.
    for i in $(seq 0 $((${#sides[@]} - 1))); do
      measure "$sc" "$r" "${sides[$(((i + r - 1) % ${#sides[@]}))]}"
      sleep 0.5
    done
    kill -0 "$pid" 2>/dev/null || die "the broker exited: see $dir/server.log"
  done
done

# The table: every phase, each side's ratios to the baseline per round, and per scenario
# the rounds together (rates from all messages over all seconds, CPU weighted by messages).
echo
echo "Push, fusion against one-row commits: commit $commit, $([ "$pin" = 1 ] && echo "pinned: PostgreSQL on CPU $pg_cpus, broker and clients on CPU $client_cpus" || echo "unpinned"), $(nproc) cores, ${secs}s a side per round"
echo
awk -F'\t' '
  function cell(v, f) { return v == "" ? "" : sprintf(f, v) }
  function tot(a, b, c) { return (a == "" && b == "" && c == "") ? "" : sprintf("%.1f", a + b + c) }
  function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "" : sprintf("%.2fx", a / b) }
  function row(sc, r, side, rate, pg, br, cl, total, p50, p99, e) {
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sc, r, side, rate, pg, br, cl, total, p50, p99, e
  }
  function label(side) { return side == "baseline" ? "baseline (pgbench)" : side == "fusion" ? "fusion (queen-bench)" : side == "floor" ? "HTTP floor (queen-bench floor)" : side " (pgbench)" }
  NR == 1 { next }
  {
    k = $1 SUBSEP $2 SUBSEP $3
    rate[k] = $6; pg[k] = $7; br[k] = $8; cl[k] = $9; p50[k] = $10; p99[k] = $11; err[k] = $12
    if (!(($1 SUBSEP $2) in seen)) { seen[$1 SUBSEP $2] = 1; order[++n] = $1 SUBSEP $2 }
    if (!($1 in scs)) { scs[$1] = 1; scorder[++m] = $1 }
    if ($3 != "baseline" && !(($1 SUBSEP $3) in hasside)) { hasside[$1 SUBSEP $3] = 1; others[$1] = others[$1] " " $3 }
    a = $1 SUBSEP $3
    msgs[a] += $4; secs[a] += $5; errs[a] += $12
    if ($7 != "") { pgw[a] += $7 * $4; pgn[a] += $4 }
    if ($8 != "") { brw[a] += $8 * $4; brn[a] += $4 }
    if ($9 != "") { clw[a] += $9 * $4; cln[a] += $4 }
  }
  END {
    print "| scenario | round | side | msgs/s | PG µs/msg | broker µs/msg | client µs/msg | total µs/msg | p50 ms | p99 ms | errors |"
    print "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= n; i++) {
      split(order[i], f, SUBSEP); b = order[i] SUBSEP "baseline"
      if (b in rate) row(f[1], f[2], label("baseline"), cell(rate[b], "%.0f"), pg[b], br[b], cl[b], tot(pg[b], br[b], cl[b]), p50[b], p99[b], err[b])
      no = split(others[f[1]], os, " ")
      for (j = 1; j <= no; j++) {
        u = order[i] SUBSEP os[j]
        if (!(u in rate)) continue
        row(f[1], f[2], label(os[j]), cell(rate[u], "%.0f"), pg[u], br[u], cl[u], tot(pg[u], br[u], cl[u]), p50[u], p99[u], err[u])
      }
      for (j = 1; j <= no; j++) {
        u = order[i] SUBSEP os[j]
        if ((b in rate) && (u in rate))
          row(f[1], f[2], "**" os[j] "/baseline**", "**" ratio(rate[u], rate[b]) "**", ratio(pg[u], pg[b]), "", ratio(cl[u], cl[b]),
            ratio(tot(pg[u], br[u], cl[u]), tot(pg[b], br[b], cl[b])), ratio(p50[u], p50[b]), ratio(p99[u], p99[b]), "")
      }
    }
    for (i = 1; i <= m; i++) {
      sc = scorder[i]
      no = split("baseline" others[sc], os, " ")
      delete R; delete P; delete B; delete C
      for (j = 1; j <= no; j++) {
        a = sc SUBSEP os[j]
        if (!(a in secs) || secs[a] == 0) continue
        R[j] = msgs[a] / secs[a]
        P[j] = pgn[a] ? pgw[a] / pgn[a] : ""; B[j] = brn[a] ? brw[a] / brn[a] : ""; C[j] = cln[a] ? clw[a] / cln[a] : ""
        row(sc, "all", label(os[j]), sprintf("%.0f", R[j]), cell(P[j], "%.1f"),
          cell(B[j], "%.1f"), cell(C[j], "%.1f"), tot(P[j], B[j], C[j]), "", "", errs[a])
      }
      for (j = 2; j <= no; j++)
        if ((1 in R) && (j in R))
          row(sc, "all", "**" os[j] "/baseline**", "**" ratio(R[j], R[1]) "**", ratio(P[j], P[1]), "", ratio(C[j], C[1]),
            ratio(tot(P[j], B[j], C[j]), tot(P[1], B[1], C[1])), "", "", "")
    }
  }' "$results"
echo
echo "client: pgbench for the baseline and the write floor, queen-bench for fusion; total: PG + broker + client; p50/p99: per transaction (pgbench) or request (queen-bench)"

# The floor scenario: the broker's CPU per message over the floor's, per round, and the
# median of the rounds (round 2's target: at most 1.5x).
if grep -q '^floor	' "$results"; then
  echo
  echo "Broker CPU per single-message push against the HTTP floor (broker µs/msg of the fusion side over the floor side's):"
  awk -F'\t' '$1 == "floor" && $8 != "" { us[$2 SUBSEP $3] = $8; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } }
    END {
      for (i = 1; i <= n; i++) {
        r = order[i]
        if (!(((r SUBSEP "fusion") in us) && ((r SUBSEP "floor") in us))) continue
        q = us[r SUBSEP "fusion"] / us[r SUBSEP "floor"]
        printf "  round %d: broker %.1f, floor %.1f µs/msg: %.2fx\n", r, us[r SUBSEP "fusion"], us[r SUBSEP "floor"], q
        for (k = ++m; k > 1 && v[k - 1] > q; k--) v[k] = v[k - 1] # insertion sort
        v[k] = q
      }
      if (m == 0) exit
      med = m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
      printf "  median of %d rounds: %.2fx (range %.2f-%.2fx)\n", m, med, v[1], v[m]
    }' "$results"
fi
