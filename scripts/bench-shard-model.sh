#!/usr/bin/env bash
# The measured points of the shard cost model (docs/design.md, "Several PostgreSQL
# clusters"): pushes into one PostgreSQL cluster against the same load split over two
# independent clusters, each with a broker of its own (what routing by queue at the broker
# leaves each shard), with each cluster's CPU per message. Two brokers on fresh embedded
# clusters; in alternating rounds, "one" pushes CONNS connections into the first, "two"
# pushes CONNS/2 into each at once (PARTITIONS/2 partitions each). Prints a markdown table.
# Needs bin/queen-server and bin/queen-bench (make build). Nothing pinned.
#
#   ROUNDS             rounds (default 3): one then two in odd rounds, two then one in even
#   SECONDS_PER_SIDE   measured seconds of each side per round (default 10)
#   CONNS              connections in all (default 64), one message per request
#   PARTITIONS         partitions in all (default 1000)
#   SHARD_PORT         the first broker's port (default 16640; the second uses the next)
set -euo pipefail
cd "$(dirname "$0")/.."
name=bench-shard-model
# shellcheck source=scripts/lib-pinned.sh
source scripts/lib-pinned.sh

rounds=${ROUNDS:-3}
secs=${SECONDS_PER_SIDE:-10}
conns=${CONNS:-64}
parts=${PARTITIONS:-1000}
port0=${SHARD_PORT:-16640}
pin=0
pg_tools=(psql)
ports_free SHARD_PORT "$port0" "$((port0 + 1))"
[ -x bin/queen-server ] && [ -x bin/queen-bench ] || die "run make build first"
run=$(mktemp -d /tmp/queen-shard-model.XXXXXX)
bindir=$(pg_bin_dir)

pids=()
cleanup() {
  for p in "${pids[@]}"; do pid=$p stop_broker; done
  [ "${KEEP_DATA:-0}" = 1 ] || rm -rf "$run"/*/data
}
trap cleanup EXIT

urls=() pms=()
for i in 0 1; do
  dir=$run/shard$i port=$((port0 + i))
  mkdir -p "$dir"
  start_broker
  pids+=("$pid") urls+=("$url") pms+=("$pm")
done

# push URL PM CONNS PARTS QUEUE OUT: one measured push phase, its summary line in OUT.
push() {
  if ! ./bin/queen-bench push -url "$1" -pg-pid "$2" -conns "$3" -partitions "$4" -queue "$5" \
    -duration "${secs}s" -progress off >"$6.out" 2>&1; then
    tail -n 20 "$6.out" >&2
    die "queen-bench push failed: see $6.out"
  fi
  grep '^{"mode":' "$6.out" | tail -n 1 >"$6"
  [ -s "$6" ] || die "no summary line in $6.out"
}

echo "| round | side | cluster | msgs/s | PG µs/msg |"
echo "|---|---|---|---:|---:|"
for r in $(seq 1 "$rounds"); do
  sides=(one two)
  [ $((r % 2)) = 0 ] && sides=(two one)
  for side in "${sides[@]}"; do
    if [ "$side" = one ]; then
      push "${urls[0]}" "${pms[0]}" "$conns" "$parts" "m$r" "$run/r$r-one.json"
      IFS=$'\t' read -r rate us < <(json_tsv "$run/r$r-one.json" rates.msgs extra.pg_us_per_msg)
      printf '| %s | one cluster | 0 | %.0f | %.1f |\n' "$r" "$rate" "$us"
    else
      push "${urls[0]}" "${pms[0]}" "$((conns / 2))" "$((parts / 2))" "m$r" "$run/r$r-two0.json" &
      a=$!
      push "${urls[1]}" "${pms[1]}" "$((conns / 2))" "$((parts / 2))" "m$r" "$run/r$r-two1.json"
      wait "$a"
      for i in 0 1; do
        IFS=$'\t' read -r rate us < <(json_tsv "$run/r$r-two$i.json" rates.msgs extra.pg_us_per_msg)
        printf '| %s | two clusters | %s | %.0f | %.1f |\n' "$r" "$i" "$rate" "$us"
      done
    fi
  done
done
echo "logs: $run"
