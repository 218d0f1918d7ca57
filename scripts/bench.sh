#!/usr/bin/env bash
# Benchmarks pg_jobs beside its peers (hand-written SKIP LOCKED SQL, pgmq, graphile-worker, pg-boss,
# procrastinate) on a cluster of its own and prints one Markdown table, also written to
# target/bench/latest.md, and a graph of 10,000 jobs that wait for jobs beside as many independent
# ones, with jobs_wait's latency (target/bench/graph.md), and a long transaction beside a steady queue
# (target/bench/long_transaction.md, about 10 minutes), and 2 worker agents draining batch jobs
# (target/bench/batch_agents.md);
# then the background worker beside pg_cron (target/bench/scheduler.md)
# and row-level security against the table owner (target/bench/access.md), and the SCHED page's
# reads with a million batch jobs and 1,000 routines, and the Queues and Schedules tabs' with a
# million queued jobs and a million finished (target/bench/sched.md), and the compute
# scheduler's drain beside the queue's (target/bench/compute.md), and what each transition costs
# per job, WAL, dead tuples and instructions, beside the hand-written queue and pgmq
# (target/bench/costs.md). About 40 minutes on 2 cores; BENCH_QUICK=1 shortens the queue part.
# The peers are installed here, under target/, and nowhere else: the Node packages into
# target/bench-peers/node, procrastinate into the Python environment target/bench-venv; pgmq
# is its release's SQL file, ../shared/peers/pgmq-1.5.1/pgmq.sql beside the checkout (PGMQ_SQL
# names another), loaded by bench.py; without it pgmq's rows are left out, with a message.
#
# BENCH_PORT moves the queue's cluster off port 28817 (and COSTS_PORT the costs' off 28870).
# BENCH_ONLY runs some of the parts, space-separated, of: queue (bench.py, whose systems and
# parts BENCH_SYSTEMS and BENCH_PARTS choose; see its --help), scheduler, access, sched, compute,
# costs. For instance BENCH_ONLY="queue costs" BENCH_SYSTEMS=pg_jobs,sql,pgmq
# BENCH_PARTS=enqueue,drain.
source "$(dirname "$0")/lib.sh"
PORT=${BENCH_PORT:-28817}
export BENCH_PORT=$PORT SCHED_PG_PORT=$PORT
ONLY=${BENCH_ONLY:-queue scheduler access sched compute costs}
wanted() { [[ " $ONLY " == *" $1 "* ]]; }
VENV="$ROOT/target/bench-venv"
NODE_PEERS="$ROOT/target/bench-peers/node"
# Versions that run on Node 20 (graphile-worker 0.17 and pg-boss 11 want Node 22).
NODE_PACKAGES=(graphile-worker@0.16.6 pg-boss@10.4.2)
PROCRASTINATE='procrastinate>=3,<4'

# Stopped before setup.sh reinstalls pg_jobs: a running server would keep the old library, or
# crash when the file it has mapped is overwritten.
stop_cluster bench
"$ROOT/scripts/setup.sh"
log "starting the cluster on port $PORT"
# pg_jobs' background worker works in the database benchmarked, as it would in production.
start_cluster bench "$PORT" bench >/dev/null
psql_bench() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres "$@"; }
# New databases every run, so that no run inherits another's tables, bloat or statistics: pg_jobs
# in `bench` (where its background worker works), each peer in a database of its own.
for db in bench bench_sql bench_pgmq bench_graphile bench_pgboss bench_procrastinate; do
    psql_bench -d postgres -c "SET client_min_messages = warning" \
        -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
done
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
if wanted queue && ! "$VENV/bin/python" -c "import procrastinate, sys; sys.exit(procrastinate.__version__.split('.')[0] != '3')" 2>/dev/null; then
    log "installing procrastinate 3 into $VENV"
    "$VENV/bin/pip" install -q "$PROCRASTINATE"
fi

if wanted queue && { ! command -v node >/dev/null || ! command -v npm >/dev/null; }; then
    log "installing Node.js and npm (Debian packages)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
if ! command -v valgrind >/dev/null; then
    log "installing valgrind (Debian package; bench/access.py and bench/costs.py count instructions with it)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null
fi
if wanted queue; then
    if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
        echo "pg-boss 10 needs Node 20 or later; this is Node $(node --version)" >&2
        exit 1
    fi
    node_installed() {  # PACKAGE@VERSION
        local package=${1%@*} version=${1##*@}
        [ "$(node -p "require('$NODE_PEERS/node_modules/$package/package.json').version" 2>/dev/null)" = "$version" ]
    }
    for package in "${NODE_PACKAGES[@]}"; do
        if ! node_installed "$package"; then
            log "installing ${NODE_PACKAGES[*]} into $NODE_PEERS"
            mkdir -p "$NODE_PEERS"
            npm install --prefix "$NODE_PEERS" --no-audit --no-fund --loglevel=error "${NODE_PACKAGES[@]}" >/dev/null
            break
        fi
    done

    log "building the worker agent (bench.py's batch-agents section runs it)"
    cargo build --release -q -p pg_jobs_agent
    log "benchmarking the queue"
    "$VENV/bin/python" "$ROOT/bench/bench.py"
fi
# The background worker beside pg_cron, row-level security against the table owner, and the
# costs per job: each on a cluster of its own (ports 28850, 28860 and 28870), stopped when done.
if wanted scheduler; then
    log "benchmarking the background worker"
    "$VENV/bin/python" "$ROOT/bench/scheduler.py"
fi
if wanted access; then
    log "benchmarking row-level security"
    "$VENV/bin/python" "$ROOT/bench/access.py"
fi
if wanted sched; then
    log "benchmarking the SCHED page's reads"
    cargo build --release -q -p pg_jobs_web
    "$VENV/bin/python" "$ROOT/bench/sched.py"
fi
# The compute scheduler's drain beside the queue's, in `bench` (where the background worker folds
# the results): a job of a million slices, tasks of 1, 10 and 100, 30 s at most each.
if wanted compute; then
    log "benchmarking the compute scheduler's drain"
    cargo build --release -q -p pg_jobs_compute_sim
    "$ROOT/target/release/pg_jobs_compute_sim" bench --dsn "host=localhost port=$PORT user=postgres dbname=bench"
fi
if wanted costs; then
    log "counting what each transition costs per job"
    "$VENV/bin/python" "$ROOT/bench/costs.py"
fi
echo "Written to $ROOT/target/bench/; the cluster keeps running until make stop."
