#!/usr/bin/env bash
# Sets everything up, starts a local cluster with pg_jobs preloaded, and runs the demo.
source "$(dirname "$0")/lib.sh"
PORT=28815

# Stopped first: installing a new build under a running server that preloads it can crash it.
stop_cluster run
"$ROOT/scripts/setup.sh"
log "starting the cluster on port $PORT"
dir=$(start_cluster run "$PORT")
psql_run() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres "$@"; }
if ! psql_run -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'pg_jobs'" | grep -q 1; then
    psql_run -d postgres -c "CREATE DATABASE pg_jobs"
fi
psql_run -d pg_jobs -c "SET client_min_messages = warning" -c "DROP EXTENSION IF EXISTS pg_jobs CASCADE" -c "CREATE EXTENSION pg_jobs CASCADE"

# The launcher makes the months of job_history at its first round; the demo shows one of them.
for _ in $(seq 150); do
    psql_run -d pg_jobs -tAc "SELECT count(*) > 1 FROM pgjobs.jobs_history_months()" | grep -qx t && break
    sleep 0.1
done

log "demo"
psql_run -d pg_jobs -f "$ROOT/scripts/demo.sql"

cat <<TXT

pg_jobs is running: data in $dir/data, log in $dir/server.log.
  connect:  psql -h localhost -p $PORT -U postgres pg_jobs
  try:      SELECT pgjobs.jobs_add('hello', '{"to": "world"}');
            SELECT * FROM pgjobs.jobs_claim('me');
  stop:     make stop
TXT
