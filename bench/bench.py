"""pg_jobs beside its peers, in one run on one cluster, as one Markdown table; run by
scripts/bench.sh.

Expects the cluster that scripts/bench.sh starts (port 28817, or BENCH_PORT) with fresh databases:
`bench` with pg_jobs created in it, and empty `bench_sql`, `bench_graphile`, `bench_pgboss`,
`bench_procrastinate` and `bench_pgmq` for the peers, whose packages bench.sh has installed under
target/ (graphile-worker and pg-boss from npm in target/bench-peers/node, procrastinate in the venv
that runs this script); pgmq is its release's SQL file (PGMQ_SQL, by default
../shared/peers/pgmq-1.5.1/pgmq.sql beside the checkout), loaded here. Prints the table and writes
it to target/bench/latest.md.

The systems:
- pg_jobs, driven by pgbench (bench/*.sql) as a worker written in SQL would drive it.
- hand-written SQL: a plain table and one `... FOR UPDATE SKIP LOCKED` claim-and-delete
  statement, driven by pgbench at the same batch sizes: the floor any queue in Postgres sits on.
- graphile-worker, pg-boss and procrastinate, each by its own worker with a no-op handler
  (bench/peers/): graphile-worker's `run`, pg-boss's `work()`, procrastinate's `run_worker_async`.
- pgmq 1.5.1, driven by pgbench through its functions (bench/pgmq_*.sql): `send`, `send_batch`,
  `read` with a visibility timeout, then `delete` or `archive`. Its rows are left out, with a
  message, when its SQL file is not there.

`--systems pg_jobs,sql,pgmq` (or BENCH_SYSTEMS) measures only those systems, and `--parts
enqueue,drain` (or BENCH_PARTS; also pickup, claim-latency, graph, long-transaction, batch-agents)
only those parts of the run, in the same table; pg_jobs is always measured.

The graph part (pg_jobs alone, see graph): a graph of 10,000 jobs that wait for jobs (fan-out 100)
drained by 8 workers against 10,000 independent jobs, and jobs_wait's latency from the commit of
a completion, written to target/bench/graph.md.

Then the long-transaction scenario (see long_transaction), written to
target/bench/long_transaction.md; then 2 worker agents draining batch jobs (see batch_agents), written to
target/bench/batch_agents.md. `--only long-transaction` runs it alone, `--only batch-agents` the agents
alone, `--only pickup` the
pickup latency of pg_jobs and hand-written SQL alone, and `--long-transaction 30,90,30` shortens
its phases.

BENCH_QUICK=1 shortens every measurement, drains 4,000 jobs instead of 8,000, measures the
claim with 100,000 jobs queued instead of 1,000,000, tries fewer graphile-worker
configurations, and holds the long transaction's snapshot for 90 s (30 s before and after)
instead of 180 s (60 s before and after).
"""

import datetime
import importlib.metadata
import json
import os
import queue
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
OUTPUT = ROOT / "target" / "bench" / "latest.md"
NODE_MODULES = ROOT / "target" / "bench-peers" / "node" / "node_modules"
# PG_BIN and BENCH_PORT let a run use another PostgreSQL installation and cluster (a relocated
# copy, a port of one's own); scripts/bench.sh uses the defaults.
PGBENCH = str(Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")) / "pgbench")
PORT = int(os.environ.get("BENCH_PORT", "28817"))
# pgmq has no package in any registry reachable here: its release's SQL file is kept beside the
# checkout (../shared/peers, with its licence), and loaded into its database by setup_peers.
PGMQ_SQL = Path(os.environ.get("PGMQ_SQL", ROOT.parent / "shared" / "peers" / "pgmq-1.5.1" / "pgmq.sql"))

QUICK = os.environ.get("BENCH_QUICK") == "1"
CLIENTS = 8
THREADS = 2
SECONDS = 5 if QUICK else 10
FILL_CHUNK = 10_000
FILL_CONNECTIONS = 2

# Every system drains the same backlog of no-op jobs. pgbench clients each run exactly
# DRAIN_JOBS / (CLIENTS × batch) claims, so the figures differ in nothing but the claim size;
# pgbench drains repeat (refilled) until DRAIN_SECONDS were timed or DRAIN_ROUNDS were run.
# A peer's worker drains it once per configuration.
DRAIN_JOBS = 4_000 if QUICK else 8_000
DRAIN_BATCHES = (1, 10, 100)
DRAIN_SECONDS = 4 if QUICK else 10
DRAIN_ROUNDS = 2 if QUICK else 5
# How often the table is looked at, at the start and the end of a peer's drain: when the first
# job is gone the clock starts, when the last is, it stops (in between, at most 10 times a second).
DRAIN_POLL = 0.01
DRAIN_TIMEOUT = 120

# pgbench's enqueues run ENQUEUE_ROUNDS times per system, each from a fresh backlog, the systems
# taking turns (their order reversed every other round), and the median is reported: a slow
# spell of this machine then falls on every system rather than on one (pgmq's batch add moved
# from 132,000 to 92,000 jobs/s between two runs of one day).
ENQUEUE_ROUNDS = 1 if QUICK else 3

# graphile-worker has no batch: its best configuration of processes × concurrency is reported.
GRAPHILE_CONFIGS = ((1, 8), (2, 4)) if QUICK else ((1, 8), (1, 16), (2, 4), (2, 8))
# pg-boss's work() fetches, runs the handler, then sleeps out the rest of its polling interval
# even when it found jobs, so 8 workers take at most 8 × batch jobs per interval: draining
# 8,000 jobs at batch 1 would take minutes. Its rate is measured over a window instead, at its
# smallest polling interval (the default is 2 s).
PGBOSS_POLLING_SECONDS = 0.5
PGBOSS_WINDOW = 4 if QUICK else 8

PICKUP_JOBS = 100 if QUICK else 300
PGBOSS_PICKUP_JOBS = 20 if QUICK else 40  # half a polling interval each, on average

# A claim that sorts the whole queue (as pg_jobs' first one did) takes most of a second with a
# million jobs queued; the time limit keeps such a run within minutes, and the table says how
# many claims were timed.
CLAIM_ITERATIONS = 2000
CLAIM_SECONDS = 60
QUEUE_SIZES = (10_000, 100_000 if QUICK else 1_000_000)
# autovacuum_naptime is a minute; a visit can take a while to start on a busy machine.
AUTOVACUUM_WAIT = 300

CLAIM_ONE = "SELECT * FROM pgjobs.jobs_claim('b', ARRAY['default'], 1)"

SYSTEMS = ("pg_jobs", "sql", "pgmq", "graphile", "pgboss", "procrastinate")
NAMES = {"pg_jobs": "pg_jobs", "sql": "hand-written SQL", "pgmq": "pgmq", "graphile": "graphile-worker",
         "pgboss": "pg-boss", "procrastinate": "procrastinate"}
DATABASES = {"pg_jobs": "bench", "sql": "bench_sql", "pgmq": "bench_pgmq", "graphile": "bench_graphile",
             "pgboss": "bench_pgboss", "procrastinate": "bench_procrastinate"}
# The job systems pg_jobs is compared with in the last column (hand-written SQL is the floor
# they all stand on, not an alternative with retries, leases and schedules).
PEERS = ("pgmq", "graphile", "pgboss", "procrastinate")
PARTS = ("enqueue", "drain", "pickup", "claim-latency", "graph", "long-transaction", "batch-agents")


def log(message):
    print(f"==> {message}", file=sys.stderr, flush=True)


def conninfo(system="pg_jobs"):
    return f"host=localhost port={PORT} user=postgres dbname={DATABASES[system]}"


def connect(system="pg_jobs"):
    return psycopg.connect(conninfo(system), autocommit=True)


def execute(statement, system="pg_jobs"):
    with connect(system) as conn:
        conn.execute(statement)


def query(statement, system="pg_jobs", params=None):
    with connect(system) as conn:
        return conn.execute(statement, params).fetchall()


def settle(system="pg_jobs"):
    """Starts a measurement from the same state: no garbage, fresh statistics, and no
    checkpoint's flush left over from the load that came before it."""
    with connect(system) as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")


def noop_jobs(count):
    return json.dumps([{"task": "noop"}] * count)


def payload_jobs(count):
    """Jobs carrying what an e-mail job would (130 bytes of JSON), as real batches do."""
    payload = {"user_id": 12345, "email": "someone@example.com", "template": "welcome",
               "locale": "en-GB", "vars": {"name": "Ann", "plan": "pro"}}
    return json.dumps([{"task": "send_email", "payload": payload}] * count)


def percentile(samples, fraction):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# --- pgbench -------------------------------------------------------------------------------

@dataclass
class PgbenchRun:
    tps: float           # transactions per second, without the initial connection time
    transactions: int
    connecting: float    # seconds its clients took to connect, before the run began

    @property
    def seconds(self):
        return self.transactions / self.tps


def pgbench(script, *, system="pg_jobs", seconds=None, transactions=None, defines=()):
    """Runs a script from bench/ with CLIENTS clients, for `seconds` or for `transactions` per
    client."""
    length = ["-T", str(seconds)] if seconds else ["-t", str(transactions)]
    args = [PGBENCH, "-n", "-M", "prepared", "-c", str(CLIENTS), "-j", str(THREADS), *length,
            "-f", str(BENCH_DIR / script)]
    for name, value in defines:
        args += ["-D", f"{name}={value}"]
    args += ["-h", "localhost", "-p", str(PORT), "-U", "postgres", DATABASES[system]]
    run = subprocess.run(args, capture_output=True, text=True)
    failed = re.search(r"number of failed transactions: (\d+)", run.stdout)
    if run.returncode != 0 or not failed or failed.group(1) != "0":
        raise RuntimeError(f"pgbench {script} failed (exit {run.returncode}):\n{run.stdout}{run.stderr}")
    return PgbenchRun(
        float(re.search(r"tps = ([\d.]+) \(without initial connection time\)", run.stdout).group(1)),
        int(re.search(r"number of transactions actually processed: (\d+)", run.stdout).group(1)),
        float(re.search(r"initial connection time = ([\d.]+) ms", run.stdout).group(1)) / 1000)


# --- the peers' drivers (bench/peers/) ------------------------------------------------------

def driver_command(system, command, options):
    if system == "procrastinate":
        return [sys.executable, str(BENCH_DIR / "peers" / "procrastinate_driver.py"), command,
                json.dumps({"conninfo": conninfo(system), **options})]
    script = {"graphile": "graphile.js", "pgboss": "pgboss.js"}[system]
    return ["node", str(BENCH_DIR / "peers" / script), command,
            json.dumps({"connectionString": f"postgres://postgres@localhost:{PORT}/{DATABASES[system]}",
                        **options})]


def driver_env():
    return {**os.environ, "NODE_PATH": str(NODE_MODULES)}


def driver(system, command, **options):
    """Runs one command of a peer's driver to its end; returns the JSON it prints."""
    run = subprocess.run(driver_command(system, command, options), capture_output=True, text=True,
                         env=driver_env(), stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        raise RuntimeError(f"{NAMES[system]} {command} failed (exit {run.returncode}):\n{run.stderr}")
    return json.loads(run.stdout.strip().splitlines()[-1])


class Workers:
    """Peer worker processes that run until their stdin is closed."""

    def __init__(self, system, command, count=1, **options):
        self.system = system
        self.errors = [tempfile.TemporaryFile("w+") for _ in range(count)]
        self.processes = [
            subprocess.Popen(driver_command(system, command, options), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=errors, text=True, env=driver_env())
            for errors in self.errors]

    def check_alive(self):
        for process, errors in zip(self.processes, self.errors):
            if process.poll() is not None:
                errors.seek(0)
                raise RuntimeError(f"a {NAMES[self.system]} worker exited ({process.returncode}):\n{errors.read()}")

    def stop(self):
        """Closes every worker's stdin, waits for it, and returns what each printed."""
        for process in self.processes:
            process.stdin.close()
        results = []
        for process, errors in zip(self.processes, self.errors):
            out = process.stdout.read()
            process.wait(timeout=60)
            errors.seek(0)
            if process.returncode != 0:
                raise RuntimeError(f"a {NAMES[self.system]} worker failed ({process.returncode}):\n{errors.read()}")
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results


# --- the systems ----------------------------------------------------------------------------

def pgboss_partition():
    [(partition,)] = query("SELECT partition_name FROM pgboss.queue WHERE name = 'noop'", "pgboss")
    return partition


class System:
    """What the benchmark does with one system: the queue tables, how to empty and fill them,
    and how many jobs are still to do."""
    key = ""

    def queue_tables(self):
        raise NotImplementedError

    def reset(self):
        raise NotImplementedError

    def fill(self, count):
        raise NotImplementedError

    def left_sql(self):
        """Jobs not yet done."""
        raise NotImplementedError

    def count_sql(self):
        """Every job in the queue tables, done or not: for a system that deletes finished jobs,
        the jobs not yet done."""
        return self.left_sql()

    def count(self):
        return query(self.count_sql(), self.key)[0][0]


class PgJobs(System):
    key = "pg_jobs"
    # Whether the queue keeps its completed jobs in job_history (jobs_queue_history).
    keeps_history = True

    def queue_tables(self):
        return [("pgjobs", "jobs")]

    def count_sql(self):
        return "SELECT (SELECT count(*) FROM pgjobs.jobs) + (SELECT count(*) FROM pgjobs.job_history)"

    def reset(self):
        execute("TRUNCATE pgjobs.jobs, pgjobs.job_keys, pgjobs.job_history")

    def fill(self, count):
        """Adds `count` no-op jobs, in chunks of FILL_CHUNK from FILL_CONNECTIONS connections."""
        chunks = queue.SimpleQueue()
        for start in range(0, count, FILL_CHUNK):
            chunks.put(min(FILL_CHUNK, count - start))

        def add_chunks():
            with connect() as conn:
                while True:
                    try:
                        size = chunks.get_nowait()
                    except queue.Empty:
                        return
                    conn.execute("SELECT count(*) FROM pgjobs.jobs_add_batch(%s::jsonb)", [noop_jobs(size)])

        with ThreadPoolExecutor(FILL_CONNECTIONS) as pool:
            for adder in [pool.submit(add_chunks) for _ in range(FILL_CONNECTIONS)]:
                adder.result()

    def check_drained(self, what):
        [(completed, finished_otherwise, jobs_left)] = query("""
            SELECT (SELECT count(*) FROM pgjobs.job_history WHERE status = 'completed'),
                   (SELECT count(*) FROM pgjobs.job_history WHERE status <> 'completed'),
                   (SELECT count(*) FROM pgjobs.jobs)""")
        if (completed, finished_otherwise, jobs_left) != (DRAIN_JOBS if self.keeps_history else 0, 0, 0):
            raise RuntimeError(
                f"pg_jobs: {what} did not complete every job: of {DRAIN_JOBS}, {completed} "
                f"completed, {finished_otherwise} finished otherwise, {jobs_left} jobs left")


class HandWritten(System):
    key = "sql"

    def queue_tables(self):
        return [("public", "q")]

    def reset(self):
        execute("TRUNCATE q", "sql")

    def fill(self, count):
        execute(f"INSERT INTO q (payload) SELECT '{{\"task\": \"noop\"}}' FROM generate_series(1, {count})", "sql")

    def left_sql(self):
        return "SELECT count(*) FROM q"


class Graphile(System):
    key = "graphile"

    def queue_tables(self):
        return [("graphile_worker", "_private_jobs")]

    def reset(self):
        execute("TRUNCATE graphile_worker._private_jobs, graphile_worker._private_job_queues", "graphile")

    def fill(self, count):
        execute(f"""SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
                        SELECT ROW('noop', '{{}}', NULL, NULL, NULL, NULL, NULL, NULL)::graphile_worker.job_spec
                        FROM generate_series(1, {count})))""", "graphile")

    def left_sql(self):
        # A finished job is deleted; one that failed stays, and counts as not done.
        return "SELECT count(*) FROM graphile_worker._private_jobs"


class PgBoss(System):
    key = "pgboss"

    def queue_tables(self):
        return [("pgboss", pgboss_partition())]

    def reset(self):
        execute("TRUNCATE pgboss.job, pgboss.archive", "pgboss")

    def fill(self, count):
        driver("pgboss", "fill", jobs=count)

    def left_sql(self):
        return "SELECT count(*) FROM pgboss.job WHERE name = 'noop' AND state <> 'completed'"

    def count_sql(self):
        return "SELECT count(*) FROM pgboss.job WHERE name = 'noop'"


class Procrastinate(System):
    key = "procrastinate"

    def queue_tables(self):
        return [("public", "procrastinate_jobs")]

    def reset(self):
        execute("TRUNCATE procrastinate_jobs, procrastinate_events, procrastinate_periodic_defers, "
                "procrastinate_workers", "procrastinate")

    def fill(self, count):
        driver("procrastinate", "fill", jobs=count)

    def left_sql(self):
        return "SELECT count(*) FROM procrastinate_jobs WHERE status <> 'succeeded'"

    def count_sql(self):
        return "SELECT count(*) FROM procrastinate_jobs"


class Pgmq(System):
    key = "pgmq"

    def queue_tables(self):
        return [("pgmq", "q_noop"), ("pgmq", "a_noop")]

    def reset(self):
        execute("TRUNCATE pgmq.q_noop, pgmq.a_noop", "pgmq")

    def fill(self, count):
        execute(f"""SELECT count(*) FROM pgmq.send_batch('noop', ARRAY(
                        SELECT '{{"task": "noop"}}'::jsonb FROM generate_series(1, {count})))""", "pgmq")

    def left_sql(self):
        # A deleted message is gone; an archived one is in a_noop, done.
        return "SELECT count(*) FROM pgmq.q_noop"


PG_JOBS, SQL, PGMQ, GRAPHILE, PGBOSS, PROCRASTINATE = (
    PgJobs(), HandWritten(), Pgmq(), Graphile(), PgBoss(), Procrastinate())


def pgmq_missing():
    """Why pgmq cannot be measured, or None."""
    if PGMQ_SQL.is_file():
        return None
    return (f"pgmq left out: its SQL file {PGMQ_SQL} is not there (it is kept in ../shared/peers beside "
            "the checkout; PGMQ_SQL names another place)")


def setup_peers(systems):
    """The peers' schemas, in their own databases: the hand-written table, pgmq's SQL install and
    its queue `noop`, and what graphile-worker, pg-boss and procrastinate make themselves."""
    log("making the peers' schemas")
    if "sql" in systems:
        execute("CREATE TABLE q (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload jsonb NOT NULL)", "sql")
    if "pgmq" in systems:
        with connect("pgmq") as conn:
            conn.execute("SET client_min_messages = warning")
            conn.execute(PGMQ_SQL.read_text())
            conn.execute("SELECT pgmq.create('noop')")
    for system, command in (("graphile", "migrate"), ("pgboss", "setup"), ("procrastinate", "setup")):
        if system in systems:
            driver(system, command)


# --- dead tuples ----------------------------------------------------------------------------

class AutovacuumOff:
    """Autovacuum off on a system's queue tables for the length of a drain, so that the dead
    tuples it leaves can be counted before autovacuum removes them (its naptime is a minute,
    and a drain of 8,000 jobs passes its threshold)."""

    def __init__(self, system):
        self.system = system
        self.tables = ", ".join(f"{schema}.{table}" for schema, table in SYSTEM_OBJECTS[system].queue_tables())

    def alter(self, change):
        with connect(self.system) as conn:
            for table in self.tables.split(", "):
                conn.execute(f"ALTER TABLE {table} {change}")

    def __enter__(self):
        self.alter("SET (autovacuum_enabled = false)")

    def __exit__(self, *_):
        self.alter("RESET (autovacuum_enabled)")


@dataclass
class Aftermath:
    dead: dict           # queue table → n_dead_tup
    vacuumed: bool       # whether autovacuum ran on them during the drain all the same
    wal_per_job: float   # bytes of WAL the cluster wrote during the drain, per job done


def before_drain(system):
    """What dead_tuples compares with: autovacuum counts and the WAL position."""
    with connect(system) as conn:
        counts = {(schema, table): count for schema, table, count in conn.execute(
            "SELECT schemaname, relname, autovacuum_count FROM pg_stat_user_tables").fetchall()}
        [(lsn,)] = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchall()
    return counts, lsn


def dead_tuples(system, before, jobs):
    """n_dead_tup of the system's queue tables, once every client of its database is gone (a
    backend reports its counts when it exits), whether autovacuum ran on them since `before`
    (what before_drain returned), and the WAL written since then per job of `jobs`."""
    before, lsn = before
    deadline = time.monotonic() + 10
    while query("""SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
                   AND backend_type = 'client backend' AND pid <> pg_backend_pid()""", system)[0][0]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{NAMES[system]}: clients still connected 10 s after the drain")
        time.sleep(0.05)
    # A backend leaves pg_stat_activity just before it flushes its statistics.
    time.sleep(0.5)
    tables = SYSTEM_OBJECTS[system].queue_tables()
    rows = {(schema, table): (dead, autovacuums) for schema, table, dead, autovacuums in query(
        "SELECT schemaname, relname, n_dead_tup, autovacuum_count FROM pg_stat_user_tables", system)}
    dead = {table: rows[(schema, table)][0] for schema, table in tables}
    vacuumed = any(rows[key][1] != before.get(key, 0) for key in tables)
    [(wal,)] = query("SELECT pg_current_wal_insert_lsn() - %s::pg_lsn", system, [lsn])
    return Aftermath(dead, vacuumed, float(wal) / max(jobs, 1))


# --- measurements ---------------------------------------------------------------------------

@dataclass
class Figure:
    value: float
    note: str = ""       # shown after the value, in the cell


@dataclass
class Row:
    figure: str
    unit: str
    better: str          # "higher", "lower", or "" for no ratio
    values: dict = field(default_factory=dict)   # system → Figure
    digits: int = 0


def reference_commit_rate():
    log(f"reference: one-row UPDATE, {CLIENTS} clients, {SECONDS} s")
    execute("CREATE TABLE ref (id integer PRIMARY KEY, n bigint NOT NULL DEFAULT 0)")
    execute("INSERT INTO ref (id) SELECT generate_series(1, 10000)")
    settle()
    return pgbench("reference.sql", seconds=SECONDS).tps


def enqueue_backlog(system, fresh):
    """Enqueues are measured on a queue that holds a backlog of DRAIN_JOBS jobs, vacuumed and
    analyzed: the steady state of a busy queue, not an empty one. (A session that first plans a
    foreign-key check while the referenced table is empty and vacuumed, 0 pages, keeps a
    sequential scan for it until the next ANALYZE: procrastinate's procrastinate_events →
    procrastinate_jobs key would then scan the whole queue for every job added.)"""
    if fresh:
        SYSTEM_OBJECTS[system].reset()
        SYSTEM_OBJECTS[system].fill(DRAIN_JOBS)
    settle(system)


def check_added(system, before, added):
    """The jobs counted as added are in the queue tables, no more and no fewer."""
    after = SYSTEM_OBJECTS[system].count()
    if after - before != added:
        raise RuntimeError(f"{NAMES[system]}: {added} jobs counted as added, but the queue grew by {after - before}")


def enqueue_rates(systems):
    """Jobs added per second by CLIENTS clients: one per transaction, 100 per transaction, and 100
    per transaction each with a payload (pg_jobs, the hand-written queue and pgmq)."""
    single, batched, with_payload = {}, {}, {}
    as_jobs = lambda jobs: [("jobs", jobs)]
    pgbench_systems = [
        ("pg_jobs", "enqueue_single.sql", "enqueue_batch.sql", as_jobs),
        ("sql", "sql_enqueue_single.sql", "sql_enqueue_batch.sql", as_jobs),
        ("pgmq", "pgmq_enqueue_single.sql", "pgmq_enqueue_batch.sql",
         lambda jobs: [("msgs", query("SELECT array_agg(e)::text FROM jsonb_array_elements(%s::jsonb) e",
                                      "pgmq", [jobs])[0][0])]),
        ("graphile", "graphile_enqueue_single.sql", "graphile_enqueue_batch.sql",
         lambda _: [("specs", query("""SELECT array_agg(ROW('noop', '{}', NULL, NULL, NULL, NULL, NULL, NULL)
                                                       ::graphile_worker.job_spec)::text
                                     FROM generate_series(1, 100)""", "graphile")[0][0])])]
    chosen = [entry for entry in pgbench_systems if entry[0] in systems]
    kinds = [(single, 1, None, ""), (batched, 100, noop_jobs(100), ""),
             (with_payload, 100, payload_jobs(100), " with a payload")]
    for results, per_transaction, jobs, what in kinds:
        runs = [(system, script_single if jobs is None else script_batch,
                 [] if jobs is None else batch_defines(jobs))
                for system, script_single, script_batch, batch_defines in chosen
                if not (system == "graphile" and what)]
        rates = {system: [] for system, _, _ in runs}
        for round_ in range(ENQUEUE_ROUNDS):
            for system, script, extra in runs if round_ % 2 == 0 else runs[::-1]:
                log(f"enqueue: {NAMES[system]}, {per_transaction} per transaction{what}, {CLIENTS} clients, "
                    f"{SECONDS} s (round {round_ + 1} of {ENQUEUE_ROUNDS})")
                enqueue_backlog(system, fresh=True)
                before = SYSTEM_OBJECTS[system].count()
                run = pgbench(script, system=system, seconds=SECONDS, defines=extra)
                check_added(system, before, per_transaction * run.transactions)
                rates[system].append(per_transaction * run.tps)
        for system, measured in rates.items():
            results[system] = Figure(statistics.median(measured),
                                     f"median of {len(measured)}: {min(measured):,.0f}–{max(measured):,.0f}"
                                     if len(measured) > 1 else "")
    for system in ("pgboss", "procrastinate"):
        if system not in systems:
            continue
        for results, batch in ((single, 1), (batched, 100)):
            log(f"enqueue: {NAMES[system]}, {batch} per call, {CLIENTS} concurrent callers, {SECONDS} s")
            enqueue_backlog(system, fresh=batch == 1)
            before = SYSTEM_OBJECTS[system].count()
            added = driver(system, "enqueue", clients=CLIENTS, seconds=SECONDS, batch=batch)
            check_added(system, before, added["jobs"])
            results[system] = Figure(added["jobs"] / added["seconds"])
    return single, batched, with_payload


@dataclass
class Drain:
    """A pgbench drain of DRAIN_JOBS jobs, run in rounds (each refilled) until DRAIN_SECONDS were
    timed or DRAIN_ROUNDS were run; `history` is the rule of pg_jobs' queue during its rounds."""
    what: str
    system: str
    script: str
    batch: int
    transactions: int
    defines: list
    history: str = None
    seconds: float = 0.0
    rounds: int = 0
    dead: object = None      # the dead tuples (and WAL) after the first round

    def wants_more(self):
        return self.rounds < DRAIN_ROUNDS and (self.rounds == 0 or self.seconds < DRAIN_SECONDS)

    def rate(self):
        return DRAIN_JOBS * self.rounds / self.seconds

    def round(self):
        target = SYSTEM_OBJECTS[self.system]
        if self.history is not None:
            execute(f"SELECT pgjobs.jobs_queue_history('default', '{self.history}')")
            PG_JOBS.keeps_history = self.history == "all"
        target.reset()
        target.fill(DRAIN_JOBS)
        settle(self.system)
        with AutovacuumOff(self.system):
            before = before_drain(self.system)
            run = pgbench(self.script, system=self.system, transactions=self.transactions, defines=self.defines)
            if self.dead is None:
                self.dead = dead_tuples(self.system, before, DRAIN_JOBS)
        self.seconds += run.seconds
        self.rounds += 1
        if self.system == "pg_jobs":
            PG_JOBS.check_drained(f"{self.script} at batch {self.batch}")
        else:
            [(left,)] = query(target.left_sql(), self.system)
            if left:
                raise RuntimeError(f"{NAMES[self.system]}: {self.script} at batch {self.batch} left {left} of "
                                   f"{DRAIN_JOBS} jobs")


def alternating_drains(drains):
    """Runs the drains' rounds taking turns, the order reversed every other turn, until each is
    done (Drain.wants_more): a slow spell of the machine then falls on every system rather than
    on the one whose rounds it was running. pg_jobs' queue keeps every job again after them."""
    turn = 0
    while any(drain.wants_more() for drain in drains):
        for drain in drains if turn % 2 == 0 else drains[::-1]:
            if drain.wants_more():
                log(f"drain: {drain.what} (round {drain.rounds + 1})")
                drain.round()
        turn += 1
    execute("SELECT pgjobs.jobs_queue_history('default', 'all')")
    PG_JOBS.keeps_history = True
    for drain in drains:
        log(f"  {drain.what}: {drain.rounds} rounds in {drain.seconds:.1f} s: {drain.rate():,.0f} jobs/s; "
            "after the first: " + describe(drain.dead))


def worker_drain(system, command, count=1, window=None, **options):
    """Fills the queue with DRAIN_JOBS jobs and lets `count` peer worker processes drain it.
    The clock starts when the first job is gone and stops when the last is (or after `window`
    seconds); returns jobs per second, the jobs done in all, and the dead tuples left."""
    target = SYSTEM_OBJECTS[system]
    target.reset()
    target.fill(DRAIN_JOBS)
    settle(system)
    with AutovacuumOff(system):
        before = before_drain(system)
        rate, done, dead = worker_drain_timed(system, target, command, count, window, before, options)
    return rate, done, dead


def poll_interval(first, now, left, window):
    """Looks often (DRAIN_POLL) near the start and the end of a drain, and at most 10 times a
    second in between, so that counting what is left costs the server little."""
    if first is None or now <= first[0] or first[1] <= left:
        return DRAIN_POLL
    remaining = left / ((first[1] - left) / (now - first[0]))
    if window:
        remaining = min(remaining, first[0] + window - now)
    return min(0.1, max(DRAIN_POLL, remaining / 2))


def worker_drain_timed(system, target, command, count, window, before, options):
    workers = Workers(system, command, count, **options)
    try:
        with connect(system) as conn:
            started = time.monotonic()
            first = None  # (time, jobs left) when the first job was seen gone
            while True:
                [(left,)] = conn.execute(target.left_sql()).fetchall()
                now = time.monotonic()
                if first is None and left < DRAIN_JOBS:
                    first = (now, left)
                if left == 0 or (first and window and now - first[0] >= window):
                    break
                if now - started > DRAIN_TIMEOUT:
                    raise RuntimeError(f"{NAMES[system]}: {left} of {DRAIN_JOBS} jobs left after {DRAIN_TIMEOUT} s")
                workers.check_alive()
                time.sleep(poll_interval(first, now, left, window))
    finally:
        results = workers.stop()
    rate = (first[1] - left) / (now - first[0])
    handled = sum(result["handled"] for result in results)
    [(left_after,)] = query(target.left_sql(), system)
    if handled != DRAIN_JOBS - left_after:
        raise RuntimeError(f"{NAMES[system]}: its handler ran {handled} times but {DRAIN_JOBS - left_after} "
                           f"of {DRAIN_JOBS} jobs are done")
    dead = dead_tuples(system, before, DRAIN_JOBS - left_after)
    log(f"  {DRAIN_JOBS - left_after} of {DRAIN_JOBS} jobs done, {rate:,.0f} jobs/s over {now - first[0]:.1f} s; "
        + describe(dead))
    return rate, DRAIN_JOBS - left_after, dead


def describe(aftermath):
    return ("dead tuples " + ", ".join(f"{table} {n}" for table, n in aftermath.dead.items())
            + (" (autovacuum ran)" if aftermath.vacuumed else "") + f"; {aftermath.wal_per_job:,.0f} B of WAL per job")


def transactions_per_client(batch):
    return DRAIN_JOBS // (CLIENTS * batch)


# The limited drain: as many jobs leased at once as there are workers, claimed 10 at a time, for
# LIMITED_SECONDS from a queue that does not run out meanwhile (a drain of so many transactions a
# client ends before the queue is empty: under a limit many claims take nothing, and a worker
# whose claim took nothing sleeps a millisecond, drain_limited.sql).
LIMITED_RUNNING = CLIENTS
LIMITED_BATCH = 10
LIMITED_SECONDS = 5
LIMITED_JOBS = 100_000


def limited_rate(*setup):
    """Jobs/s completed by CLIENTS workers claiming LIMITED_BATCH at a time for LIMITED_SECONDS
    from LIMITED_JOBS jobs, after the statements `setup` (which set the queue's limits)."""
    PG_JOBS.reset()
    PG_JOBS.fill(LIMITED_JOBS)
    for statement in setup:
        execute(statement)
    settle("pg_jobs")
    started = time.monotonic()
    pgbench("drain_limited.sql", seconds=LIMITED_SECONDS, defines=[("batch", LIMITED_BATCH)])
    elapsed = time.monotonic() - started
    [(completed,)] = query("SELECT count(*) FROM pgjobs.job_history WHERE status = 'completed'")
    execute("SELECT pgjobs.jobs_unlimit('default')")
    PG_JOBS.reset()
    log(f"  {completed:,} completed in {elapsed:.1f} s: {completed / elapsed:,.0f} jobs/s")
    return completed / elapsed


def limited_drain(unlimited):
    """Issue 29's target: a concurrency limit of as many jobs as workers costs at most a tenth of
    the drain at batch 10 (`unlimited`, jobs/s). A note for the drain table."""
    log(f"drain: pg_jobs limited to {LIMITED_RUNNING} jobs leased at once, {CLIENTS} workers claiming "
        f"{LIMITED_BATCH} at a time, then completing, for {LIMITED_SECONDS} s from {LIMITED_JOBS:,} jobs")
    rate = limited_rate(f"SELECT pgjobs.jobs_limit('default', {LIMITED_RUNNING})")
    return (f"- pg_jobs with a concurrency limit of {LIMITED_RUNNING} on its queue (`jobs_limit`), {CLIENTS} "
            f"workers claiming {LIMITED_BATCH} at a time for {LIMITED_SECONDS} s: {rate:,.0f} jobs/s, "
            f"{rate / unlimited:.2f}× the drain at batch {LIMITED_BATCH} without the limit (issue 29's "
            f"target: ≥ 0.9×).")


# Key limits (issue 29): KEYS concurrency keys each limited to one job leased at once, drained as
# the limited drain is; and fairness: one key holding FAIR_BIG jobs beside FAIR_SMALL_KEYS keys of
# FAIR_SMALL jobs each, all limited to CLIENTS per key, the time the small keys take to finish
# beside the big one against the time they take alone.
KEYS = 1000
FAIR_BIG = 100_000
FAIR_SMALL_KEYS = 9
FAIR_SMALL = 100


def keyed_drain(unlimited, systems):
    """Issue 29's target: 1,000 keys each limited to one leased job drain at least 0.7× as fast as
    the drain at batch 10 (`unlimited`, jobs/s); beside pg-boss's singleton queue, its one active
    job per key, and graphile-worker's named queues, one job of each at a time, when they are among
    `systems`. A note for the drain table."""
    log(f"drain: pg_jobs, {KEYS:,} concurrency keys each limited to 1 leased job, {CLIENTS} workers "
        f"claiming {LIMITED_BATCH} at a time, then completing, for {LIMITED_SECONDS} s from {LIMITED_JOBS:,} jobs")
    rate = limited_rate(f"UPDATE pgjobs.jobs SET concurrency_key = 'customer:' || (id % {KEYS})",
                        "SELECT pgjobs.jobs_key_limit('default', 1)")
    note = (f"- pg_jobs with {KEYS:,} concurrency keys each limited to 1 leased job (`jobs_key_limit`), "
            f"{CLIENTS} workers claiming {LIMITED_BATCH} at a time for {LIMITED_SECONDS} s: {rate:,.0f} jobs/s, "
            f"{rate / unlimited:.2f}× the drain at batch {LIMITED_BATCH} without a limit (issue 29's "
            f"target: ≥ 0.7×).")
    if "pgboss" in systems:
        log(f"drain: pg-boss, a singleton queue of {KEYS:,} keys, {CLIENTS} fetch()/complete() loops of "
            f"{LIMITED_BATCH} for {LIMITED_SECONDS} s from {LIMITED_JOBS:,} jobs")
        driver("pgboss", "keyed_fill", jobs=LIMITED_JOBS, keys=KEYS)
        settle("pgboss")
        boss = driver("pgboss", "keyed", workers=CLIENTS, batch=LIMITED_BATCH, seconds=LIMITED_SECONDS)
        boss_rate = boss["handled"] / boss["seconds"]
        note += (f" pg-boss's queue of policy `singleton` (one active job per "
                 f"`singletonKey`), the same {LIMITED_JOBS:,} jobs of {KEYS:,} keys and {CLIENTS} loops of "
                 f"fetch() of {LIMITED_BATCH} then complete(): {boss_rate:,.0f} jobs/s (pg_jobs ÷ pg-boss: "
                 f"{rate / boss_rate:.2f}; {boss['conflicts']:,} of its fetches refused by its unique index "
                 f"of active keys; each of its fetches sorts every waiting job of the queue).")
    if "graphile" in systems:
        log(f"drain: graphile-worker, {LIMITED_JOBS:,} jobs in {KEYS:,} named queues, one process with "
            f"concurrency {CLIENTS}, for {LIMITED_SECONDS} s")
        graphile_rate = graphile_named_queues_rate()
        note += (f" graphile-worker's named queues (`queue_name`: one job of a queue at a time, in "
                 f"order, as an ordered key limit of 1), the same {LIMITED_JOBS:,} jobs in {KEYS:,} queues "
                 f"and one worker process with concurrency {CLIENTS}: {graphile_rate:,.0f} jobs/s (pg_jobs ÷ "
                 f"graphile-worker: {rate / graphile_rate:.2f}).")
    return note


def graphile_named_queues_rate():
    """Jobs/s done by one graphile-worker process with concurrency CLIENTS over LIMITED_SECONDS,
    from LIMITED_JOBS jobs spread over KEYS named queues, timed from the first job gone."""
    GRAPHILE.reset()
    execute(f"""SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
                    SELECT ROW('noop', '{{}}', 'customer:' || (n % {KEYS}), NULL, NULL, NULL, NULL, NULL)
                               ::graphile_worker.job_spec
                    FROM generate_series(1, {LIMITED_JOBS}) n))""", "graphile")
    settle("graphile")
    workers = Workers("graphile", "drain", 1, concurrency=CLIENTS)
    try:
        with connect("graphile") as conn:
            def left():
                return conn.execute(GRAPHILE.left_sql()).fetchall()[0][0]
            deadline = time.monotonic() + DRAIN_TIMEOUT
            while (first := left()) == LIMITED_JOBS:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"graphile-worker: no named queue's job done in {DRAIN_TIMEOUT} s")
                workers.check_alive()
                time.sleep(DRAIN_POLL)
            started = time.monotonic()
            time.sleep(LIMITED_SECONDS)
            done = first - left()
            elapsed = time.monotonic() - started
    finally:
        workers.stop()
    GRAPHILE.reset()
    return done / elapsed


def small_keys_time(with_big):
    """Seconds until the small keys' jobs were done (by their end times in job_history), drained
    for LIMITED_SECONDS by CLIENTS workers from a queue limited to CLIENTS jobs per key, beside the
    big key's jobs or alone; None if some were not done by then."""
    PG_JOBS.reset()
    if with_big:
        PG_JOBS.fill(FAIR_BIG)
        execute("UPDATE pgjobs.jobs SET concurrency_key = 'big'")
    small = [{"task": "noop", "concurrency_key": f"small:{n}"}
             for n in range(FAIR_SMALL_KEYS) for _ in range(FAIR_SMALL)]
    query("SELECT count(*) FROM pgjobs.jobs_add_batch(%s::jsonb)", params=[json.dumps(small)])
    settle("pg_jobs")
    execute(f"SELECT pgjobs.jobs_key_limit('default', {CLIENTS})")
    [(started,)] = query("SELECT clock_timestamp()")
    pgbench("drain_limited.sql", seconds=LIMITED_SECONDS, defines=[("batch", LIMITED_BATCH)])
    [(left, took)] = query("""
        SELECT (SELECT count(*) FROM pgjobs.jobs WHERE concurrency_key LIKE 'small:%%'),
               extract(epoch FROM max(end_time) - %s)::float8
        FROM pgjobs.job_history WHERE concurrency_key LIKE 'small:%%'""",
                           params=[started])
    execute("SELECT pgjobs.jobs_unlimit('default')")
    PG_JOBS.reset()
    return None if left else took


def fair_drain():
    """Issue 29's fairness target: the small keys finish beside the big one within 2× of their
    time alone. A note for the drain table."""
    log(f"drain: fairness, {FAIR_SMALL_KEYS} keys of {FAIR_SMALL} jobs beside one of {FAIR_BIG:,}, "
        f"each limited to {CLIENTS} leased jobs, {CLIENTS} workers claiming {LIMITED_BATCH} at a time")
    beside = small_keys_time(True)
    alone = small_keys_time(False)
    if beside is None or alone is None:
        raise RuntimeError(f"the small keys' jobs were not done in {LIMITED_SECONDS} s")
    log(f"  the small keys took {beside:.2f} s beside the big one, {alone:.2f} s alone")
    return (f"- Fairness: {FAIR_SMALL_KEYS} concurrency keys of {FAIR_SMALL} jobs each, added after "
            f"{FAIR_BIG:,} jobs of one key, all limited to {CLIENTS} leased jobs per key, {CLIENTS} workers "
            f"claiming {LIMITED_BATCH} at a time: the small keys were done in {beside:.2f} s, against "
            f"{alone:.2f} s alone ({beside / alone:.2f}×; issue 29's target: ≤ 2×). Without a key limit "
            f"they would wait for the {FAIR_BIG:,} before them.")


def drain_rates(systems):
    """Rows for the drains: every system at batch 1, 10 and 100 where it has a batch, pg_jobs
    also completing and claiming in one call, pgmq deleting and archiving; and the dead tuples
    after the batch-1 drains."""
    drains = {batch: {} for batch in DRAIN_BATCHES}
    one_trip = {}
    dead = {}
    pgboss_fetch = {}
    pgmq_archive = {}
    no_history = {}
    notes = []

    # The pgbench drains of each batch size take turns (alternating_drains): pg_jobs keeping its
    # history beside pgmq's archive(), keeping none (jobs_queue_history('default', 'none')) beside
    # pgmq's delete() and the hand-written queue, and at batch 1 pg_jobs in one round trip.
    claims = transactions_per_client(1)
    for batch in DRAIN_BATCHES:
        n = transactions_per_client(batch)
        ours = Drain(f"pg_jobs, {CLIENTS} workers claiming {batch} at a time, then completing", "pg_jobs",
                     "drain.sql", batch, n, [("batch", batch)], history="all")
        none = Drain(f"pg_jobs keeping no history, claiming {batch} at a time", "pg_jobs", "drain.sql", batch, n,
                     [("batch", batch)], history="none")
        one = Drain(f"pg_jobs, {CLIENTS} workers calling jobs_complete_and_claim for 1 job", "pg_jobs",
                    "drain_complete_and_claim.sql", 1, claims + 1,
                    [("claims", claims), ("ids", "{}"), ("tokens", "{}")], history="all") if batch == 1 else None
        sql = Drain(f"hand-written SQL, {CLIENTS} clients claiming and deleting {batch} at a time", "sql",
                    "sql_drain.sql", batch, n, [("batch", batch)]) if "sql" in systems else None
        deleting, archiving = (
            Drain(f"pgmq, {CLIENTS} clients reading {batch} at a time (visibility timeout 30 s), then "
                  f"{'archiving' if archive else 'deleting'} them", "pgmq", "pgmq_drain.sql", batch, n,
                  [("batch", batch), ("archive", archive)]) if "pgmq" in systems else None
            for archive in (0, 1))
        alternating_drains([d for d in (ours, none, one, sql, deleting, archiving) if d])
        drains[batch]["pg_jobs"] = Figure(ours.rate())
        no_history[batch] = (Figure(none.rate()), none.dead)
        if one:
            one_trip["pg_jobs"] = Figure(one.rate())
        for peer in (sql, deleting):
            if peer:
                drains[batch][peer.system] = Figure(peer.rate())
        if archiving:
            pgmq_archive[batch] = (Figure(archiving.rate()), archiving.dead)
        if batch == 1:
            dead.update({d.system: d.dead for d in (ours, sql, deleting) if d})
    notes.append(limited_drain(drains[LIMITED_BATCH]["pg_jobs"].value))
    notes.append(keyed_drain(drains[LIMITED_BATCH]["pg_jobs"].value, systems))
    notes.append(fair_drain())

    if "graphile" in systems:
        drains[1]["graphile"], dead["graphile"], note = graphile_drains()
        notes.append(note)
    if "pgboss" in systems:
        pgboss_fetch, dead["pgboss"] = pgboss_drains(drains)
    if "procrastinate" in systems:
        log(f"drain: procrastinate, one worker with concurrency {CLIENTS}, from {DRAIN_JOBS:,} jobs")
        rate, done, tuples = worker_drain("procrastinate", "drain", concurrency=CLIENTS)
        drains[1]["procrastinate"] = Figure(rate)
        dead["procrastinate"] = tuples
    return drain_rows(drains, one_trip, pgboss_fetch, pgmq_archive, no_history, dead), notes


def graphile_drains():
    """graphile-worker's best configuration: its rate, its dead tuples and a note of every one."""
    best = None
    tried = []
    for processes, concurrency in GRAPHILE_CONFIGS:
        log(f"drain: graphile-worker, {processes} process(es) × concurrency {concurrency}, from {DRAIN_JOBS:,} jobs")
        rate, done, tuples = worker_drain("graphile", "drain", processes, concurrency=concurrency)
        tried.append(f"{processes}×{concurrency}: {rate:,.0f}")
        if best is None or rate > best[0]:
            best = (rate, f"{processes}×{concurrency}", tuples)
    return Figure(best[0], best[1]), best[2], (
        "- graphile-worker has no batch (one `get_job` and one `complete_job` per job); processes × "
        "concurrency tried: " + "; ".join(tried) + " jobs/s. The table shows the best.")


def pgboss_drains(drains):
    """pg-boss by work() into `drains`, and by fetch() and complete() loops: those rates, and the
    dead tuples of the batch-1 fetch() drain."""
    pgboss_fetch, dead = {}, None
    for batch in DRAIN_BATCHES:
        log(f"drain: pg-boss, {CLIENTS} work() workers, batchSize {batch}, polling every "
            f"{PGBOSS_POLLING_SECONDS} s, at most {PGBOSS_WINDOW} s")
        rate, done, _ = worker_drain("pgboss", "drain", window=PGBOSS_WINDOW, workers=CLIENTS, batch=batch,
                                     mode="work", pollingIntervalSeconds=PGBOSS_POLLING_SECONDS)
        drains[batch]["pgboss"] = Figure(rate, "" if done == DRAIN_JOBS else f"{done:,} done in {PGBOSS_WINDOW} s")
        log(f"drain: pg-boss, {CLIENTS} loops of fetch() and complete(), batchSize {batch}")
        rate, done, tuples = worker_drain("pgboss", "drain", workers=CLIENTS, batch=batch, mode="fetch")
        pgboss_fetch[batch] = Figure(rate)
        if batch == 1:
            dead = tuples
    return pgboss_fetch, dead


def drain_rows(drains, one_trip, pgboss_fetch, pgmq_archive, no_history, dead):
    rows = []
    for batch in DRAIN_BATCHES:
        values = dict(drains[batch])
        if batch == 1:
            rows.append(Row(f"Drain {DRAIN_JOBS:,} jobs, {CLIENTS} workers, 1 job at a time "
                            "(pg_jobs: jobs_claim, then jobs_complete: two round trips per job)",
                            "jobs/s", "higher", values))
            rows.append(Row("Drain, 1 job at a time, pg_jobs in one round trip per job "
                            "(jobs_complete_and_claim); peers as above",
                            "jobs/s", "higher", {**values, "pg_jobs": one_trip["pg_jobs"]}))
        else:
            rows.append(Row(f"Drain {DRAIN_JOBS:,} jobs, {CLIENTS} workers, {batch} jobs at a time",
                            "jobs/s", "higher", values))
    for batch, (rate, _) in pgmq_archive.items():
        rows.append(Row(f"Drain, {batch} at a time, pgmq by read() then archive() (keeps every message, as "
                        "pg_jobs keeps its history) instead of delete()", "jobs/s", "higher",
                        {"pg_jobs": drains[batch]["pg_jobs"], "pgmq": rate}))
    for batch, (rate, _) in no_history.items():
        rows.append(Row(f"Drain, {batch} at a time, pg_jobs in a queue that keeps no history "
                        "(jobs_queue_history('default', 'none')), beside pgmq's delete() and the hand-written "
                        "queue", "jobs/s", "higher",
                        {system: drains[batch][system] for system in ("sql", "pgmq") if system in drains[batch]}
                        | {"pg_jobs": rate}))
    for batch, rate in pgboss_fetch.items():
        rows.append(Row(f"Drain, {batch} at a time, pg-boss by fetch() and complete() loops instead of work()",
                        "jobs/s", "higher",
                        {"pg_jobs": drains[batch]["pg_jobs"], "pgboss": rate}))
    dead_values, wal_values = {}, {}
    for system, aftermath in dead.items():
        parts = " + ".join(f"{table} {n:,}" for table, n in aftermath.dead.items())
        note = (parts if len(aftermath.dead) > 1 else "") + (" (autovacuum ran during the drain)" if aftermath.vacuumed else "")
        dead_values[system] = Figure(sum(aftermath.dead.values()), note.strip())
        wal_values[system] = Figure(aftermath.wal_per_job)
    rows.append(Row(f"Dead tuples left in the queue tables after draining {DRAIN_JOBS:,} jobs 1 at a time "
                    "(n_dead_tup)", "tuples", "lower", dead_values))
    rows.append(Row("WAL written per job in that drain (claim and completion)", "bytes", "lower", wal_values))
    if 1 in no_history:
        kept_nothing = no_history[1][1]
        rows.append(Row("The same WAL per job, pg_jobs keeping no history", "bytes", "lower",
                        {**wal_values, "pg_jobs": Figure(kept_nothing.wal_per_job)}))
    if 1 in pgmq_archive:
        archived = pgmq_archive[1][1]
        rows.append(Row("The same dead tuples, pgmq archiving instead of deleting", "tuples", "lower",
                        {"pg_jobs": dead_values["pg_jobs"], "pgmq": Figure(sum(archived.dead.values()))}))
        rows.append(Row("The same WAL per job, pgmq archiving instead of deleting", "bytes", "lower",
                        {"pg_jobs": wal_values["pg_jobs"], "pgmq": Figure(archived.wal_per_job)}))
    return rows


def pickup_latency(listen, add, claim, complete=None, samples=PICKUP_JOBS, system="pg_jobs"):
    """p50 and p99, in ns, from just before a job is added until an idle worker, woken by
    NOTIFY, has claimed it. One job at a time, so the worker is always idle when it arrives.
    `add` takes the payload {"t": ...}; `claim` returns one row whose payload column is named
    `payload`; `complete`, if any, takes the claimed row."""
    listening = threading.Event()
    latencies = queue.SimpleQueue()

    def worker():
        with connect(system) as conn:
            conn.execute(f"LISTEN {listen}")
            listening.set()
            for _ in range(samples):
                # The next job is added only after this one is handed back below, and nothing
                # runs on this connection from then until here, so no command can swallow the
                # notification: it waits in the socket if it comes early.
                if not list(conn.notifies(timeout=10, stop_after=1)):
                    raise RuntimeError(f"no notification on {listen} within 10 s of an add")
                cursor = conn.execute(claim)
                claimed = cursor.fetchall()
                claimed_at = time.perf_counter_ns()
                if len(claimed) != 1:
                    raise RuntimeError(f"the woken worker claimed {len(claimed)} jobs, not 1")
                row = dict(zip([column.name for column in cursor.description], claimed[0]))
                if complete:
                    conn.execute(complete, row)
                latencies.put(claimed_at - row["payload"]["t"])

    with ThreadPoolExecutor(1) as pool, connect(system) as producer:
        listener = pool.submit(worker)
        if not listening.wait(10):
            listener.result(timeout=0)
        results = []
        for _ in range(samples):
            # Random gaps, so that adds do not fall in step with anything periodic on the server.
            time.sleep(random.uniform(0.005, 0.025))
            producer.execute(add, [Jsonb({"t": time.perf_counter_ns()})])
            try:
                results.append(latencies.get(timeout=15))
            except queue.Empty:
                listener.result(timeout=0)
                raise
        listener.result()
    return results


def pickup_latencies(systems):
    """Rows for pickup latency: every system's idle worker, one job at a time (not pgmq's: 1.5.1
    sends no notification, so its workers poll)."""
    samples = {}
    log(f"pickup latency: pg_jobs, {PICKUP_JOBS} jobs, one at a time, to a LISTENing worker")
    PG_JOBS.reset()
    settle()
    samples["pg_jobs"] = pickup_latency(
        "pgjobs_ready", "SELECT pgjobs.jobs_add('noop', %s)", CLAIM_ONE,
        "SELECT pgjobs.jobs_complete(%(id)s, %(lease_token)s)")
    if "sql" in systems:
        log(f"pickup latency: hand-written SQL, {PICKUP_JOBS} jobs, one at a time, to a LISTENing worker")
        SQL.reset()
        settle("sql")
        samples["sql"] = pickup_latency(
            "q_ready", "WITH i AS (INSERT INTO q (payload) VALUES (%s) RETURNING id) SELECT pg_notify('q_ready', '') FROM i",
            "WITH c AS (SELECT id FROM q ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) "
            "DELETE FROM q USING c WHERE q.id = c.id RETURNING q.*", system="sql")
    for system, count, options in (("graphile", PICKUP_JOBS, {}),
                                   ("procrastinate", PICKUP_JOBS, {}),
                                   ("pgboss", PGBOSS_PICKUP_JOBS, {"pollingIntervalSeconds": PGBOSS_POLLING_SECONDS})):
        if system not in systems:
            continue
        log(f"pickup latency: {NAMES[system]}, {count} jobs, one at a time, to its idle worker")
        SYSTEM_OBJECTS[system].reset()
        settle(system)
        samples[system] = driver(system, "pickup", samples=count, **options)["latencies_ns"]
    log(f"jobs_wait: {PICKUP_JOBS} jobs, one at a time, each waited for while a worker completes it")
    PG_JOBS.reset()
    settle()
    waits = wait_latency()
    rows = []
    for name, fraction in (("p50", 0.50), ("p99", 0.99)):
        rows.append(Row(f"Pickup latency of an idle worker, add to claim, {name}", "ms", "lower",
                        {system: Figure(percentile(values, fraction) / 1e6) for system, values in samples.items()},
                        digits=2))
    for name, fraction in (("p50", 0.50), ("p99", 0.99)):
        rows.append(Row(f"jobs_wait, a completion (its call sent) to the waiter's answer, {name}", "ms", "",
                        {"pg_jobs": Figure(percentile(waits, fraction) / 1e6)}, digits=2))
    return rows


def wait_latency(samples=PICKUP_JOBS):
    """ns from a worker's completion (its call sent) until a caller waiting for that job in
    jobs_wait has its answer, one job at a time: the waiter sleeps on its latch, and the
    completing commit sets it (src/api/waits.rs)."""
    results = []
    with ThreadPoolExecutor(1) as pool, connect() as producer, connect() as worker, connect() as waiter:
        for _ in range(samples):
            [(job,)] = producer.execute("SELECT pgjobs.jobs_add('noop')").fetchall()
            [(token,)] = worker.execute(
                "SELECT lease_token FROM pgjobs.jobs_claim('b', ARRAY['default'], 1)").fetchall()

            def wait():
                waiter.execute("SELECT status FROM pgjobs.jobs_wait(ARRAY[%s::bigint], '10 seconds')",
                               [job]).fetchall()
                return time.perf_counter_ns()

            answered = pool.submit(wait)
            # Long enough for the waiter to have read the job once and gone to sleep.
            time.sleep(random.uniform(0.02, 0.04))
            sent = time.perf_counter_ns()
            worker.execute("SELECT pgjobs.jobs_complete(%s, %s)", [job, token])
            results.append(answered.result(timeout=15) - sent)
    return results


def claim_latency():
    """p50 and p99, in ns, of claiming one job, and how many claims were timed. Each claim is
    rolled back, so every one sees the same queue."""
    samples = []
    deadline = time.monotonic() + CLAIM_SECONDS
    with connect() as conn:
        while len(samples) < CLAIM_ITERATIONS and time.monotonic() < deadline:
            conn.execute("BEGIN")
            started = time.perf_counter_ns()
            conn.execute(CLAIM_ONE).fetchall()
            samples.append(time.perf_counter_ns() - started)
            conn.execute("ROLLBACK")
    return percentile(samples, 0.50), percentile(samples, 0.99), len(samples)


def claim_latencies():
    """Claim latency for each of QUEUE_SIZES jobs queued, the queue grown from one to the next."""
    PG_JOBS.reset()
    results = {}
    for size in QUEUE_SIZES:
        log(f"claim latency: filling pg_jobs' queue to {size:,} jobs")
        [(queued,)] = query("SELECT count(*) FROM pgjobs.jobs")
        PG_JOBS.fill(size - queued)
        settle()
        log(f"claim latency: up to {CLAIM_ITERATIONS} claims or {CLAIM_SECONDS} s with {size:,} jobs queued")
        results[size] = claim_latency()
    rows = []
    for size, (p50, p99, timed) in results.items():
        rows.append(Row(f"Claim latency, {size:,} jobs queued, p50 of {timed:,} claims", "ms", "",
                        {"pg_jobs": Figure(p50 / 1e6)}, digits=2))
        rows.append(Row(f"Claim latency, {size:,} jobs queued, p99 of {timed:,} claims", "ms", "",
                        {"pg_jobs": Figure(p99 / 1e6)}, digits=2))
    small, large = QUEUE_SIZES
    for name, at in (("p50", 0), ("p99", 1)):
        rows.append(Row(f"Claim latency {name}, {large:,} vs {small:,} jobs queued", "×", "",
                        {"pg_jobs": Figure(results[large][at] / results[small][at])}, digits=1))
    return rows + size_after_drain(large)


def pages(conn, tables):
    """Heap pages of `tables`, and their pages with indexes."""
    [(heap, total)] = conn.execute("""
        SELECT sum(pg_relation_size(t))::bigint / 8192, sum(pg_total_relation_size(t))::bigint / 8192
        FROM unnest(%s::regclass[]) t""", [tables]).fetchall()
    return heap, total


def claimable_pages():
    """Pages of the claimable table (see pages)."""
    with connect() as conn:
        return pages(conn, ["pgjobs.jobs"])


def size_after_drain(queued):
    """Drains the `queued` jobs claim_latencies left, at batch 100, waits for autovacuum to
    visit the claimable table once, and compares its size with that of the empty table."""
    [(left,)] = query("SELECT count(*) FROM pgjobs.jobs")
    if left != queued:
        raise RuntimeError(f"pg_jobs: {queued:,} jobs expected in the queue, {left:,} found")
    with connect() as conn:
        conn.execute("CREATE TEMP TABLE empty_jobs (LIKE pgjobs.jobs INCLUDING ALL)")
        empty_heap, empty_total = pages(conn, ["empty_jobs"])
    log(f"size after a drain: draining {queued:,} jobs at batch 100, then waiting for autovacuum")
    started = time.monotonic()
    pgbench("drain.sql", transactions=-(-queued // (CLIENTS * 100)) + 1, defines=[("batch", 100)])
    drained = time.monotonic() - started
    [(left,)] = query("SELECT count(*) FROM pgjobs.jobs")
    if left:
        raise RuntimeError(f"pg_jobs: the drain of {queued:,} jobs left {left:,}")
    full_heap, full_total = claimable_pages()
    # A visit that began during the drain does not count (it cannot remove what the drain's last
    # transactions left): the cycle waited for is the next visit that starts after the drain.
    # Counting the visits that end after it counted those, and once measured 28,699 pages left.
    tables = "t.relid = 'pgjobs.jobs'::regclass"
    [(baseline,)] = query(f"""
        SELECT jsonb_object_agg(t.relid::regclass::text, t.autovacuum_count + (p.pid IS NOT NULL)::integer)
        FROM pg_stat_user_tables t LEFT JOIN pg_stat_progress_vacuum p ON p.relid = t.relid
        WHERE {tables}""")
    deadline = time.monotonic() + AUTOVACUUM_WAIT
    while True:
        [(visited,)] = query(f"""
            SELECT count(*) FROM pg_stat_user_tables t
            WHERE {tables} AND t.autovacuum_count > (%s::jsonb ->> t.relid::regclass::text)::bigint""",
                             params=[Jsonb(baseline)])
        if visited or time.monotonic() > deadline:
            break
        time.sleep(1)
    heap, total = claimable_pages()
    note = f"{queued:,} drained in {drained:.0f} s at batch 100"
    if not visited:
        note += f"; autovacuum had not visited it {AUTOVACUUM_WAIT} s after the drain"
    return [
        Row(f"Claimable table (jobs) after draining {queued:,} jobs and one autovacuum, "
            "heap pages", "pages", "", {"pg_jobs": Figure(heap, f"empty: {empty_heap}; at the end of the "
                                                      f"drain: {full_heap:,}; {note}")}),
        Row("The same with their indexes", "pages", "",
            {"pg_jobs": Figure(total, f"empty: {empty_total}; at the end of the drain: {full_total:,}")}),
    ]


# --- jobs that wait for jobs ----------------------------------------------------------------

# The issue's figures: a graph of GRAPH_JOBS no-op steps with a fan-out of GRAPH_FANOUT, added in
# one jobs_add_batch call (a root, GRAPH_MIDDLE steps after it, GRAPH_FANOUT steps after each of
# those: 1 + 99 + 99 × 100 = 10,000), drained by CLIENTS workers, against as many independent
# no-op jobs added and drained the same way (target: at least 0.8× as fast); and jobs_wait's
# latency from the commit of a completion to the waiter's return. Each batch size is drained
# GRAPH_ROUNDS times per shape, the shapes alternating, so that a slow spell of the machine falls
# on both.
GRAPH_JOBS = 10_000
GRAPH_FANOUT = 100
GRAPH_MIDDLE = (GRAPH_JOBS - 1) // (GRAPH_FANOUT + 1)
GRAPH_BATCHES = (1, 10)
GRAPH_ROUNDS = 2 if QUICK else 5
GRAPH_TARGET = 0.8
GRAPH_WAITS = 100 if QUICK else 200
GRAPH_OUTPUT = ROOT / "target" / "bench" / "graph.md"
# drain_until_done.sql's runs per client: enough for one client to claim every job alone and to
# find nothing every millisecond for DRAIN_TIMEOUT seconds; those left once the queue is empty
# skip every command.
GRAPH_RUNS = GRAPH_JOBS + DRAIN_TIMEOUT * 1000


def graph_steps():
    """The graph as jobs_add_batch's objects: the root, its GRAPH_MIDDLE steps, then each middle
    step's GRAPH_FANOUT ("after" names positions from 1, of earlier objects only)."""
    steps = [{"task": "noop"}] + [{"task": "noop", "after": [1]}] * GRAPH_MIDDLE
    for middle in range(2, GRAPH_MIDDLE + 2):
        steps += [{"task": "noop", "after": [middle]}] * GRAPH_FANOUT
    if len(steps) != GRAPH_JOBS:
        raise ValueError(f"{GRAPH_JOBS:,} jobs do not make a root and steps with a fan-out of {GRAPH_FANOUT}")
    return steps


def add_in_one_call(jobs):
    """Adds `jobs` (jobs_add_batch's objects) in one call, committed; the seconds it took."""
    with connect() as conn:
        started = time.perf_counter()
        [(added,)] = conn.execute("SELECT count(*) FROM pgjobs.jobs_add_batch(%s::jsonb)",
                                  [json.dumps(jobs)]).fetchall()
        took = time.perf_counter() - started
    if added != len(jobs):
        raise RuntimeError(f"pg_jobs: jobs_add_batch added {added} of {len(jobs)} jobs")
    return took


def check_graph_drained(what, count):
    """Every job completed once, nothing left waiting, and no job completed before one of its
    dependencies: a step's completion statement starts after its claim, which comes after the
    commit of its dependency's completion, whose statement started before that."""
    [(completed, other, left, waits, early)] = query("""
        SELECT count(*) FILTER (WHERE status = 'completed' AND attempts = 1),
               count(*) FILTER (WHERE status <> 'completed' OR attempts <> 1),
               (SELECT count(*) FROM pgjobs.jobs),
               (SELECT count(*) FROM pgjobs.job_dependencies),
               (SELECT count(*) FROM pgjobs.job_history c CROSS JOIN unnest(c.depends_on) d(id)
                JOIN pgjobs.job_history p ON p.id = d.id WHERE c.end_time <= p.end_time)
        FROM pgjobs.job_history""")
    if (completed, other, left, waits, early) != (count, 0, 0, 0, 0):
        raise RuntimeError(
            f"pg_jobs: {what}: of {count} jobs, {completed} completed at their first attempt, {other} "
            f"finished otherwise, {left} left in jobs, {waits} waits left, {early} completed before a "
            "dependency")


@dataclass
class GraphRound:
    adding: float        # seconds of the jobs_add_batch call
    draining: float      # seconds from the drain's start to the last completion
    aftermath: Aftermath


def graph_round(what, jobs, batch):
    """Adds `jobs` in one call to an empty queue, then drains them with CLIENTS pgbench workers
    claiming up to `batch` at a time (drain_until_done.sql). The drain is timed from pgbench's
    start, its connections left out, to the start of the last completion's statement
    (job_history.end_time; this machine's clock, as time.time())."""
    PG_JOBS.reset()
    execute("TRUNCATE pgjobs.job_dependencies")
    adding = add_in_one_call(jobs)
    settle()
    with AutovacuumOff("pg_jobs"):
        before = before_drain("pg_jobs")
        started = time.time()
        run = pgbench("drain_until_done.sql", transactions=GRAPH_RUNS, defines=[("batch", batch), ("done", 0)])
        aftermath = dead_tuples("pg_jobs", before, len(jobs))
    [(last,)] = query("SELECT extract(epoch FROM max(end_time))::float8 FROM pgjobs.job_history")
    check_graph_drained(f"{what} at batch {batch}", len(jobs))
    return GraphRound(adding, last - started - run.connecting, aftermath)


def graph_drains():
    """Per batch of GRAPH_BATCHES and per shape ("graph", "independent"): its GRAPH_ROUNDS
    rounds, the graph first in odd rounds and second in even ones."""
    shapes = [("graph", graph_steps()), ("independent", [{"task": "noop"}] * GRAPH_JOBS)]
    rounds = {}
    for batch in GRAPH_BATCHES:
        for n in range(GRAPH_ROUNDS):
            for what, jobs in shapes if n % 2 == 0 else shapes[::-1]:
                log(f"graph: {what}, {GRAPH_JOBS:,} jobs, {CLIENTS} workers claiming {batch} at a time "
                    f"(round {n + 1} of {GRAPH_ROUNDS})")
                done = graph_round(what, jobs, batch)
                log(f"  added in {done.adding:.2f} s, drained in {done.draining:.2f} s: "
                    f"{GRAPH_JOBS / done.draining:,.0f} jobs/s; " + describe(done.aftermath))
                rounds.setdefault((batch, what), []).append(done)
    return rounds


def wait_for(conn, job):
    """jobs_wait for one job; the perf_counter_ns when its answer is here."""
    [(status,)] = conn.execute("SELECT status FROM pgjobs.jobs_wait(ARRAY[%s::bigint], '10 seconds')",
                               [job]).fetchall()
    if status != "completed":
        raise RuntimeError(f"jobs_wait answered {status} for job {job}, not completed")
    return time.perf_counter_ns()


def wait_until_asleep(conn, pid):
    """Until backend `pid` sleeps on its latch in jobs_wait (wait event Extension): it has read
    its job once, unfinished, and registered its wait."""
    deadline = time.monotonic() + 10
    while conn.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                       [pid]).fetchall() != [("Extension",)]:
        if time.monotonic() > deadline:
            raise RuntimeError("the waiter was not asleep in jobs_wait within 10 s")
        time.sleep(0.001)


def commit_to_wait_latency(samples=GRAPH_WAITS):
    """ns from the commit of a worker's completion to the return of a caller waiting for that
    job in jobs_wait, one job at a time, the waiter asleep before the completion: from the
    worker's COMMIT sent (the commit's WAL flush included) and from its answer (the commit done;
    the waiter may answer first), as two lists. The completion is in a transaction of its own,
    so that its commit is a statement to time."""
    sent, answered = [], []
    with ThreadPoolExecutor(1) as pool, connect() as producer, connect() as worker, connect() as waiter:
        waiter_pid = waiter.info.backend_pid
        for _ in range(samples):
            [(job,)] = producer.execute("SELECT pgjobs.jobs_add('noop')").fetchall()
            [(token,)] = worker.execute(
                "SELECT lease_token FROM pgjobs.jobs_claim('b', ARRAY['default'], 1)").fetchall()
            returned = pool.submit(wait_for, waiter, job)
            wait_until_asleep(producer, waiter_pid)
            # Random gaps, so that completions do not fall in step with anything periodic.
            time.sleep(random.uniform(0.001, 0.005))
            worker.execute("BEGIN")
            worker.execute("SELECT pgjobs.jobs_complete(%s, %s)", [job, token])
            committing = time.perf_counter_ns()
            worker.execute("COMMIT")
            committed = time.perf_counter_ns()
            done = returned.result(timeout=15)
            sent.append(done - committing)
            answered.append(done - committed)
    return sent, answered


def graph():
    """The graph part, written to GRAPH_OUTPUT: the graph's drain against independent jobs', and
    jobs_wait's latency from a commit."""
    started = time.monotonic()
    load = os.getloadavg()[0]
    rounds = graph_drains()
    log(f"graph: jobs_wait, {GRAPH_WAITS} jobs one at a time, each completed while a caller waits for it")
    PG_JOBS.reset()
    settle()
    sent, answered = commit_to_wait_latency()

    def rate_cell(batch, what):
        rates = sorted(GRAPH_JOBS / r.draining for r in rounds[(batch, what)])
        return f"{statistics.median(rates):,.0f} ({rates[0]:,.0f}–{rates[-1]:,.0f})"

    def first_round(batch, figure):
        return " / ".join(f"{figure(rounds[(batch, what)][0].aftermath):,.0f}" for what in ("graph", "independent"))

    def adding(what):
        return statistics.median(r.adding for batch in GRAPH_BATCHES for r in rounds[(batch, what)])

    def ratio_cell(batch):
        # Each round's graph against the independent drain next to it, which met the same load:
        # their median is what a burst of other work on the machine moves least.
        paired = sorted(i.draining / g.draining
                        for g, i in zip(rounds[(batch, "graph")], rounds[(batch, "independent")]))
        return f"**{statistics.median(paired):.2f}** ({paired[0]:.2f}–{paired[-1]:.2f})"

    columns = " | ".join(f"batch {batch}" for batch in GRAPH_BATCHES)
    lines = [
        f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; pg_jobs "
        + subprocess.run(["git", "-C", str(BENCH_DIR), "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
        + f"; {len(os.sched_getaffinity(0))} CPUs; load average {load:.2f} at the start; measured in "
        f"{(time.monotonic() - started) / 60:.1f} minutes{' (BENCH_QUICK=1)' if QUICK else ''}",
        f"- A graph of {GRAPH_JOBS:,} no-op steps added in one `jobs_add_batch` call: a root, {GRAPH_MIDDLE} "
        f"steps after it (`\"after\": [1]`) and {GRAPH_FANOUT} after each of those (fan-out {GRAPH_FANOUT}), "
        f"so {GRAPH_JOBS - 1:,} wait for a dependency and {GRAPH_MIDDLE + 1} completions release them; "
        f"against {GRAPH_JOBS:,} independent no-op jobs, added in one call too. Each drained by {CLIENTS} "
        f"pgbench clients ({THREADS} threads, prepared statements) running `bench/drain_until_done.sql`: "
        "`drain.sql`'s `jobs_claim` of up to the batch, then `jobs_complete`, in two transactions; a "
        "worker whose claim took nothing sleeps 1 ms and claims again while any job is left (a step is "
        "claimable only once its dependencies completed), so the drain ends with the last job. Timed from "
        "pgbench's start, its connections left out, to the last completion (`job_history.end_time`), "
        f"from a vacuumed and checkpointed queue, {GRAPH_ROUNDS} rounds of each shape, alternating: "
        "the median round's jobs/s, and the median of the rounds' ratios, each graph drain against the "
        "independent one next to it (the rounds' range in brackets). WAL and dead tuples (`jobs`, "
        "autovacuum off on it) of the first round.",
        "",
        f"| Jobs that wait for jobs, {GRAPH_JOBS:,} jobs, {CLIENTS} workers | {columns} |",
        "|---|" + "---:|" * len(GRAPH_BATCHES),
        f"| graph (fan-out {GRAPH_FANOUT}), jobs/s | "
        + " | ".join(rate_cell(batch, "graph") for batch in GRAPH_BATCHES) + " |",
        "| independent jobs, jobs/s | " + " | ".join(rate_cell(batch, "independent") for batch in GRAPH_BATCHES) + " |",
        f"| graph ÷ independent (target ≥ {GRAPH_TARGET}×) | "
        + " | ".join(ratio_cell(batch) for batch in GRAPH_BATCHES) + " |",
        "| WAL per job, graph / independent, bytes | "
        + " | ".join(first_round(batch, lambda a: a.wal_per_job) for batch in GRAPH_BATCHES) + " |",
        "| dead tuples left in `jobs`, graph / independent | "
        + " | ".join(first_round(batch, lambda a: sum(a.dead.values())) for batch in GRAPH_BATCHES) + " |",
        "",
        f"- The `jobs_add_batch` call of the {GRAPH_JOBS:,} (median of {GRAPH_ROUNDS * len(GRAPH_BATCHES)}): "
        f"the graph {adding('graph'):.2f} s, the independent jobs {adding('independent'):.2f} s.",
        f"- jobs_wait: {GRAPH_WAITS} jobs one at a time, each added, claimed by a worker, waited for by a "
        "caller (`jobs_wait(ARRAY[id], '10 seconds')`, seen asleep on its latch in `pg_stat_activity` "
        "first), then completed by the worker in a transaction of its own; from its `COMMIT` to the "
        "waiter's return, each timed by bench.py's clock.",
        "",
        f"| jobs_wait, {GRAPH_WAITS} jobs | p50, ms | p99, ms |",
        "|---|---:|---:|",
        *[f"| from the worker's `COMMIT` {name} to the waiter's return | {percentile(values, 0.50) / 1e6:.2f} "
          f"| {percentile(values, 0.99) / 1e6:.2f} |"
          for name, values in (("answered", answered), ("sent (its WAL flush included)", sent))],
    ]
    table = "\n".join(lines) + "\n"
    GRAPH_OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    GRAPH_OUTPUT.write_text(table)
    print(table)
    return table


# --- a long transaction -----------------------------------------------------------------------

# Producers at up to LONG_RATE jobs/s in all (LONG_PRODUCERS pgbench clients, one job per
# transaction, -R), LONG_WORKERS workers completing their last batch and claiming up to
# LONG_BATCH jobs in one round trip (a worker that got nothing waits LONG_IDLE seconds, as a
# polling worker does), and one REPEATABLE READ transaction that takes its snapshot after
# LONG_PHASES[0] seconds and commits LONG_PHASES[1] seconds later; the run goes on
# LONG_PHASES[2] seconds more. Every dead row version and index entry made while the snapshot
# is held must stay, so each read of the head of the queue reads through them.
LONG_RATE = 1500
LONG_PRODUCERS = 2
LONG_WORKERS = 4
LONG_BATCH = 10
LONG_IDLE = 0.01
LONG_PHASES = (30, 90, 30) if QUICK else (60, 180, 60)
LONG_BUCKET = 10
LONG_OUTPUT = ROOT / "target" / "bench" / "long_transaction.md"
LONG_SYSTEMS = {
    # system: (producer script, worker statement, jobs waiting)
    "pg_jobs": ("enqueue_single.sql",
                "SELECT id, lease_token FROM pgjobs.jobs_complete_and_claim(%s::bigint[], %s::uuid[], NULL, 'w', "
                f"ARRAY['default'], {LONG_BATCH})",
                "SELECT count(*) FROM pgjobs.jobs WHERE status = 'created' AND run_at <= now()"),
    "sql": ("sql_enqueue_single.sql",
            f"WITH c AS (SELECT id FROM q ORDER BY id LIMIT {LONG_BATCH} FOR UPDATE SKIP LOCKED) "
            "DELETE FROM q USING c WHERE q.id = c.id RETURNING q.id",
            "SELECT count(*) FROM q"),
}


def long_worker(system, statement, deadline, samples):
    """One worker until `deadline` (time.time()): appends (when, round trip in ms) per call."""
    ids, tokens = [], []
    with connect(system) as conn:
        while time.time() < deadline:
            started = time.perf_counter_ns()
            rows = conn.execute(statement, [ids, tokens] if system == "pg_jobs" else None,
                                prepare=True).fetchall()
            samples.append((time.time(), (time.perf_counter_ns() - started) / 1e6))
            if system == "pg_jobs":
                ids, tokens = [row[0] for row in rows], [row[1] for row in rows]
            if not rows:
                time.sleep(LONG_IDLE)


def long_transaction_run(system, phases):
    """One system through the scenario; per LONG_BUCKET seconds: worker round trips (count,
    p50, p99 in ms), jobs waiting at the bucket's end, and the producers' achieved rate."""
    producer, statement, waiting_sql = LONG_SYSTEMS[system]
    total = sum(phases)
    SYSTEM_OBJECTS[system].reset()
    settle(system)
    waiting = {}
    samples = []
    with tempfile.TemporaryDirectory() as logs, connect(system) as sampler, connect(system) as pin, \
            ThreadPoolExecutor(LONG_WORKERS) as pool:
        started = time.time()
        args = [PGBENCH, "-n", "-M", "prepared", "-c", str(LONG_PRODUCERS), "-j", str(LONG_PRODUCERS),
                "-T", str(total), "-R", str(LONG_RATE), "-l", f"--aggregate-interval={LONG_BUCKET}",
                "--log-prefix=p", "-f", str(BENCH_DIR / producer),
                "-h", "localhost", "-p", str(PORT), "-U", "postgres", DATABASES[system]]
        producers = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=logs)
        workers = [pool.submit(long_worker, system, statement, started + total, samples)
                   for _ in range(LONG_WORKERS)]
        pinned = None
        for bucket in range(1, total // LONG_BUCKET + 1):
            while True:
                now = time.time() - started
                if pinned is None and now >= phases[0]:
                    # The snapshot is taken by the first query and held until COMMIT.
                    pin.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                    pin.execute("SELECT count(*) FROM pg_class").fetchall()
                    pinned = now
                    log(f"  {system}: snapshot taken at {now:.1f} s")
                elif pinned not in (None, False) and now >= phases[0] + phases[1]:
                    pin.execute("COMMIT")
                    log(f"  {system}: long transaction committed at {now:.1f} s")
                    pinned = False
                target = bucket * LONG_BUCKET
                if now >= target:
                    break
                next_event = target
                if pinned is None:
                    next_event = min(next_event, phases[0])
                elif pinned is not False:
                    next_event = min(next_event, phases[0] + phases[1])
                time.sleep(max(0.01, min(1.0, next_event - now)))
            [(count,)] = sampler.execute(waiting_sql).fetchall()
            waiting[bucket] = count
            log(f"  {system}: {bucket * LONG_BUCKET} s, {count:,} jobs waiting")
        out, err = producers.communicate(timeout=120)
        failed = re.search(r"number of failed transactions: (\d+)", out)
        if producers.returncode != 0 or not failed or failed.group(1) != "0":
            raise RuntimeError(f"pgbench {producer} failed (exit {producers.returncode}):\n{out}{err}")
        for worker in workers:
            worker.result()
        added = {}
        for path in Path(logs).iterdir():
            with open(path) as lines:
                for line in lines:
                    # interval start (epoch s), transactions, ...
                    fields = line.split()
                    at = int(fields[0]) - started
                    bucket = int(round(at / LONG_BUCKET)) + 1
                    added[bucket] = added.get(bucket, 0) + int(fields[1])
    latencies = {}
    for at, latency in samples:
        latencies.setdefault(int((at - started) // LONG_BUCKET) + 1, []).append(latency)
    buckets = []
    for bucket in range(1, total // LONG_BUCKET + 1):
        values = latencies.get(bucket, [])
        buckets.append({
            "end": bucket * LONG_BUCKET,
            "round_trips": len(values),
            "p50": percentile(values, 0.50) if values else None,
            "p99": percentile(values, 0.99) if values else None,
            "waiting": waiting.get(bucket),
            "rate": added[bucket] / LONG_BUCKET if bucket in added else None,
        })
    return buckets


def long_phase(end, phases):
    if end <= phases[0]:
        return "before"
    if end <= phases[0] + phases[1]:
        return "pinned"
    return "after"


def long_transaction(phases=LONG_PHASES):
    """pg_jobs beside the hand-written queue while a long transaction holds its snapshot: a
    Markdown table per LONG_BUCKET seconds and a summary of each phase."""
    if any(phase % LONG_BUCKET for phase in phases):
        raise ValueError(f"each phase must be a multiple of {LONG_BUCKET} s")
    execute("CREATE TABLE IF NOT EXISTS q (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload jsonb NOT NULL)",
            "sql")
    started = time.monotonic()
    load = os.getloadavg()[0]
    results = {}
    for system in LONG_SYSTEMS:
        log(f"long transaction: {NAMES[system]}, {LONG_PRODUCERS} producers at up to {LONG_RATE} jobs/s, "
            f"{LONG_WORKERS} workers at batch {LONG_BATCH}, snapshot held from {phases[0]} s to "
            f"{phases[0] + phases[1]} s of {sum(phases)} s")
        results[system] = long_transaction_run(system, phases)

    def ms(value):
        return "—" if value is None else f"{value:,.1f}" if value >= 10 else f"{value:.2f}"

    def count(value):
        return "—" if value is None else f"{value:,.0f}"

    lines = [
        f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; pg_jobs "
        + subprocess.run(["git", "-C", str(BENCH_DIR), "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
        + f"; load average {load:.2f} at the start; measured in {(time.monotonic() - started) / 60:.1f} minutes",
        f"- Producers: {LONG_PRODUCERS} pgbench clients adding one job per transaction at up to {LONG_RATE:,} "
        f"jobs/s in all (`-R`; pg_jobs: `jobs_add`, hand-written: `INSERT`). Workers: {LONG_WORKERS} "
        f"connections (threads of bench.py, prepared statements), each completing its last batch and claiming up "
        f"to {LONG_BATCH} in one round trip (pg_jobs: `jobs_complete_and_claim`, hand-written: the "
        f"claim-and-delete), again at once if it got any, after {LONG_IDLE * 1000:.0f} ms if it got none. A "
        f"REPEATABLE READ transaction takes its snapshot at {phases[0]} s and commits at "
        f"{phases[0] + phases[1]} s; the run ends at {sum(phases)} s.",
        f"- Per {LONG_BUCKET} s ending at the time shown: the workers' round trips (their count, p50 and p99 "
        "latency, timed by the client), the jobs waiting (ready and unclaimed) at its end, and the "
        "producers' achieved rate (pgbench's aggregated log).",
        "",
        "| s | phase | pg_jobs round trips | pg_jobs p50 ms | pg_jobs p99 ms | pg_jobs waiting | pg_jobs adds/s "
        "| hand-written round trips | hand-written p50 ms | hand-written p99 ms | hand-written waiting "
        "| hand-written adds/s | p50 pg_jobs ÷ hand-written |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    ours, theirs = results["pg_jobs"], results["sql"]
    for a, b in zip(ours, theirs):
        ratio = f"{a['p50'] / b['p50']:.2f}" if a["p50"] and b["p50"] else "—"
        lines.append(f"| {a['end']} | {long_phase(a['end'], phases)} | {count(a['round_trips'])} | {ms(a['p50'])} "
                     f"| {ms(a['p99'])} | {count(a['waiting'])} | {count(a['rate'])} | {count(b['round_trips'])} "
                     f"| {ms(b['p50'])} | {ms(b['p99'])} | {count(b['waiting'])} | {count(b['rate'])} | {ratio} |")
    lines += ["", "| Phase | figure | pg_jobs | hand-written |", "|---|---|---:|---:|"]
    summary = {}
    for system, buckets in results.items():
        for phase in ("before", "pinned", "after"):
            chosen = [b for b in buckets if long_phase(b["end"], phases) == phase]
            if phase == "before":
                chosen = chosen[1:] or chosen  # the first bucket includes the connections' start
            p50s = [b["p50"] for b in chosen if b["p50"] is not None]
            p99s = [b["p99"] for b in chosen if b["p99"] is not None]
            rates = [b["rate"] for b in chosen if b["rate"] is not None]
            summary[(system, phase)] = {
                "worst p50": max(p50s) if p50s else None,
                "worst p99": max(p99s) if p99s else None,
                "most waiting": max((b["waiting"] or 0) for b in chosen),
                "adds/s": sum(rates) / len(rates) if rates else None,
            }
    base = {system: summary[(system, "before")]["worst p50"] for system in results}
    for phase in ("before", "pinned", "after"):
        for name in ("worst p50", "worst p99", "most waiting", "adds/s"):
            cells = []
            for system in ("pg_jobs", "sql"):
                value = summary[(system, phase)][name]
                text = count(value) if name in ("most waiting", "adds/s") else ms(value)
                if name == "worst p50" and phase != "before" and value and base[system]:
                    text += f" ({value / base[system]:.1f}× before)"
                cells.append(text)
            unit = " ms" if "p" in name.split()[-1][:1] and name.startswith("worst") else ""
            lines.append(f"| {phase} | {name}{unit} per {LONG_BUCKET} s | {cells[0]} | {cells[1]} |")
    table = "\n".join(lines) + "\n"
    LONG_OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    LONG_OUTPUT.write_text(table)
    print(table)
    return table


# --- batch jobs through the worker agent -----------------------------------------------------

AGENT_BIN = ROOT / "target" / "release" / "pg_jobs_agent"
AGENT_OUTPUT = ROOT / "target" / "bench" / "batch_agents.md"
AGENT_COUNT = 2
AGENT_SLOTS = 8
AGENT_JOBS = 500 if QUICK else 2000
AGENT_TIMEOUT = 300


def vm_rss_kib(pid):
    """The resident memory of a process, VmRSS from /proc/PID/status, in KiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sentinel_of(pid):
    """The pid of an agent's sentinel (`pg_jobs_agent --sentinel`, its child), or None."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                sentinel = b"--sentinel" in cmdline.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and sentinel:
            return int(entry)
    return None


def batch_agents():
    """2 agents (pg_jobs_agent, --batchjobs 8 each) drain AGENT_JOBS batch jobs of `true`, posted in
    one transaction to ANY computer: the rate from that commit to the last job COMPLETED, and
    each agent's resident memory idle (registered, nothing to do) and busy (the most sampled
    during the drain). Written to target/bench/batch_agents.md; `--only batch-agents` runs it alone."""
    if not AGENT_BIN.exists():
        raise SystemExit(f"{AGENT_BIN} is missing: cargo build --release -p pg_jobs_agent")
    execute("""DO $$BEGIN
                 CREATE ROLE bench_agent LOGIN IN ROLE pgjobs_agent;
                 CREATE ROLE bench_poster LOGIN IN ROLE pgjobs_user;
               EXCEPTION WHEN duplicate_object THEN NULL; END$$""")
    poster = psycopg.connect(f"host=localhost port={PORT} user=bench_poster dbname={DATABASES['pg_jobs']}",
                             autocommit=True)
    # Leftovers of an earlier run (a job of `true` with the same argument would be replaced).
    poster.execute("SELECT pgjobs.batch_cancel(ARRAY(SELECT id FROM pgjobs.batch_jobs "
                   "WHERE status NOT IN ('COMPLETED', 'ERROR', 'CANCEL')))")
    log(f"batch agents: posting {POSTS} jobs, rolled back, each way")
    posting = posting_rates(poster)
    logs = ROOT / "target" / "bench"
    logs.mkdir(parents=True, exist_ok=True)
    agents = []
    try:
        for n in range(1, AGENT_COUNT + 1):
            log_path = logs / f"agent-{n}.log"
            agents.append((subprocess.Popen(
                [str(AGENT_BIN), "--dsn", f"host=localhost port={PORT} user=bench_agent dbname={DATABASES['pg_jobs']}",
                 "--computer", f"bench-{n}", "--batchjobs", str(AGENT_SLOTS)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log_path, "w")), log_path))
        deadline = time.monotonic() + 30
        while not all('"event":"registered"' in path.read_text() for _, path in agents):
            if time.monotonic() > deadline or any(p.poll() is not None for p, _ in agents):
                raise SystemExit("the agents did not register: " + ", ".join(str(path) for _, path in agents))
            time.sleep(0.05)
        time.sleep(2)  # settled: connections made, LISTENing, idle
        idle = [vm_rss_kib(p.pid) for p, _ in agents]
        sentinels = [sentinel_of(p.pid) for p, _ in agents]
        sentinel_rss = [vm_rss_kib(pid) if pid else 0 for pid in sentinels]
        run = time.time_ns()
        log(f"batch agents: {AGENT_COUNT} agents × --batchjobs {AGENT_SLOTS} draining {AGENT_JOBS} jobs of `true`")
        first = poster.execute(
            "SELECT min(pgjobs.batch_post('true', ARRAY[%s::text || ':' || i])) FROM generate_series(1, %s) i",
            (str(run), AGENT_JOBS)).fetchone()[0]
        committed = time.time()
        started = time.monotonic()
        busy = list(idle)
        done = 0
        # The agents' logs say when they are done (each job's "reported" line), not the database:
        # a count of batch_jobs every 0.1 s took a tenth of the machine from the drain it timed.
        # The drain's end is the agents' last "reported" line, not the poll that saw it.
        logs_read = [open(path, "rb") for _, path in agents]
        mark = b'"event":"reported","job":'
        carried = [b""] * len(logs_read)
        while done < AGENT_JOBS:
            if time.monotonic() - started > AGENT_TIMEOUT:
                raise SystemExit(f"batch agents: {done} of {AGENT_JOBS} reported after {AGENT_TIMEOUT} s")
            busy = [max(b, vm_rss_kib(p.pid)) for b, (p, _) in zip(busy, agents)]
            for n, log_file in enumerate(logs_read):
                # Whole lines: the last one may be half written.
                text = carried[n] + log_file.read()
                cut = text.rfind(b"\n") + 1
                done += text[:cut].count(mark)
                carried[n] = text[cut:]
            time.sleep(0.1)
        for log_file in logs_read:
            log_file.close()
        last = max(datetime.datetime.fromisoformat(line["ts"].replace("Z", "+00:00")).timestamp()
                   for _, path in agents for line in map(json.loads, path.read_text().splitlines())
                   if line.get("event") == "reported")
        elapsed = last - committed
        failed = poster.execute("SELECT count(*) FROM pgjobs.batch_jobs WHERE id >= %s AND status <> 'COMPLETED'",
                                (first,)).fetchone()[0]
        per_agent = poster.execute("SELECT target, count(*) FROM pgjobs.batch_jobs WHERE id >= %s "
                                   "GROUP BY target ORDER BY target", (first,)).fetchall()
    finally:
        for process, _ in agents:
            process.terminate()
        for process, _ in agents:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        poster.close()
    alone = processes_alone(AGENT_JOBS, AGENT_COUNT * AGENT_SLOTS)
    queue_add = posting["the queue's jobs_add_batch, 1,000 a call"]
    lines = [
        f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; {AGENT_COUNT} agents "
        f"(`pg_jobs_agent --batchjobs {AGENT_SLOTS}`, computers bench-1 and bench-2) on this machine, "
        f"{AGENT_JOBS} jobs of `true` posted for ANY in one transaction; timed from its commit to the last "
        f"COMPLETED (the agents' last `reported` log line). Each job: a claim share, a fork and exec, batch_started, "
        f"batch_finish. Each agent also runs a sentinel process (`--sentinel`, which kills its jobs' process "
        f"groups if the agent is killed), measured idle.",
        "",
        "| Batch jobs through agents | value |",
        "|---|---:|",
        f"| jobs/s | {AGENT_JOBS / elapsed:,.0f} |",
        f"| the same processes with no database (`xargs -P {AGENT_COUNT * AGENT_SLOTS}`), processes/s | {alone:,.0f} |",
        f"| agents ÷ no database | {AGENT_JOBS / elapsed / alone:.2f} |",
        f"| drain time, s | {elapsed:.2f} |",
        f"| jobs not COMPLETED | {failed} |",
        *[f"| jobs run by {target} | {count:,} |" for target, count in per_agent],
        *[f"| agent {n} VmRSS idle, KiB | {kib:,} |" for n, kib in enumerate(idle, 1)],
        *[f"| agent {n} VmRSS busy (peak sampled), KiB | {kib:,} |" for n, kib in enumerate(busy, 1)],
        *[f"| agent {n}'s sentinel VmRSS, KiB | {kib:,} |" for n, kib in enumerate(sentinel_rss, 1)],
        "",
        f"Posting {POSTS:,} batch jobs of `true` for ANY by the poster's role, in one transaction rolled back "
        f"(the best of 3), milliseconds a job; beside them the queue's batch add of as many jobs with the same payload.",
        "",
        "| Posting | ms a job | ÷ the queue's jobs_add_batch |",
        "|---|---:|---:|",
        *[f"| {name} | {ms:.3f} | {ms / queue_add:.2f} |" for name, ms in posting.items()],
    ]
    table = "\n".join(lines) + "\n"
    AGENT_OUTPUT.write_text(table)
    print(table)
    return table


POSTS = 2000


def posting_rates(poster):
    """Milliseconds a job of posting POSTS batch jobs of `true` for ANY, each in a transaction
    rolled back (nothing is left for the agents): batch_post one a call (one statement for all),
    batch_post_many 1,000 a call, and beside them the queue's jobs_add_batch of 1,000 jobs with
    the same payload, without keys and with one each (a batch job's key is its command's hash)."""
    run = time.time_ns()
    posts = [{"command": "true", "args": [f"{run}:{i}"]} for i in range(POSTS)]
    jobs = [{"task": "batch", "payload": post} for post in posts]
    keyed = [dict(job, key=f"{run}:{i}") for i, job in enumerate(jobs)]
    calls = {
        "batch_post, one a call": [("SELECT count(pgjobs.batch_post('true', ARRAY[%s::text || ':' || i])) "
                                    "FROM generate_series(0, %s - 1) i", (str(run), POSTS))],
        "batch_post_many, 1,000 a call": [("SELECT count(*) FROM pgjobs.batch_post_many(%s)",
                                           (json.dumps(posts[i:i + 1000]),)) for i in range(0, POSTS, 1000)],
        "the queue's jobs_add_batch, 1,000 a call": [("SELECT count(*) FROM pgjobs.jobs_add_batch(%s)",
                                                      (json.dumps(jobs[i:i + 1000]),)) for i in range(0, POSTS, 1000)],
        "the queue's jobs_add_batch, 1,000 a call, each with a key": [
            ("SELECT count(*) FROM pgjobs.jobs_add_batch(%s)", (json.dumps(keyed[i:i + 1000]),))
            for i in range(0, POSTS, 1000)],
    }
    rates = {}
    for name, statements in calls.items():
        best = None
        for _ in range(3):
            with poster.transaction(force_rollback=True):
                started = time.perf_counter()
                for statement, params in statements:
                    poster.execute(statement, params)
                elapsed = time.perf_counter() - started
            best = elapsed if best is None else min(best, elapsed)
        rates[name] = best * 1000 / POSTS
    return rates


def processes_alone(count, parallel):
    """Processes of `true` per second started by `xargs -P parallel`: what the agents' drain
    would be if claiming and reporting cost nothing (the floor the agents' figure stands on)."""
    started = time.monotonic()
    subprocess.run(["xargs", "-P", str(parallel), "-n", "1", "true"],
                   input="\n".join(map(str, range(count))).encode(), check=True)
    return count / (time.monotonic() - started)


SYSTEM_OBJECTS = {"pg_jobs": PG_JOBS, "sql": SQL, "pgmq": PGMQ, "graphile": GRAPHILE, "pgboss": PGBOSS,
                  "procrastinate": PROCRASTINATE}


# --- the table ------------------------------------------------------------------------------

def number(value, digits):
    return f"{value:,.{digits}f}"


def ratio_text(ratio):
    return f"{ratio:.2f}" if ratio < 10 else f"{ratio:,.0f}"


def render(rows, systems):
    arrows = {"higher": " ↑", "lower": " ↓", "": ""}
    head = ["Figure", "Unit", *(NAMES[s] for s in systems), "pg_jobs ÷ best peer"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(systems) + 1)]
    for row in rows:
        ours = row.values.get("pg_jobs")
        cells = []
        for system in systems:
            figure = row.values.get(system)
            if figure is None:
                cells.append("—")
                continue
            text = number(figure.value, row.digits)
            extras = []
            if system != "pg_jobs" and row.better and ours is not None and figure.value > 0:
                extras.append(ratio_text(ours.value / figure.value))
            if figure.note:
                extras.append(figure.note)
            cells.append(text + (f" ({'; '.join(extras)})" if extras else ""))
        peers = [(system, row.values[system].value) for system in PEERS if system in row.values]
        best = "—"
        if row.better and ours is not None and peers:
            pick = max if row.better == "higher" else min
            system, value = pick(peers, key=lambda item: item[1])
            if value > 0:
                best = f"{ratio_text(ours.value / value)} ({NAMES[system]})"
        lines.append(f"| {row.figure} | {row.unit}{arrows[row.better]} | " + " | ".join(cells) + f" | {best} |")
    return lines


def versions(systems):
    def npm_version(package):
        return json.loads((NODE_MODULES / package / "package.json").read_text())["version"]

    found = []
    if "pgmq" in systems:
        found.append(f"pgmq 1.5.1 ({PGMQ_SQL})")
    if {"graphile", "pgboss"} & set(systems):
        node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
        found.append(f"graphile-worker {npm_version('graphile-worker')} and pg-boss {npm_version('pg-boss')} "
                     f"(Node {node}, node-postgres {npm_version('pg')})")
    if "procrastinate" in systems:
        found.append(f"procrastinate {importlib.metadata.version('procrastinate')}")
    found.append(f"Python {sys.version.split()[0]}, psycopg {importlib.metadata.version('psycopg')}")
    return "; ".join(found)


def environment(systems):
    [(version,)] = query("SELECT current_setting('server_version')")
    shown = ("fsync", "synchronous_commit", "full_page_writes", "wal_level", "shared_buffers", "work_mem",
             "max_wal_size", "checkpoint_timeout", "autovacuum", "autovacuum_naptime", "max_connections")
    settings = dict(query("SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY (%s)",
                          params=[list(shown)]))
    # What differs from initdb's postgresql.conf and the built-in defaults.
    changed = [f"{name} = {value}" for name, value in query(
        """SELECT name, setting FROM pg_settings
           WHERE source = 'configuration file'
             AND name IN ('port', 'listen_addresses', 'unix_socket_directories', 'shared_preload_libraries',
                          'pg_jobs.database_name', 'max_connections', 'log_min_messages')
           ORDER BY name""")]
    with open("/proc/cpuinfo") as cpuinfo:
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
                     "unknown model")
    revision = subprocess.run(["git", "-C", str(BENCH_DIR), "describe", "--always", "--dirty"],
                              capture_output=True, text=True).stdout.strip() or "unknown"
    # Anything else busy on the machine skews every figure; the load average shows it.
    load = os.getloadavg()[0]
    return [
        f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; pg_jobs {revision}; "
        f"{versions(systems)}",
        f"- Server: PostgreSQL {version}, one cluster for every system, each in its own database; "
        "initdb's settings except " + ", ".join(changed) + ". In force: "
        + ", ".join(f"{name} {settings[name]}" for name in shown),
        f"- Machine: {len(os.sched_getaffinity(0))} CPUs, {model}; load average {load:.2f} at the start",
    ]


def notes(extra):
    return [
        f"- pg_jobs and hand-written SQL are driven by pgbench ({CLIENTS} clients, {THREADS} threads, "
        "prepared statements, autocommit); graphile-worker's adds too (`graphile_worker.add_job`, "
        "`add_jobs`), with its `run` worker in Node. pg-boss (`send()`, `insert()`, `work()`) and "
        f"procrastinate (`defer_async()`, `batch_defer_async()`, `run_worker_async`) through their own "
        f"APIs, {CLIENTS} concurrent callers in one process, which shares the 2 CPUs with the server.",
        "- Hand-written SQL: a table `q (id identity primary key, payload jsonb)`, "
        "`INSERT`, `INSERT ... SELECT FROM jsonb_array_elements($1)` of the same 100-job JSON as pg_jobs', and "
        "`WITH c AS (SELECT id FROM q ORDER BY id LIMIT :n FOR UPDATE SKIP LOCKED) DELETE FROM q USING c "
        "WHERE q.id = c.id RETURNING q.*`: one round trip per claim, no lease, no retry, no history; its "
        "pickup worker LISTENs on a `pg_notify` sent by the add.",
        "- pgmq 1.5.1: its release's SQL install (no compiled library) in a database of its own, one queue "
        "`noop` made by `pgmq.create` (a table `q_noop`, and `a_noop` for archived messages), driven by "
        "pgbench like pg_jobs: `send`, `send_batch` of a `jsonb[]` parameter of the same 100 jobs, and a "
        "worker's loop of `read(queue, 30, n)` (a visibility timeout of 30 s, its lease) then `delete` (the "
        "message is gone, as in the hand-written queue) or `archive` (moved to `a_noop`, as pg_jobs moves a "
        "finished job to `job_history`) of the ids read, in two transactions. It sends no notification, so "
        "it has no pickup latency row.",
        f"- Enqueues add to a queue already holding {DRAIN_JOBS:,} jobs, vacuumed and analyzed: a busy "
        f"queue's steady state. pgbench's are run {ENQUEUE_ROUNDS} times per system, the systems taking "
        "turns (in the reverse order every other round), each run from that backlog; the median is shown, "
        "with the range. There pg_jobs' adds send no NOTIFY (it "
        "notifies a queue only when a claim has looked at it since its last notification, or a second has "
        "passed, as every notifying commit in the cluster waits on one lock), while graphile-worker's `add_job`/`add_jobs` and procrastinate's insert trigger notify on "
        "every add; pg-boss never notifies. From an empty, vacuumed queue procrastinate's adds are slower for "
        "a while: a new session plans its `procrastinate_events.job_id` foreign-key check as a sequential "
        "scan of `procrastinate_jobs` and keeps that plan until the table is next analyzed.",
        f"- Drains: every system starts from {DRAIN_JOBS:,} no-op jobs, vacuumed and checkpointed. pgbench "
        f"drains are repeated (up to {DRAIN_ROUNDS} rounds, until {DRAIN_SECONDS} s were timed), the "
        "systems of one batch size taking turns round by round (in the reverse order every other turn); a "
        "peer's is "
        "timed from the first job gone to the last, looking at its table every "
        f"{DRAIN_POLL * 1000:.0f} ms near both, and every count is checked against its handler's.",
        f"- pg-boss's `work()` waits out its polling interval ({PGBOSS_POLLING_SECONDS} s here, its minimum; "
        "2 s by default) after every fetch, even a full one, so its drain rate is at most workers × batch ÷ "
        f"interval; where it could not finish in {PGBOSS_WINDOW} s, the rate is over that window. The "
        "fetch()/complete() rows show what its SQL does without that wait. Its pickup latency is that "
        "polling (no LISTEN); jobs arrive at random phases of the interval.",
        "- procrastinate has no batch claim (one `procrastinate_fetch_job_v2` per job) and keeps finished jobs "
        "(status `succeeded`, its default `delete_jobs=never`); graphile-worker deletes them; pg-boss keeps "
        "them (`completed`) until its maintenance archives them; pg_jobs moves them to `job_history`.",
        "- Dead tuples: n_dead_tup of the queue tables (pg_jobs: `jobs`; graphile-worker: "
        "`_private_jobs`; pg-boss: the queue's partition of `pgboss.job`; procrastinate: "
        "`procrastinate_jobs`; hand-written: `q`; pgmq: `q_noop` and `a_noop`), read after the drain's clients disconnected. Autovacuum "
        "is off on the queue tables during every drain (`autovacuum_enabled = false`, reset after), so "
        "that it cannot remove them first; the drains start vacuumed. pg-boss's come from the "
        "fetch()/complete() drain, which finishes.",
        "- Each peer's cell: its value (pg_jobs ÷ it). ↑: higher is better, so a ratio above 1 favours "
        "pg_jobs; ↓: lower is better, a ratio below 1 favours pg_jobs. Best peer: the best of "
        "pgmq, graphile-worker, pg-boss and procrastinate. Compare ratios within one run; this machine is noisy.",
        *extra,
    ]


def pickup_only():
    """Pickup latency of pg_jobs and the hand-written queue alone (`--only pickup`)."""
    execute("CREATE TABLE IF NOT EXISTS q (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload jsonb NOT NULL)",
            "sql")
    samples = {}
    for system, listen, add, claim, complete in (
            ("pg_jobs", "pgjobs_ready", "SELECT pgjobs.jobs_add('noop', %s)", CLAIM_ONE,
             "SELECT pgjobs.jobs_complete(%(id)s, %(lease_token)s)"),
            ("sql", "q_ready",
             "WITH i AS (INSERT INTO q (payload) VALUES (%s) RETURNING id) SELECT pg_notify('q_ready', '') FROM i",
             "WITH c AS (SELECT id FROM q ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) "
             "DELETE FROM q USING c WHERE q.id = c.id RETURNING q.*", None)):
        log(f"pickup latency: {NAMES[system]}, {PICKUP_JOBS} jobs, one at a time, to a LISTENing worker")
        SYSTEM_OBJECTS[system].reset()
        settle(system)
        samples[system] = pickup_latency(listen, add, claim, complete, system=system)
    lines = ["| Pickup latency, add to claim | pg_jobs | hand-written SQL | pg_jobs ÷ hand-written |",
             "|---|---:|---:|---:|"]
    for name, fraction in (("p50", 0.50), ("p99", 0.99)):
        ours, theirs = (percentile(samples[s], fraction) / 1e6 for s in ("pg_jobs", "sql"))
        lines.append(f"| {name}, ms | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f} |")
    print("\n".join(lines))


def main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("long-transaction", "pickup", "batch-agents"),
                        help="measure this alone (pickup: pg_jobs and hand-written SQL only; "
                             "batch-agents: 2 worker agents draining batch jobs)")
    parser.add_argument("--systems", default=os.environ.get("BENCH_SYSTEMS", ",".join(SYSTEMS)),
                        help="the systems measured beside pg_jobs, comma-separated (default: all)")
    parser.add_argument("--parts", default=os.environ.get("BENCH_PARTS", ",".join(PARTS)),
                        help=f"the parts of the run, comma-separated, of {', '.join(PARTS)} (default: all)")
    parser.add_argument("--long-transaction", metavar="BEFORE,PINNED,AFTER",
                        default=",".join(map(str, LONG_PHASES)),
                        help="seconds before the snapshot is taken, held, and after it is released "
                             "(multiples of 10; default %(default)s)")
    args = parser.parse_args()
    phases = tuple(int(part) for part in args.long_transaction.split(","))
    if args.only == "long-transaction":
        long_transaction(phases)
        return
    if args.only == "pickup":
        pickup_only()
        return
    if args.only == "batch-agents":
        batch_agents()
        return
    systems = [system for system in SYSTEMS if system == "pg_jobs" or system in args.systems.split(",")]
    parts = args.parts.split(",")
    unknown = set(args.systems.split(",")) - set(SYSTEMS) | set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown systems or parts: {', '.join(sorted(unknown))}")
    missing = pgmq_missing() if "pgmq" in systems else None
    if missing:
        log(missing)
        systems.remove("pgmq")
    header = environment(systems)
    started = time.monotonic()
    setup_peers(systems)
    rows = [Row("Reference: one-row UPDATE commits", "tx/s", "", {"pg_jobs": Figure(reference_commit_rate())})]
    drain_notes = [f"- {missing}."] if missing else []
    if "enqueue" in parts:
        single, batched, with_payload = enqueue_rates(systems)
        rows.append(Row("Enqueue, 1 job per transaction (pg_jobs: jobs_add)", "jobs/s", "higher", single))
        rows.append(Row("Enqueue, 100 jobs per transaction (pg_jobs: jobs_add_batch)", "jobs/s", "higher", batched))
        rows.append(Row("Enqueue, 100 jobs per transaction, each with a payload of 130 bytes", "jobs/s", "higher",
                        with_payload))
    if "drain" in parts:
        drain_rows, graphile_notes = drain_rates(systems)
        rows += drain_rows
        drain_notes += graphile_notes
    if "pickup" in parts:
        rows += pickup_latencies(systems)
    if "claim-latency" in parts:
        rows += claim_latencies()
    elapsed = time.monotonic() - started

    table = "\n".join([
        *header,
        f"- Measured in {elapsed / 60:.1f} minutes{' (BENCH_QUICK=1)' if QUICK else ''}"
        + ("" if parts == list(PARTS) else f"; parts: {', '.join(parts)}"),
        "", *render(rows, systems), "", *notes(drain_notes)]) + "\n"
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(table)
    print(table)
    if "graph" in parts:
        graph()
    if "long-transaction" in parts:
        long_transaction(phases)
    if "batch-agents" in parts:
        batch_agents()


if __name__ == "__main__":
    main()
