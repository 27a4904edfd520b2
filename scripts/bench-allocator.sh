#!/usr/bin/env bash
# The database side of a push bundle alone: the PostgreSQL backend's CPU per segment of
# the set-based bundle function (log_push_multi_v3, what the broker calls) against its
# per-segment reference (log_push_multi_v2), in alternating rounds, one connection, one
# commit per bundle, no other load. Used by `make bench-allocator`.
#
# It starts queen-server on a fresh embedded PostgreSQL (for the schema), stops nothing of
# anyone else's, and runs everything in psql sessions of that cluster: each round replays
# the same pre-drawn bundles through one function inside one DO block (COMMIT after every
# bundle) and reads the backend's own CPU time from /proc/self/stat before and after, so
# the figure is that backend's CPU alone (no client, no other process, no wall clock).
#
#   ALLOC_ROUNDS (3), ALLOC_BUNDLES (300 per round), ALLOC_SEGMENTS (30 per bundle, one
#   message each, distinct partitions among ALLOC_PARTITIONS = 1000), ALLOC_PORT (16635)
#   ALLOC_MODE: skip (default; dedup window 0, so neither function probes: the broker's
#   usual case, where its watermark lets the probe be skipped) or probe (window 3600 s,
#   no watermark: every segment is probed against its partition's hash history)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ALLOC_ROUNDS:-3}
bundles=${ALLOC_BUNDLES:-300}
segments=${ALLOC_SEGMENTS:-30}
partitions=${ALLOC_PARTITIONS:-1000}
port=${ALLOC_PORT:-16635}
case ${ALLOC_MODE:-skip} in
  skip) window=0 ;;
  probe) window=3600 ;;
  *) echo "ALLOC_MODE must be skip or probe" >&2; exit 2 ;;
esac
dir=$(mktemp -d /tmp/queen-allocator.XXXXXX)
chmod 755 "$dir"
QUEEN_DATA_DIR="$dir/data" PORT="$port" QUEEN_BIND_ADDR=127.0.0.1 LOG_LEVEL=warn \
  ./bin/queen-server >"$dir/server.log" 2>&1 &
pid=$!
cleanup() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$dir/data"
  echo "run directory (server.log): $dir"
}
trap cleanup EXIT
./bin/queen-bench push -url "http://127.0.0.1:$port" -ready-timeout 120s -count 1 -queue alloc-ready >/dev/null
pgport=$(sed -n 4p "$dir/data/pg/postmaster.pid")
psql_=(psql -h 127.0.0.1 -p "$pgport" -U postgres -d postgres -At -v ON_ERROR_STOP=1)

# The bundles, drawn once: the same inputs for both functions in every round. Each
# partition is pushed to once before the rounds so that no round provisions partitions.
"${psql_[@]}" -q >/dev/null <<SQL
INSERT INTO queen.queues (tenant_id, name, namespace, task, dedup_window_seconds)
VALUES ('00000000-0000-0000-0000-000000000001', 'alloc', '', '', $window);
CREATE TABLE alloc_bundles AS
SELECT b.i, array_agg('alloc'::text) q, array_agg('p' || x.k) p, array_agg(1) c,
       array_agg(decode(md5(random()::text), 'hex')) h, array_agg(-1::bigint) v,
       array_agg(decode(repeat('ab', 110), 'hex')) bl
  FROM generate_series(1, $bundles) b(i),
       LATERAL (SELECT k FROM generate_series(0, $partitions - 1) k WHERE b.i > 0 ORDER BY random() LIMIT $segments) x
 GROUP BY b.i;
SELECT count(*) FROM queen.log_push_multi_v3(
  (SELECT array_agg('alloc'::text) FROM generate_series(1, $partitions)),
  (SELECT array_agg('p' || k) FROM generate_series(0, $partitions - 1) k),
  (SELECT array_agg(1) FROM generate_series(1, $partitions)),
  (SELECT array_agg(decode(md5(k::text || 'warm'), 'hex')) FROM generate_series(1, $partitions) k),
  (SELECT array_agg(-1::bigint) FROM generate_series(1, $partitions)),
  (SELECT array_agg('\x00'::bytea) FROM generate_series(1, $partitions)));
SQL

echo "| round | function | backend CPU µs/segment | wall ms/bundle |"
echo "|---|---|---:|---:|"
for r in $(seq 1 "$rounds"); do
  order="v2 v3"
  [ $((r % 2)) -eq 0 ] && order="v3 v2"
  for fn in $order; do
    # New transaction ids for every run: a replayed bundle would be a duplicate.
    "${psql_[@]}" -q -c "UPDATE alloc_bundles SET h = (SELECT array_agg(decode(md5(random()::text), 'hex'))
                                                        FROM generate_series(1, cardinality(q)))"
    "${psql_[@]}" <<SQL | grep '^|'
SELECT split_part(pg_read_file('/proc/self/stat'), ' ', 14)::bigint
     + split_part(pg_read_file('/proc/self/stat'), ' ', 15)::bigint AS c0,
       clock_timestamp() AS t0, (SELECT sum(cardinality(q)) FROM alloc_bundles) AS nseg \gset
DO \$\$ DECLARE b record; BEGIN
  FOR b IN SELECT * FROM alloc_bundles ORDER BY i LOOP
    PERFORM count(*) FROM queen.log_push_multi_$fn(b.q, b.p, b.c, b.h, b.v, b.bl);
    COMMIT;
  END LOOP;
END \$\$;
SELECT '| $r | log_push_multi_$fn | '
    || round((split_part(pg_read_file('/proc/self/stat'), ' ', 14)::bigint
            + split_part(pg_read_file('/proc/self/stat'), ' ', 15)::bigint - :c0)
             * 1e6 / $(getconf CLK_TCK) / :nseg, 1)
    || ' | ' || round(extract(epoch FROM clock_timestamp() - :'t0') * 1000 / $bundles, 2) || ' |';
SQL
  done
done
