# Functions shared by the pinned benchmarks (scripts/bench-pinned.sh, scripts/bench-latency.sh;
# bench-hotlist.sh uses stop_broker):
# sourced, never run. They start one broker on a fresh embedded PostgreSQL, pin the cluster
# and the broker to cores, and read queen-bench's JSON line.
#
# The sourcing script sets, before it sources this file:
#   name          its name, the prefix of its messages (bench-pinned, ...)
# and before it calls start_broker:
#   dir           its run directory (the cluster's data goes to $dir/data, the logs beside it)
#   port          the broker's port
#   pin           1: pin (PG_CPUS, CLIENT_CPUS); 0: nothing pinned
#   pg_cpus, client_cpus   taskset core lists of PostgreSQL and of the broker and clients
#   pg_tools      PostgreSQL client programs the script runs (psql, pgbench, ...): the
#                 running cluster's own directory replaces bindir when it holds them all
#   clients_desc  the load generators on CLIENT_CPUS, for the pinning message
# start_broker sets pid (the broker), url, pm (the postmaster), pgport, bindir and psql
# (a psql command line) and exports PGHOST, PGPORT and PGUSER.

die() {
  echo "$name: $*" >&2
  exit 2
}

# pg_bin_dir: where pglocal finds the server binaries (initdb on PATH, else the newest
# /usr/lib/postgresql/*/bin); the running postmaster's directory replaces it later.
pg_bin_dir() {
  local d
  if d=$(command -v initdb 2>/dev/null); then
    d=$(dirname "$(readlink -f "$d")")
    [ -x "$d/postgres" ] && { echo "$d"; return; }
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5 -rn); do
    [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && { echo "$d"; return; }
  done
}

# ports_free VAR PORT...: stops when a server already listens on one of the ports (VAR:
# the setting that moves them).
ports_free() {
  local var=$1 p
  shift
  for p in "$@"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      die "port $p is in use by a server this script did not start: set $var"
    fi
  done
}

# commit_label: commit = the short commit, marked when the tree has uncommitted changes.
commit_label() {
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  if [ "$commit" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then
    commit="$commit+uncommitted changes"
  fi
}

# json_tsv FILE PATH...: the fields at the dotted PATHs (rates.msgs, extra.pg_us_per_msg)
# of the JSON object in FILE, tab-separated on one line; a missing or null one is empty.
if command -v jq >/dev/null; then
  json_tsv() {
    local f=$1 filter="" p
    shift
    for p in "$@"; do
      filter="$filter${filter:+, }(.$p // \"\")"
    done
    jq -r "[$filter] | @tsv" "$f"
  }
elif command -v python3 >/dev/null; then
  json_tsv() {
    python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))
def get(path):
    v = s
    for k in path.split("."):
        if not isinstance(v, dict) or v.get(k) is None:
            return ""
        v = v[k]
    return v
print("\t".join(str(get(p)) for p in sys.argv[2:]))' "$@"
  }
else
  die "jq or python3 is needed to read queen-bench's JSON line"
fi

# start_broker: bin/queen-server on a fresh embedded PostgreSQL in $dir/data (on the
# client cores when pinned), ready once a one-message push to a queue of its own is
# stored; then the cluster moved to PG_CPUS (see the header).
start_broker() {
  client=() # prefix of the broker and the load generators
  if [ "$pin" = 1 ]; then
    client=(taskset -c "$client_cpus")
  fi
  url="http://127.0.0.1:$port"
  QUEEN_DATA_DIR="$dir/data" PORT="$port" QUEEN_BIND_ADDR=127.0.0.1 LOG_LEVEL=${LOG_LEVEL:-warn} \
    "${client[@]}" ./bin/queen-server >"$dir/server.log" 2>&1 &
  pid=$!
  # Ready: one push, to a queue of its own, once GET /health answers.
  if ! ./bin/queen-bench push -url "$url" -ready-timeout 120s -count 1 -conns 1 -queue bench-ready \
    >"$dir/ready.log" 2>&1; then
    tail -n 20 "$dir/server.log" >&2 || true
    die "the broker did not come up: see $dir/server.log and $dir/ready.log"
  fi
  local pidfile="$dir/data/pg/postmaster.pid" d t ok
  [ -r "$pidfile" ] || die "no $pidfile: is the broker on an embedded PostgreSQL? (unset QUEEN_PG_URL, PG_HOST, ...)"
  pm=$(sed -n 1p "$pidfile")
  pgport=$(sed -n 4p "$pidfile")
  [ "$(cat "/proc/$pm/comm" 2>/dev/null)" = postgres ] || die "process $pm of $pidfile is not a postgres postmaster"
  # The client programs of the running cluster's own version.
  if d=$(dirname "$(readlink -f "/proc/$pm/exe" 2>/dev/null)"); then
    ok=1
    for t in "${pg_tools[@]}"; do
      [ -x "$d/$t" ] || ok=0
    done
    [ "$ok" = 0 ] || bindir=$d
  fi
  export PGHOST=127.0.0.1 PGPORT=$pgport PGUSER=postgres
  psql=("$bindir/psql" -X -q -v ON_ERROR_STOP=1)

  if [ "$pin" = 1 ]; then
    # The postmaster started on the broker's cores: move it and every process it has forked
    # so far (all threads of each); later backends inherit the postmaster's affinity.
    taskset -a -c -p "$pg_cpus" "$pm" >/dev/null
    for c in $(pgrep -P "$pm"); do
      taskset -a -c -p "$pg_cpus" "$c" >/dev/null 2>&1 || true
    done
    {
      echo "broker $pid: $(taskset -c -p "$pid")"
      for c in "$pm" $(pgrep -P "$pm"); do
        echo "postgres $c ($(tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null | cut -c1-60)): $(taskset -c -p "$c" 2>/dev/null)"
      done
    } >"$dir/affinity.txt"
    echo "$name: pinned PostgreSQL (postmaster $pm and $(pgrep -c -P "$pm" || true) children) to CPU $pg_cpus;" \
      "broker $pid, $clients_desc to CPU $client_cpus ($dir/affinity.txt)"
  else
    echo "$name: nothing pinned (PIN=0)"
  fi
}

# stop_broker: SIGTERM, the broker stops gracefully and its embedded PostgreSQL with it
# (SIGKILL after 60 s).
stop_broker() {
  [ -n "${pid:-}" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
}
