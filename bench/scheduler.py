"""pg_jobs' background worker side by side with pg_cron, on one cluster, in one run.

    /work/main/target/bench-venv/bin/python bench/scheduler.py     (as root, or as the user that
                                                                   owns the checkout, with sudo)

Makes a fresh cluster "schedbench" on port 28850 (scripts/lib.sh's start_cluster) with both
pg_jobs and pg_cron preloaded, database `bench` with both extensions, and measures, one
scheduler at a time (the other has no schedule while it is measured):

  1. firing lateness of 1,000 per-second schedules, ~30 s;
  2. firing lateness of 10,000 per-minute schedules over two minute boundaries;
  3. no-op SQL jobs per second through pg_jobs' executors (pg_cron has no queue).

pg_jobs' schedules add queued task jobs (nobody claims them): a slot's lateness is the commit
time of the transaction that added its job (track_commit_timestamp) minus the slot (`due_at`);
the launcher fires a slot a little ahead of it, the job due at the slot, so that time may be
before the slot, and the job is claimable at max(commit, slot). Beside them, a few more
per-second schedules add jobs to a queue that a worker LISTENing for its signal claims (as the
README's worker does, polling every 2 s otherwise): their lateness is when the claim took them. The job's own `start_time` is the launcher transaction's now(), the
moment the tick began, so it says when firing started, not when the job became visible; it is
shown as a second row. pg_cron's jobs run `INSERT INTO fired ... clock_timestamp()`; lateness is
that time minus the slot (a job's n-th run belongs to the n-th boundary after it was switched
on). Prints one Markdown table, writes it to target/bench/scheduler.md, and stops the cluster.
Takes 5-7 minutes, most of it waiting for minute boundaries.
"""

import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "scripts" / "lib.sh"
OUTPUT = ROOT / "target" / "bench" / "scheduler.md"
CLUSTER, PORT, DATABASE = "schedbench", 28850, "bench"
CONNINFO = f"host=localhost port={PORT} user=postgres dbname={DATABASE}"
PG_CRON_LIBRARY = Path("/usr/lib/postgresql/15/lib/pg_cron.so")

PER_SECOND_SCHEDULES = 1_000
PICKED_UP_SCHEDULES = 20       # per-second schedules besides them, whose jobs a listening worker claims
PER_SECOND_SLOTS = 30          # whole seconds measured
PER_SECOND_SETTLE = 2          # seconds after the schedules exist before the first measured slot
PER_SECOND_GRACE = 5           # how late the last measured slot may still be fired
PER_MINUTE_SCHEDULES = 10_000
PER_MINUTE_BOUNDARIES = 2
PER_MINUTE_DEADLINE = 30       # after the last boundary, stop waiting for its runs
SQL_JOBS = int(os.environ.get("SCHEDBENCH_SQL_JOBS", "1000"))
SQL_JOBS_TIMEOUT = 120

CONF_MARKER = "# bench/scheduler.py: pg_cron next to pg_jobs"
CONF = f"""
{CONF_MARKER}
shared_preload_libraries = 'pg_jobs,pg_cron'
cron.database_name = '{DATABASE}'
cron.use_background_workers = off
cron.host = 'localhost'
max_worker_processes = 32
# Commit times of the launcher's transactions: when a fired job became visible.
track_commit_timestamp = on
"""

NEVER = "0 0 31 2 *"           # 31 February: a valid cron line that never fires


def log(message):
    print(f"==> {message}", file=sys.stderr, flush=True)


def sh(script):
    """Runs bash with scripts/lib.sh sourced; returns its standard output."""
    run = subprocess.run(["bash", "-c", f'source "{LIB}"; {script}'], capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"bash failed ({run.returncode}): {script}\n{run.stdout}{run.stderr}")
    return run.stdout


def connect(dbname=DATABASE):
    return psycopg.connect(f"host=localhost port={PORT} user=postgres dbname={dbname}", autocommit=True)


def query(sql, params=None):
    with connect() as conn:
        return conn.execute(sql, params).fetchall()


def execute(sql, params=None):
    with connect() as conn:
        conn.execute(sql, params)


def server_now():
    return query("SELECT extract(epoch FROM clock_timestamp())::float8")[0][0]


def sleep_until(epoch):
    """Sleeps until the server's clock (the same host's) reads `epoch`."""
    while True:
        left = epoch - server_now()
        if left <= 0:
            return
        time.sleep(min(left, 5))


def settle():
    with connect() as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")


LOADS = []                     # (phase, 1-minute load average at its end): the machine may be shared


def loaded(phase):
    LOADS.append((phase, os.getloadavg()[0]))


def unschedule_pg_jobs(prefix):
    """Removes pg_jobs' schedules named prefix_*. The table lock waits for a launcher transaction
    that is firing them, and keeps the next one from starting (and racing the removal for the
    rows) until they are gone."""
    with connect() as conn, conn.transaction():
        conn.execute("LOCK TABLE pgjobs.schedules IN EXCLUSIVE MODE")
        conn.execute("SELECT count(pgjobs.jobs_unschedule(name)) FROM pgjobs.schedules WHERE name LIKE %s",
                     [prefix + "\\_%"])


def reset_pg_jobs():
    execute("TRUNCATE pgjobs.jobs, pgjobs.job_keys, pgjobs.job_history, pgjobs.job_runs")


# Setup ------------------------------------------------------------------------------------------

def install_pg_cron():
    if PG_CRON_LIBRARY.exists():
        return
    log("installing postgresql-15-cron")
    try:
        sh("as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15-cron >/dev/null")
    except RuntimeError:
        sh("as_root apt-get update -qq && "
           "as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15-cron >/dev/null")


def start_fresh_cluster():
    """A new cluster every run, so that no run inherits another's jobs, history or statistics."""
    directory = sh(f"stop_cluster {CLUSTER}; cluster_dir {CLUSTER}").strip()
    if not directory.endswith(f"/{CLUSTER}"):
        raise RuntimeError(f"unexpected cluster folder {directory!r}")
    sh(f'rm -rf "{directory}/data" "{directory}/server.log"')
    log(f"starting cluster {CLUSTER} on port {PORT} in {directory}")
    sh(f"start_cluster {CLUSTER} {PORT} {DATABASE} >/dev/null")
    conf = Path(directory) / "data" / "postgresql.conf"
    with conf.open("a") as out:
        out.write(CONF)
    sh(f'as_db_user "$PG_BIN/pg_ctl" -D "{directory}/data" -l "{directory}/server.log" -w restart >/dev/null')
    return directory


def create_database():
    with connect("postgres") as conn:
        conn.execute(f"CREATE DATABASE {DATABASE}")
    for attempt in range(10):
        try:
            execute("CREATE EXTENSION pg_jobs CASCADE")
            break
        except psycopg.Error as error:
            # The extension's SQL may be reinstalled underneath us by someone else's build.
            log(f"CREATE EXTENSION pg_jobs failed ({error}); retrying")
            time.sleep(5)
    else:
        raise RuntimeError("CREATE EXTENSION pg_jobs kept failing")
    execute("CREATE EXTENSION pg_cron")
    execute("CREATE TABLE fired (name text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        [(pg_jobs_alive, pg_cron_alive)] = query("""
            SELECT coalesce((SELECT alive FROM pgjobs.launcher), false),
                   EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'pg_cron launcher'
                           AND datname = current_database())""")
        if pg_jobs_alive and pg_cron_alive:
            return
        time.sleep(0.5)
    raise RuntimeError(f"launchers not running after 60 s: pg_jobs {pg_jobs_alive}, pg_cron {pg_cron_alive}")


def settings():
    names = ["server_version", "pg_jobs.max_workers", "pg_jobs.refresh_interval", "cron.max_running_jobs",
             "cron.use_background_workers", "cron.host", "cron.log_run", "max_worker_processes",
             "max_connections", "track_commit_timestamp", "fsync", "synchronous_commit", "shared_buffers"]
    values = query("SELECT " + ", ".join(f"current_setting('{name}')" for name in names))[0]
    [(cron_version,)] = query("SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'")
    package = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "postgresql-15-cron"],
                             capture_output=True, text=True).stdout or "?"
    described = dict(zip(names, values))
    revision = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                              capture_output=True, text=True).stdout.strip() or "?"
    library = Path("/usr/lib/postgresql/15/lib/pg_jobs.so")
    installed = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(library.stat().st_mtime))
    return (f"Settings: pg_jobs as installed {installed} (checkout {revision}), "
            f"PostgreSQL {described.pop('server_version')}, pg_cron {cron_version} "
            f"(package {package}), {len(os.sched_getaffinity(0))} CPUs, load average "
            f"{os.getloadavg()[0]:.2f} at the start; "
            + ", ".join(f"{name} = {value}" for name, value in described.items())
            + "; everything else stock.")


# Statistics -------------------------------------------------------------------------------------

def percentile(ordered, fraction):
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def lateness(samples, expected):
    """p50, p99, max in ms of `expected` slots, of which `samples` (seconds) were fired; a slot
    not fired by the end of the measurement is later than any, and shown as "unfired"."""
    ordered = sorted(samples) + [math.inf] * max(0, expected - len(samples))
    if not ordered:
        return ["—"] * 3
    return ["unfired" if math.isinf(value) else f"{value * 1000:,.1f}"
            for value in (percentile(ordered, 0.50), percentile(ordered, 0.99), ordered[-1])]


# 1. Per-second schedules ------------------------------------------------------------------------

class PickupWorker(threading.Thread):
    """A worker of `queue` as the README's: LISTENs for its queue's signal, claims what is ready
    when woken (or after 2 s, its poll), completes it; keeps each job's slot (epoch seconds) and
    how long after it the claim took the job."""

    def __init__(self, queue):
        super().__init__(daemon=True)
        self.queue, self.samples, self.stopping = queue, [], threading.Event()

    def run(self):
        with connect() as conn:
            [(signal,)] = conn.execute("SELECT pgjobs.jobs_ready_signal(%s)", [self.queue]).fetchall()
            conn.execute("LISTEN pgjobs_ready")
            while not self.stopping.is_set():
                # The jobs row read is the one before the claim (the statement's snapshot).
                claimed = conn.execute("""
                    SELECT c.id, c.lease_token, extract(epoch FROM j.due_at)::float8,
                           extract(epoch FROM clock_timestamp() - j.due_at)::float8
                    FROM pgjobs.jobs_claim('bench-worker', ARRAY[%s], 1000) c
                    JOIN pgjobs.jobs j ON j.id = c.id""", [self.queue]).fetchall()
                if claimed:
                    self.samples += [(slot, late) for _, _, slot, late in claimed]
                    conn.execute("SELECT pgjobs.jobs_complete(%s::bigint[], %s::uuid[])",
                                 [[c[0] for c in claimed], [c[1] for c in claimed]])
                    continue
                for notification in conn.notifies(timeout=2.0):
                    if notification.payload == signal:
                        break


def pg_jobs_per_second():
    log(f"pg_jobs: {PER_SECOND_SCHEDULES:,} schedules 'every 1 second' and {PICKED_UP_SCHEDULES} more "
        f"for a listening worker, {PER_SECOND_SLOTS} s")
    reset_pg_jobs()
    settle()
    worker = PickupWorker("bench_picked")
    worker.start()
    execute("""SELECT count(pgjobs.jobs_schedule('sec_' || i, 'every 1 second',
                                                 '{"task": "tick", "queue": "bench_sec"}'))
               FROM generate_series(1, %s) i""", [PER_SECOND_SCHEDULES])
    execute("""SELECT count(pgjobs.jobs_schedule('sec_picked_' || i, 'every 1 second',
                                                 '{"task": "tick", "queue": "bench_picked"}'))
               FROM generate_series(1, %s) i""", [PICKED_UP_SCHEDULES])
    first = math.ceil(server_now()) + PER_SECOND_SETTLE
    last = first + PER_SECOND_SLOTS - 1
    sleep_until(last + PER_SECOND_GRACE)
    unschedule_pg_jobs("sec")
    worker.stopping.set()
    worker.join()
    loaded("pg_jobs per-second")
    rows = query("""
        SELECT extract(epoch FROM pg_xact_commit_timestamp(j.xmin) - j.due_at)::float8,
               extract(epoch FROM j.start_time - j.due_at)::float8
        FROM pgjobs.jobs j
        WHERE j.queue = 'bench_sec' AND j.due_at BETWEEN to_timestamp(%s) AND to_timestamp(%s)""",
                 [first, last])
    ticks = launcher_transactions("bench_sec")
    expected = PER_SECOND_SCHEDULES * PER_SECOND_SLOTS
    picked = [late for slot, late in worker.samples if first <= slot <= last]
    log(f"  {len(rows):,} of {expected:,} slots fired; {len(picked):,} jobs picked up by the worker")
    return {
        "ticks": ticks,
        "fired": (len(rows), expected),
        "committed": lateness([r[0] for r in rows], expected),
        "claimable": lateness([max(r[0], 0.0) for r in rows], expected),
        "started": lateness([r[1] for r in rows], expected),
        "picked up": lateness(picked, PICKED_UP_SCHEDULES * PER_SECOND_SLOTS),
    }


def launcher_transactions(queue):
    """The launcher transactions that added a queue's jobs: jobs, slots covered, and how long
    each took from its start (the jobs' start_time) to its commit."""
    ticks = query("""
        SELECT count(*), count(DISTINCT due_at),
               extract(epoch FROM pg_xact_commit_timestamp(xmin) - min(start_time))::float8
        FROM pgjobs.jobs WHERE queue = %s
        GROUP BY pg_xact_commit_timestamp(xmin) ORDER BY pg_xact_commit_timestamp(xmin)""", [queue])
    log(f"  {len(ticks)} launcher transactions (jobs, slots, seconds): "
        + ", ".join(f"{jobs} {slots} {seconds:.2f}" for jobs, slots, seconds in ticks))
    return ticks


def pg_cron_per_second():
    """pg_cron 1.5 added interval schedules of seconds; 1.4.2 rejects them. Returns the error, or
    the figures if this pg_cron takes them."""
    log(f"pg_cron: {PER_SECOND_SCHEDULES:,} schedules '1 seconds', {PER_SECOND_SLOTS} s")
    try:
        execute("SELECT cron.schedule('probe', '1 seconds', 'SELECT 1')")
    except psycopg.Error as error:
        message = str(error).strip().splitlines()[0]
        log(f"  pg_cron does not take '1 seconds': {message}")
        return {"error": message}
    execute("SELECT cron.unschedule('probe')")
    execute("TRUNCATE fired")
    settle()
    execute("""SELECT count(cron.schedule('sec_' || i, '1 seconds',
                                          format('INSERT INTO fired (name) VALUES (%%L)', 'sec_' || i)))
               FROM generate_series(1, %s) i""", [PER_SECOND_SCHEDULES])
    first = math.ceil(server_now()) + PER_SECOND_SETTLE
    last = first + PER_SECOND_SLOTS - 1
    sleep_until(last + PER_SECOND_GRACE)
    execute("UPDATE cron.job SET active = false WHERE jobname LIKE 'sec\\_%'")
    time.sleep(2)
    # Interval jobs have no slot of their own: the whole second each run falls in stands for it,
    # so lateness of a second or more cannot be seen this way.
    rows = query("""SELECT extract(epoch FROM at - date_trunc('second', at))::float8 FROM fired
                    WHERE name LIKE 'sec\\_%%' AND at >= to_timestamp(%s) AND at < to_timestamp(%s)""",
                 [first, last + 1])
    execute("DELETE FROM cron.job WHERE jobname LIKE 'sec\\_%'")
    expected = PER_SECOND_SCHEDULES * PER_SECOND_SLOTS
    return {"fired": (len(rows), expected), "committed": lateness([r[0] for r in rows], expected)}


# 2. Per-minute schedules ------------------------------------------------------------------------

def boundaries_after(epoch):
    first = (math.floor(epoch / 60) + 1) * 60
    return [first + 60 * n for n in range(PER_MINUTE_BOUNDARIES)]


def pg_jobs_per_minute():
    log(f"pg_jobs: {PER_MINUTE_SCHEDULES:,} schedules '* * * * *'")
    reset_pg_jobs()
    settle()
    started = time.monotonic()
    execute("""SELECT count(pgjobs.jobs_schedule('min_' || i, '* * * * *',
                                                 '{"task": "tick", "queue": "bench_min"}'))
               FROM generate_series(1, %s) i""", [PER_MINUTE_SCHEDULES])
    created = server_now()
    log(f"  made in {time.monotonic() - started:.1f} s")
    # A boundary that passed while they were being made fires late; it is not measured.
    slots = boundaries_after(created + 1)
    log(f"  measuring the boundaries at {', '.join(time.strftime('%H:%M:%S', time.gmtime(s)) for s in slots)} UTC")
    sleep_until(slots[-1])
    deadline = slots[-1] + PER_MINUTE_DEADLINE
    while server_now() < deadline:
        [(done,)] = query("SELECT count(*) FROM pgjobs.jobs WHERE queue = 'bench_min' AND due_at = to_timestamp(%s)",
                          [slots[-1]])
        if done >= PER_MINUTE_SCHEDULES:
            break
        time.sleep(1)
    unschedule_pg_jobs("min")
    loaded("pg_jobs per-minute")
    rows = query("""
        SELECT extract(epoch FROM j.due_at)::float8,
               extract(epoch FROM pg_xact_commit_timestamp(j.xmin) - j.due_at)::float8,
               extract(epoch FROM j.start_time - j.due_at)::float8
        FROM pgjobs.jobs j
        WHERE j.queue = 'bench_min' AND j.due_at = ANY (ARRAY(SELECT to_timestamp(s) FROM unnest(%s::float8[]) s))""",
                 [slots])
    ticks = launcher_transactions("bench_min")
    per_slot = {slot: [r for r in rows if abs(r[0] - slot) < 0.5] for slot in slots}
    expected = PER_MINUTE_SCHEDULES * len(slots)
    return {
        "slots": slots,
        "ticks": ticks,
        "within_minute": [sum(1 for r in per_slot[s] if r[1] < 60) for s in slots],
        "by_boundary": [lateness([r[1] for r in per_slot[s]], PER_MINUTE_SCHEDULES) for s in slots],
        "started": lateness([r[2] for r in rows], expected),
        "fired": (len(rows), expected),
    }


def pg_cron_per_minute():
    log(f"pg_cron: {PER_MINUTE_SCHEDULES:,} jobs '* * * * *'")
    execute("TRUNCATE fired, cron.job_run_details")
    settle()
    started = time.monotonic()
    # Made with a schedule that never fires, then switched on at once by one UPDATE, so that
    # every job's first run belongs to the same boundary.
    execute("""SELECT count(cron.schedule('min_' || i, %s,
                                          format('INSERT INTO fired (name) VALUES (%%L)', 'min_' || i)))
               FROM generate_series(1, %s) i""", [NEVER, PER_MINUTE_SCHEDULES])
    log(f"  made in {time.monotonic() - started:.1f} s")
    now = server_now()
    if boundaries_after(now)[0] - now < 3:
        sleep_until(boundaries_after(now)[0] + 0.5)
    execute("UPDATE cron.job SET schedule = '* * * * *' WHERE jobname LIKE 'min\\_%'")
    slots = boundaries_after(server_now())
    log(f"  measuring the boundaries at {', '.join(time.strftime('%H:%M:%S', time.gmtime(s)) for s in slots)} UTC")
    sleep_until(slots[-1])
    deadline = slots[-1] + PER_MINUTE_DEADLINE
    expected = PER_MINUTE_SCHEDULES * len(slots)
    while server_now() < deadline:
        [(done,)] = query("SELECT count(*) FROM fired WHERE name LIKE 'min\\_%'")
        if done >= expected:
            break
        time.sleep(1)
    execute("UPDATE cron.job SET active = false WHERE jobname LIKE 'min\\_%'")
    time.sleep(2)
    # A job's n-th run (by runid, failed ones included) is its n-th slot: runs left over from one
    # minute wait for their job and go first (pg_cron counts pending runs per job). Only a run
    # that succeeded inserted into `fired`, so a job's k-th row there is its k-th successful run.
    rows = query("""
        WITH runs AS (
            SELECT j.jobname AS name, d.status, d.start_time,
                   row_number() OVER (PARTITION BY d.jobid ORDER BY d.runid) AS n
            FROM cron.job_run_details d JOIN cron.job j USING (jobid)
            WHERE j.jobname LIKE 'min\\_%%'
        ), succeeded AS (
            SELECT name, n, start_time, row_number() OVER (PARTITION BY name ORDER BY n) AS k
            FROM runs WHERE status = 'succeeded'
        ), ran AS (
            SELECT name, at, row_number() OVER (PARTITION BY name ORDER BY at) AS k
            FROM fired WHERE name LIKE 'min\\_%%'
        )
        SELECT s.n, extract(epoch FROM r.at)::float8, extract(epoch FROM s.start_time)::float8
        FROM succeeded s JOIN ran r USING (name, k)
        WHERE s.n <= %s""", [len(slots)])
    ran = [[at - slots[n - 1] for m, at, _ in rows if m == n] for n in range(1, len(slots) + 1)]
    statuses = query("""SELECT status || coalesce(' (' || left(return_message, 60) || ')', ''), count(*)
                        FROM cron.job_run_details WHERE status <> 'succeeded' OR return_message IS NULL
                           OR return_message NOT LIKE 'INSERT%'
                        GROUP BY 1
                        UNION ALL
                        SELECT 'succeeded', count(*) FROM cron.job_run_details WHERE status = 'succeeded'
                        ORDER BY 2 DESC""")
    log("  job_run_details: " + ", ".join(f"{status} {n}" for status, n in statuses))
    loaded("pg_cron per-minute")
    execute("DELETE FROM cron.job WHERE jobname LIKE 'min\\_%'")
    return {
        "slots": slots,
        "within_minute": [sum(1 for late in boundary if late < 60) for boundary in ran],
        "by_boundary": [lateness(boundary, PER_MINUTE_SCHEDULES) for boundary in ran],
        "started": lateness([started - slots[n - 1] for n, _, started in rows], expected),
        "fired": (len(rows), expected),
        "statuses": statuses,
    }


# 3. SQL jobs ------------------------------------------------------------------------------------

def pg_jobs_sql_jobs():
    log(f"pg_jobs: {SQL_JOBS:,} SQL jobs 'SELECT 1' added at once")
    reset_pg_jobs()
    settle()
    with connect() as conn:
        conn.execute("SELECT count(pgjobs.jobs_add_sql('SELECT 1')) FROM generate_series(1, %s)", [SQL_JOBS])
        [(added,)] = conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchall()
    deadline = time.monotonic() + SQL_JOBS_TIMEOUT
    most_at_once = 0
    while time.monotonic() < deadline:
        [(finished, running)] = query("""
            SELECT (SELECT count(*) FROM pgjobs.job_history WHERE queue = 'pg_jobs.sql'),
                   (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_jobs sql executor')""")
        most_at_once = max(most_at_once, running)
        if finished >= SQL_JOBS:
            break
        time.sleep(0.2)
    [(completed, last_end, runs)] = query("""
        SELECT (SELECT count(*) FROM pgjobs.job_history WHERE queue = 'pg_jobs.sql' AND status = 'completed'),
               (SELECT extract(epoch FROM max(ended_at))::float8 FROM pgjobs.job_runs),
               (SELECT count(*) FROM pgjobs.job_runs)""")
    elapsed = (last_end or added) - added
    log(f"  {completed:,} completed ({runs:,} runs) in {elapsed:.1f} s; at most {most_at_once} executors seen at once")
    loaded("pg_jobs SQL jobs")
    return {"completed": completed, "elapsed": elapsed,
            "rate": completed / elapsed if elapsed > 0 else 0.0, "most_at_once": most_at_once}


# Report -----------------------------------------------------------------------------------------

def ratio(a, b):
    try:
        a, b = float(a.replace(",", "")), float(b.replace(",", ""))
    except (AttributeError, ValueError):
        return "—"
    return f"{a / b:.3g}" if b else "—"


def table(settings_line, sec_jobs, sec_cron, min_jobs, min_cron, sql):
    rows = []
    n_sec, n_min = f"{PER_SECOND_SCHEDULES:,}", f"{PER_MINUTE_SCHEDULES:,}"
    for i, name in enumerate(("p50", "p99", "max")):
        cron = sec_cron["committed"][i] if "error" not in sec_cron else "not supported¹"
        rows.append((f"{n_sec} per-second schedules, {PER_SECOND_SLOTS} s: firing lateness {name}, ms "
                     f"(lower is better; pg_jobs: job committed, pg_cron: command ran)",
                     sec_jobs["committed"][i], cron))
    for i, name in enumerate(("p50", "p99", "max")):
        rows.append((f"{n_sec} per-second schedules: pg_jobs job claimable (max(commit, slot)) − slot, {name}, ms "
                     f"(lower is better)", sec_jobs["claimable"][i], "—"))
    for i, name in enumerate(("p50", "p99", "max")):
        rows.append((f"{PICKED_UP_SCHEDULES} per-second schedules beside them: their job claimed by a worker "
                     f"LISTENing for its queue − slot, {name}, ms (lower is better)", sec_jobs["picked up"][i], "—"))
    for i, name in enumerate(("p50", "p99", "max")):
        rows.append((f"{n_sec} per-second schedules: pg_jobs job's start_time (tick began) − slot, {name}, ms "
                     f"(lower is better)", sec_jobs["started"][i], "—"))
    fired_cron = (f"{sec_cron['fired'][0]:,} / {sec_cron['fired'][1]:,}" if "error" not in sec_cron
                  else "not supported¹")
    rows.append((f"{n_sec} per-second schedules: slots fired / due (higher is better)",
                 f"{sec_jobs['fired'][0]:,} / {sec_jobs['fired'][1]:,}", fired_cron))
    for b in range(PER_MINUTE_BOUNDARIES):
        for i, name in enumerate(("p50", "p99", "max")):
            rows.append((f"{n_min} per-minute schedules, minute boundary {b + 1}: lateness {name}, ms "
                         f"(lower is better; pg_jobs: job committed, pg_cron: command ran)",
                         min_jobs["by_boundary"][b][i], min_cron["by_boundary"][b][i]))
        rows.append((f"{n_min} per-minute schedules, minute boundary {b + 1}: slots fired (pg_jobs) / run "
                     f"(pg_cron) within their minute (higher is better)",
                     f"{min_jobs['within_minute'][b]:,}", f"{min_cron['within_minute'][b]:,}"))
    for i, name in enumerate(("p50", "p99", "max")):
        rows.append((f"{n_min} per-minute schedules, all boundaries: pg_jobs job's start_time − slot / pg_cron "
                     f"job_run_details.start_time − slot, {name}, ms (lower is better)",
                     min_jobs["started"][i], min_cron["started"][i]))
    rows.append((f"{n_min} per-minute schedules: slots fired / run by {PER_MINUTE_DEADLINE} s after the last "
                 f"boundary, of {min_jobs['fired'][1]:,} (higher is better)",
                 f"{min_jobs['fired'][0]:,}", f"{min_cron['fired'][0]:,}"))
    rows.append((f"No-op SQL jobs ('SELECT 1'), {SQL_JOBS:,} added at once: completed per second "
                 f"(higher is better; pg_jobs.max_workers 4)", f"{sql['rate']:,.1f}", "no queue²"))

    lines = ["| Figure | pg_jobs | pg_cron | pg_jobs ÷ pg_cron |", "|---|---:|---:|---:|"]
    for figure, jobs, cron in rows:
        lines.append(f"| {figure} | {jobs} | {cron} | {ratio(jobs, cron)} |")
    notes = [
        "",
        settings_line,
        "",
        "Lateness: pg_jobs' schedules add queued task jobs; \"job committed\" is the commit time of the "
        "launcher transaction that added the slot's job minus the slot (below 0: fired ahead of the slot, "
        "the job due at it, so a worker can first claim it at max(commit, slot)); start_time is that "
        "transaction's now(). pg_cron's jobs run `INSERT ... clock_timestamp()` over a "
        "new libpq connection each; lateness is that time minus the slot. \"unfired\": the percentile falls on a slot "
        f"that was not fired (pg_jobs: skipped as more than pg_jobs.refresh_interval late, or not fired "
        f"{PER_SECOND_GRACE} s after the last per-second slot) or not run (pg_cron: by {PER_MINUTE_DEADLINE} s "
        "after the last minute boundary).",
    ]
    if "error" in sec_cron:
        notes.append(f"¹ This pg_cron rejects `cron.schedule('probe', '1 seconds', ...)`: "
                     f"`{sec_cron['error']}` (interval schedules in seconds arrived in pg_cron 1.5).")
    notes.append("² pg_cron has no queue of jobs to run, so there is nothing to compare. "
                 f"pg_jobs: {sql['completed']:,} of {SQL_JOBS:,} completed in {sql['elapsed']:.1f} s; "
                 f"at most {sql['most_at_once']} executors were seen running at once.")
    notes.append("pg_cron job_run_details in the per-minute run: "
                 + ", ".join(f"{status} {n:,}" for status, n in min_cron["statuses"]) + ".")
    sec_ticks = sorted(seconds for _, _, seconds in sec_jobs["ticks"])
    if sec_ticks:
        notes.append(f"pg_jobs' launcher fired the per-second schedules in {len(sec_ticks)} transactions "
                     f"(about {PER_SECOND_SLOTS + PER_SECOND_SETTLE + PER_SECOND_GRACE} s of slots), each from "
                     f"its start to its commit p50 {percentile(sec_ticks, 0.5):.2f} s, max {sec_ticks[-1]:.2f} s; "
                     f"at most {max(slots for _, slots, _ in sec_jobs['ticks'])} slot(s) of each schedule in one.")
    notes.append("pg_jobs' launcher fired the per-minute schedules in transactions of "
                 + ", ".join(f"{jobs:,} jobs ({slots} slot{'s' if slots > 1 else ''}) taking {seconds:.1f} s"
                             for jobs, slots, seconds in min_jobs["ticks"]) + " from start to commit.")
    notes.append("Load average (1 min) at the end of each phase: "
                 + ", ".join(f"{phase} {load:.2f}" for phase, load in LOADS) + ".")
    return "\n".join(lines + notes) + "\n"


def main():
    begun = time.monotonic()
    install_pg_cron()
    start_fresh_cluster()
    try:
        create_database()
        settings_line = settings()
        log(settings_line)
        sec_jobs = pg_jobs_per_second()
        sec_cron = pg_cron_per_second()
        sql = pg_jobs_sql_jobs()
        min_jobs = pg_jobs_per_minute()
        reset_pg_jobs()
        min_cron = pg_cron_per_minute()
        report = table(settings_line, sec_jobs, sec_cron, min_jobs, min_cron, sql)
    finally:
        log(f"stopping cluster {CLUSTER}")
        sh(f"stop_cluster {CLUSTER}")
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(report)
    print(report)
    log(f"done in {time.monotonic() - begun:.0f} s; written to {OUTPUT}")


if __name__ == "__main__":
    main()
