#!/usr/bin/env bash
# Runs the ordered pipeline (docs/benchmarks.md, "The ordered pipeline") against a broker on a fresh embedded PostgreSQL,
# prints the verifier's verdict and stops everything. Used by `make bench-pipeline`.
#   PIPELINE_SECONDS (60), PIPELINE_RATE (events/s, 500), PIPELINE_ENTITIES (100),
#   PIPELINE_PORT (16632), PIPELINE_ARGS (more queen-bench pipeline flags)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d /tmp/queen-pipeline.XXXXXX)
chmod 755 "$dir"
port=${PIPELINE_PORT:-16632}
QUEEN_DATA_DIR="$dir/data" PORT="$port" QUEEN_BIND_ADDR=127.0.0.1 LOG_LEVEL=${LOG_LEVEL:-warn} \
  ./bin/queen-server >"$dir/server.log" 2>&1 &
pid=$!
cleanup() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "run directory (logs, server.log): $dir"
}
trap cleanup EXIT
# shellcheck disable=SC2086
./bin/queen-bench pipeline -url "http://127.0.0.1:$port" -ready-timeout 120s \
  -duration "${PIPELINE_SECONDS:-60}s" -rate "${PIPELINE_RATE:-500}" -entities "${PIPELINE_ENTITIES:-100}" \
  -dir "$dir/run" ${PIPELINE_ARGS:-}
