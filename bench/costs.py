"""What each transition of a job costs the server, per job, for pg_jobs, the hand-written queue
and pgmq: WAL written, dead tuples left, and instructions per call (valgrind's callgrind, as
bench/access.py counts them). Prints one Markdown table and writes it to target/bench/costs.md.
It measures and reports; it asserts nothing about the figures.

It starts a cluster of its own (target/costbench, port COSTS_PORT or 28870, pg_jobs preloaded
with its background worker in `bench`, by scripts/lib.sh's start_cluster), makes databases
`bench` (pg_jobs), `bench_sql` (the hand-written table `q`) and `bench_pgmq` (pgmq's SQL install,
PGMQ_SQL as in bench.py; left out with a message when the file is not there) there anew, and
stops the cluster at the end. About 5 minutes; needs valgrind (scripts/bench.sh installs it):

    target/bench-venv/bin/python bench/costs.py [--calls-only]

`--calls-only` counts the batch and compute calls alone (an agent's batch_claim, a compute
worker's compute_fetch and compute_submit), to compare builds of pg_jobs installed in turn.

Each operation is measured from a queue of QUEUED no-op jobs, vacuumed, with autovacuum off:
- WAL and dead tuples: CALLS calls in a row by one connection (prepared statements, autocommit,
  so each call is a transaction of its own, as a worker makes them): the cluster's WAL insert
  position before and after ÷ CALLS (the background worker's rounds write a little too), and the
  growth of n_dead_tup over the database's tables once that connection has gone ÷ CALLS (a
  later page prune lowers it again: what is counted is what is left for VACUUM).
- instructions: a single-user backend on a copy of a snapshot of the data directory, as
  access.py counts them; each call must leave a state in which the next can run, so a
  completion is counted as a claim and a completion in one statement (one transaction) minus a
  claim, and a steady `jobs_complete_and_claim` finds the job it completes with a lookup of the
  leased job, whose own count is subtracted.
"""

import datetime
import json
import os
import subprocess
import sys
import time

import psycopg

import access
from bench import PGMQ_SQL, noop_jobs, pgmq_missing

CLUSTER = "costbench"
PORT = int(os.environ.get("COSTS_PORT", "28870"))
OUTPUT = access.ROOT / "target" / "bench" / "costs.md"
QUEUED = 10_000
CALLS = 1_000
DATABASES = {"pg_jobs": "bench", "sql": "bench_sql", "pgmq": "bench_pgmq"}
NAMES = {"pg_jobs": "pg_jobs", "sql": "hand-written SQL", "pgmq": "pgmq"}

CLAIM = "SELECT id, lease_token FROM pgjobs.jobs_claim('w', ARRAY['default'], 1)"
COMPLETE_AND_CLAIM = ("SELECT id, lease_token FROM pgjobs.jobs_complete_and_claim(%s::bigint[], %s::uuid[], NULL, "
                      "'w', ARRAY['default'], 1)")
SQL_CLAIM_AND_DELETE = ("WITH c AS (SELECT id FROM q ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) "
                        "DELETE FROM q USING c WHERE q.id = c.id RETURNING q.id")
PGMQ_READ = "SELECT msg_id FROM pgmq.read('noop', 30, 1)"
# The leased job a steady jobs_complete_and_claim completes, found in a single-user backend where
# no client carries it from one call to the next (a scan of the table: no index names
# locked_until; its own count is subtracted).
LEASED = ("ARRAY(SELECT id FROM pgjobs.jobs WHERE locked_until IS NOT NULL)",
          "ARRAY(SELECT lease_token FROM pgjobs.jobs WHERE locked_until IS NOT NULL)")

# (key, what it is, {system: how it is called}); the rows of the table, in order.
OPERATIONS = [
    ("add", "add one job (pg_jobs: `jobs_add`; hand-written: `INSERT`; pgmq: `send`)",
     {"pg_jobs": "SELECT pgjobs.jobs_add('noop')",
      "sql": "INSERT INTO q (payload) VALUES ('{\"task\": \"noop\"}')",
      "pgmq": "SELECT pgmq.send('noop', '{\"task\": \"noop\"}')"}),
    ("claim", "claim one job (pg_jobs: `jobs_claim(..., 1)`; pgmq: `read(queue, 30, 1)`)",
     {"pg_jobs": CLAIM, "pgmq": PGMQ_READ}),
    ("complete", "complete one claimed job (pg_jobs: `jobs_complete`, which moves it to `job_history`; "
                 "pgmq: `delete`)",
     {"pg_jobs": "SELECT pgjobs.jobs_complete(%s, %s)", "pgmq": "SELECT pgmq.delete('noop', %s::bigint)"}),
    ("archive", "complete one claimed job keeping it (pg_jobs: `jobs_complete`; pgmq: `archive`)",
     {"pg_jobs": "SELECT pgjobs.jobs_complete(%s, %s)", "pgmq": "SELECT pgmq.archive('noop', %s::bigint)"}),
    ("complete_and_claim", "complete the last job and claim the next in one call (pg_jobs: "
                           "`jobs_complete_and_claim(..., 1)`; hand-written: its claim-and-delete)",
     {"pg_jobs": COMPLETE_AND_CLAIM, "sql": SQL_CLAIM_AND_DELETE}),
]


def log(message):
    print(f"==> {message}", file=sys.stderr, flush=True)


def connect(system):
    return psycopg.connect(f"host=localhost port={PORT} user=postgres dbname={DATABASES[system]}",
                           autocommit=True)


def setup(systems):
    with psycopg.connect(f"host=localhost port={PORT} user=postgres dbname=postgres", autocommit=True) as conn:
        conn.execute("SET client_min_messages = warning")
        for system in systems:
            conn.execute(f"DROP DATABASE IF EXISTS {DATABASES[system]} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {DATABASES[system]}")
        # The cluster is this script's own: no other database's tables are vacuumed meanwhile.
        conn.execute("ALTER SYSTEM SET autovacuum = off")
        conn.execute("SELECT pg_reload_conf()")
    with connect("pg_jobs") as conn:
        conn.execute("SET client_min_messages = warning")
        conn.execute("CREATE EXTENSION pg_jobs CASCADE")
    if "sql" in systems:
        with connect("sql") as conn:
            conn.execute("CREATE TABLE q (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload jsonb NOT NULL)")
    if "pgmq" in systems:
        with connect("pgmq") as conn:
            conn.execute("SET client_min_messages = warning")
            conn.execute(PGMQ_SQL.read_text())
            conn.execute("SELECT pgmq.create('noop')")


def refill(system):
    """QUEUED jobs and nothing else in the queue tables, vacuumed and analyzed."""
    with connect(system) as conn:
        if system == "pg_jobs":
            conn.execute("TRUNCATE pgjobs.jobs, pgjobs.job_keys, pgjobs.job_history")
            conn.execute("SELECT count(*) FROM pgjobs.jobs_add_batch(%s::jsonb)", [noop_jobs(QUEUED)])
        elif system == "sql":
            conn.execute("TRUNCATE q")
            conn.execute(f"INSERT INTO q (payload) SELECT '{{\"task\": \"noop\"}}' FROM generate_series(1, {QUEUED})")
        else:
            conn.execute("TRUNCATE pgmq.q_noop, pgmq.a_noop")
            conn.execute(f"""SELECT count(*) FROM pgmq.send_batch('noop', ARRAY(
                                 SELECT '{{"task": "noop"}}'::jsonb FROM generate_series(1, {QUEUED})))""")
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")


def dead_tuples(system):
    """n_dead_tup summed over the database's tables, once no other client is connected (a
    backend reports its counts when it exits)."""
    with connect(system) as conn:
        deadline = time.monotonic() + 10
        while conn.execute("""SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
                              AND backend_type = 'client backend' AND pid <> pg_backend_pid()""").fetchone()[0]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{NAMES[system]}: clients still connected 10 s after the calls")
            time.sleep(0.05)
        # A backend leaves pg_stat_activity just before it flushes its statistics.
        time.sleep(0.5)
        conn.execute("SELECT pg_stat_clear_snapshot()")
        return conn.execute("SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables").fetchone()[0]


def claimed(conn, system, count):
    """Claims `count` jobs one by one, untimed: what the completions then complete."""
    statement = CLAIM if system == "pg_jobs" else PGMQ_READ
    return [conn.execute(statement, prepare=True).fetchone() for _ in range(count)]


def live(system, operation, statement):
    """WAL bytes and dead tuples per call of CALLS calls in a row."""
    refill(system)
    with connect(system) as conn:
        held = claimed(conn, system, CALLS) if operation in ("complete", "archive") else []
    before_dead = dead_tuples(system)
    with connect(system) as conn:
        [(lsn,)] = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchall()
        last = ([], [])
        for n in range(CALLS):
            if operation == "complete_and_claim" and system == "pg_jobs":
                rows = conn.execute(statement, last, prepare=True).fetchall()
                last = ([row[0] for row in rows], [row[1] for row in rows])
            elif held:
                conn.execute(statement, held[n] if system == "pg_jobs" else held[n][:1], prepare=True)
            else:
                conn.execute(statement, prepare=True)
        [(wal,)] = conn.execute("SELECT pg_current_wal_insert_lsn() - %s::pg_lsn", [lsn]).fetchall()
    return float(wal) / CALLS, (dead_tuples(system) - before_dead) / CALLS


def counted(system, statement, lookup=None):
    return access.instructions_per_call(None, [statement], CLUSTER, DATABASES[system]) - (
        access.instructions_per_call(None, [lookup], CLUSTER, DATABASES[system]) if lookup else 0)


def instruction_counts(systems):
    """Instructions per call of each operation, from one snapshot: QUEUED jobs in every queue and,
    in pg_jobs', one of them leased (what a steady jobs_complete_and_claim completes)."""
    for system in systems:
        refill(system)
    with connect("pg_jobs") as conn:
        conn.execute(CLAIM).fetchall()
        conn.execute("CHECKPOINT")
    access.snapshot_data(CLUSTER, PORT)
    counts = {}
    claim_and_complete = ("SELECT pgjobs.jobs_complete(c.id, c.lease_token) "
                          "FROM pgjobs.jobs_claim('w', ARRAY['default'], 1) c")
    log("instructions: pg_jobs")
    counts["pg_jobs", "add"] = counted("pg_jobs", "SELECT pgjobs.jobs_add('noop')")
    counts["pg_jobs", "claim"] = counted("pg_jobs", "SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['default'], 1)")
    counts["pg_jobs", "complete"] = counts["pg_jobs", "archive"] = (
        counted("pg_jobs", claim_and_complete) - counts["pg_jobs", "claim"])
    counts["pg_jobs", "complete_and_claim"] = counted(
        "pg_jobs", f"SELECT count(*) FROM pgjobs.jobs_complete_and_claim({LEASED[0]}, {LEASED[1]}, NULL, 'w', "
                   "ARRAY['default'], 1)", f"SELECT {LEASED[0]}, {LEASED[1]}")
    if "sql" in systems:
        log("instructions: hand-written SQL")
        counts["sql", "add"] = counted("sql", OPERATIONS[0][2]["sql"])
        counts["sql", "complete_and_claim"] = counted("sql", SQL_CLAIM_AND_DELETE)
    if "pgmq" in systems:
        log("instructions: pgmq")
        counts["pgmq", "add"] = counted("pgmq", OPERATIONS[0][2]["pgmq"])
        counts["pgmq", "claim"] = counted("pgmq", "SELECT count(*) FROM pgmq.read('noop', 30, 1)")
        for operation, function in (("complete", "delete"), ("archive", "archive")):
            counts["pgmq", operation] = counted(
                "pgmq", f"SELECT pgmq.{function}('noop', r.msg_id) FROM pgmq.read('noop', 30, 1) r"
            ) - counts["pgmq", "claim"]
    access.drop_snapshot(CLUSTER)
    return counts


# A compute worker's task of one slice fetched and its result submitted, in one statement.
FETCH_AND_SUBMIT = ("SELECT count(*) FROM pgjobs.compute_fetch(1) f, LATERAL pgjobs.compute_submit(f.task_token, "
                    "ARRAY[f.slice_number], ARRAY['1'], ARRAY[1.0], ARRAY[0.0], ARRAY[1.0], ARRAY[8::bigint], "
                    "ARRAY[8::bigint]) s")
# The batch and compute calls, each as its caller's role: an agent's, and a compute worker's.
CALLS_OPERATIONS = [
    ("batch_claim", "an agent claims one batch job (`batch_claim(computer, 1)`)", "cost_agent",
     "SELECT count(*) FROM pgjobs.batch_claim('cost', 1)"),
    ("compute_fetch", "a worker fetches a task of one slice (`compute_fetch(1)`; the tasks it holds grow by "
                      "one a call)", "cost_worker", "SELECT count(*) FROM pgjobs.compute_fetch(1)"),
    ("compute_fetch_and_submit", "a worker fetches a task of one slice and submits its result, in one "
                                 "statement", "cost_worker", FETCH_AND_SUBMIT),
]


def calls_setup():
    """A computer with QUEUED batch jobs of `true` posted for it, and a compute job of QUEUED
    slices in a group its worker joined, one task already fetched and submitted (the first
    fetch moves the job to running)."""
    with connect("pg_jobs") as conn:
        conn.execute("SET client_min_messages = warning")
        conn.execute("""DO $$BEGIN
                          CREATE ROLE cost_agent IN ROLE pgjobs_agent;
                          CREATE ROLE cost_poster IN ROLE pgjobs_user;
                          CREATE ROLE cost_owner IN ROLE pgjobs_user;
                          CREATE ROLE cost_worker IN ROLE pgjobs_user;
                        EXCEPTION WHEN duplicate_object THEN NULL; END$$""")
        conn.execute("SET ROLE cost_agent")
        conn.execute("SELECT pgjobs.batch_register('cost')")
        conn.execute("SET ROLE cost_poster")
        conn.execute("SELECT count(pgjobs.batch_post('true', ARRAY[i::text], computer => 'cost')) "
                     "FROM generate_series(1, %s) i", [QUEUED])
        conn.execute("RESET ROLE")
        [(group,)] = conn.execute("INSERT INTO pgjobs.compute_groups (owner, join_key) "
                                  "VALUES ('cost_owner'::regrole, 'cost') RETURNING opaque_id::text").fetchall()
        conn.execute("SET ROLE cost_owner")
        conn.execute("SELECT pgjobs.compute_group_set_secret(%s::uuid, 'cost cost cost cost')", [group])
        conn.execute("SELECT pgjobs.compute_deploy(%s::jsonb)", [json.dumps({
            "work": "(x) => x * x", "input": {"range": {"start": 1, "end": QUEUED}}, "groups": [group],
            "offer": 0, "max_slices_per_task": 100, "estimation_slices": 0, "name": "cost"})])
        conn.execute("SET ROLE cost_worker")
        conn.execute("SELECT pgjobs.compute_worker_register('cost', '[]', '{\"map-basic\": \"1.0.0\"}')")
        conn.execute("SELECT pgjobs.compute_worker_join(%s::uuid, 'cost', 'cost cost cost cost')", [group])
        conn.execute(FETCH_AND_SUBMIT).fetchall()
        conn.execute("RESET ROLE")
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")


def call_counts():
    """Instructions per call of the batch and compute calls, from one snapshot; a submit is the
    fetch and submit in one statement minus a fetch."""
    calls_setup()
    access.snapshot_data(CLUSTER, PORT)
    counts = {}
    for key, _, role, statement in CALLS_OPERATIONS:
        log(f"instructions: {key}")
        counts[key] = access.instructions_per_call(role, [statement], CLUSTER, DATABASES["pg_jobs"])
    access.drop_snapshot(CLUSTER)
    return counts


def render_calls(counts):
    lines = ["", "The batch and compute calls, each by its caller's role (an agent's, a compute worker's), from "
                 f"{QUEUED:,} batch jobs posted for one computer and a compute job of {QUEUED:,} slices; "
                 "instructions as above.", "",
             "| Call | instructions per call |", "|---|---:|"]
    lines += [f"| {what} | {counts[key]:,.0f} |" for key, what, _, _ in CALLS_OPERATIONS]
    submit = counts["compute_fetch_and_submit"] - counts["compute_fetch"]
    lines.append(f"| a worker submits the result of a task of one slice (`compute_submit`: the two above's "
                 f"difference) | {submit:,.0f} |")
    return lines


def ratio(ours, theirs):
    if ours is None or theirs is None or not theirs:
        return "—"
    return f"{ours / theirs:.2f}"


def render(systems, results, counts, header):
    lines = [*header, "",
             "| Operation | figure | " + " | ".join(NAMES[s] for s in systems) + " | "
             + " | ".join(f"pg_jobs ÷ {NAMES[s]}" for s in systems[1:]) + " |",
             "|---|---|" + "---:|" * (2 * len(systems) - 1)]
    for key, what, calls in OPERATIONS:
        for figure, unit, pick, digits in (("WAL per call", "bytes", 0, 0), ("dead tuples per call", "", 1, 2),
                                           ("instructions per call", "", None, 0)):
            values = {}
            for system in systems:
                if system not in calls:
                    values[system] = None
                elif pick is None:
                    values[system] = counts.get((system, key))
                else:
                    values[system] = results[system, key][pick]
            cells = ["—" if v is None else f"{v:,.{digits}f}" for v in values.values()]
            ratios = [ratio(values["pg_jobs"], values[s]) for s in systems[1:]]
            lines.append(f"| {what} | {figure}{f' ({unit})' if unit else ''} | " + " | ".join(cells) + " | "
                         + " | ".join(ratios) + " |")
    return lines


def calls_only():
    """The batch and compute calls' table alone, printed: to compare builds of pg_jobs installed in
    turn (the issue's "at most half" of an earlier commit's)."""
    access.lib_sh(f"start_cluster {CLUSTER} {PORT} bench >/dev/null")
    try:
        setup(["pg_jobs"])
        print("\n".join(render_calls(call_counts())))
    finally:
        access.lib_sh(f"stop_cluster {CLUSTER}")


def main():
    if sys.argv[1:] == ["--calls-only"]:
        calls_only()
        return
    systems = ["pg_jobs", "sql", "pgmq"]
    missing = pgmq_missing()
    if missing:
        log(missing)
        systems.remove("pgmq")
    log(f"starting cluster {CLUSTER} on port {PORT}")
    access.lib_sh(f"start_cluster {CLUSTER} {PORT} bench >/dev/null")
    try:
        setup(systems)
        revision = subprocess.run(["git", "-C", str(access.ROOT), "describe", "--always", "--dirty"],
                                  capture_output=True, text=True).stdout.strip() or "unknown"
        load = os.getloadavg()[0]
        started = time.monotonic()
        results = {}
        for key, what, calls in OPERATIONS:
            for system, statement in calls.items():
                if system in systems:
                    log(f"{NAMES[system]}: {key}, {CALLS} calls")
                    results[system, key] = live(system, key, statement)
                    log(f"  {results[system, key][0]:,.0f} B of WAL, {results[system, key][1]:.2f} dead tuples per call")
        counts = instruction_counts(systems)
        few, many = access.INSTRUCTION_CALLS
        header = [
            f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; pg_jobs {revision}; "
            f"measured in {(time.monotonic() - started) / 60:.1f} minutes; load average {load:.2f} at the start",
            f"- Cluster target/{CLUSTER} (port {PORT}), initdb's settings, autovacuum off; each operation from "
            f"{QUEUED:,} no-op jobs queued and vacuumed. WAL and dead tuples: {CALLS:,} calls in a row, one "
            f"connection, prepared statements, a transaction each. Instructions: callgrind, a single-user backend, "
            f"({many} calls − {few} calls) ÷ {many - few}; a completion counted as a claim and a completion in one "
            f"statement minus a claim (one commit fewer than a worker makes); pg_jobs' complete-and-claim minus "
            f"the lookup of the leased job it completes.",
            *([f"- {missing}."] if missing else []),
        ]
        table = "\n".join(render(systems, results, counts, header) + render_calls(call_counts())) + "\n"
        OUTPUT.parent.mkdir(parents=True, exist_ok=True)
        OUTPUT.write_text(table)
        print(table)
    finally:
        with psycopg.connect(f"host=localhost port={PORT} user=postgres dbname=postgres", autocommit=True) as conn:
            conn.execute("ALTER SYSTEM RESET autovacuum")
        access.lib_sh(f"stop_cluster {CLUSTER}")
        log(f"stopped cluster {CLUSTER}")


if __name__ == "__main__":
    main()
