#!/usr/bin/env bash
# Benchmarks pg_jobs on a cluster of its own and prints one Markdown table, also written to
# target/bench/latest.md. Takes a few minutes; BENCH_QUICK=1 shrinks the largest queue measured.
source "$(dirname "$0")/lib.sh"
PORT=28817
VENV="$ROOT/target/bench-venv"

# Stopped before setup.sh reinstalls pg_jobs: a running server would keep the old library, or
# crash when the file it has mapped is overwritten.
stop_cluster bench
"$ROOT/scripts/setup.sh"
log "starting the cluster on port $PORT"
# pg_jobs' background worker works in the database benchmarked, as it would in production.
start_cluster bench "$PORT" bench >/dev/null
psql_bench() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres "$@"; }
# A new database every run, so that no run inherits another's tables, bloat or statistics.
psql_bench -d postgres -c "SET client_min_messages = warning" \
    -c "DROP DATABASE IF EXISTS bench WITH (FORCE)" -c "CREATE DATABASE bench"
psql_bench -d bench -c "CREATE EXTENSION pg_jobs CASCADE"

if ! "$VENV/bin/python" -c "import psycopg" 2>/dev/null; then
    log "making the Python environment in $VENV"
    # Debian's python3 leaves venv's pip bootstrap to the package python3-venv.
    if ! python3 -c "import ensurepip" 2>/dev/null; then
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    fi
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q 'psycopg[binary]'
fi

log "benchmarking"
"$VENV/bin/python" "$ROOT/bench/bench.py"
echo "Written to $ROOT/target/bench/latest.md; the cluster keeps running until make stop."
