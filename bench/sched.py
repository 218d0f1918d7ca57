"""What the SCHED page's reads cost with a large store: the Jobs tab's group request and a
group's first 200 jobs with 1,000,000 active batch jobs, the Realtime tab's request with 1,000
routines, and the Queues and Schedules tabs' requests with 1,000,000 queued jobs and 1,000,000
finished this month (issue 31's rule: each at most 100 ms p99), each timed through pg_jobs_web
(HTTP on loopback, the server connected as the role logged in), p50 and p99 in ms over
SCHED_SAMPLES requests. Prints one Markdown table and writes it to target/bench/sched.md. It
measures and reports; it asserts nothing about the figures.

It uses the cluster scripts/bench.sh started (port 28817, which trusts localhost), makes
database `bench_sched` there anew (the background worker works in `bench`, so the routines'
state is read in by calling the scheduler's round by hand), a role bench_sched_owner, and runs
target/release/pg_jobs_web on port 28819. SCHED_JOBS changes the number of jobs of each kind,
SCHED_SAMPLES the requests timed per figure (20), SCHED_PG_PORT the cluster's port.

    target/bench-venv/bin/python bench/sched.py
"""

import http.cookiejar
import json
import os
import statistics
import subprocess
import time
import urllib.parse
import urllib.request

import psycopg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORT = int(os.environ.get("SCHED_PG_PORT", "28817"))
WEB_PORT = 28819
JOBS = int(os.environ.get("SCHED_JOBS", "1000000"))
ROUTINES = 1000
SAMPLES = int(os.environ.get("SCHED_SAMPLES", "20"))
OWNER = "bench_sched_owner"
QUEUE = "bench_mail"
SCHEDULES = 20


def log(message):
    print(f"==> {message}", flush=True)


def connect(dbname):
    return psycopg.connect(f"host=localhost port={PORT} user=postgres dbname={dbname}", autocommit=True)


def prepare():
    with connect("postgres") as conn:
        conn.execute("DROP DATABASE IF EXISTS bench_sched WITH (FORCE)")
        conn.execute("CREATE DATABASE bench_sched")
        conn.execute(f"""DO $$BEGIN
                           CREATE ROLE {OWNER} LOGIN IN ROLE pgjobs_user;
                         EXCEPTION WHEN duplicate_object THEN NULL; END$$""")
    with connect("bench_sched") as conn:
        conn.execute("CREATE EXTENSION pg_jobs CASCADE")
        log(f"adding {JOBS:,} batch jobs: 50 routines, due over 1,000 minutes")
        started = time.monotonic()
        # Through the queue's own add, 100,000 at a time; as batch_post makes them, without its
        # per-call checks.
        for first in range(0, JOBS, 100_000):
            conn.execute("""
                SELECT count(*) FROM pgjobs._add(ARRAY(
                    SELECT ROW('batch',
                               jsonb_build_object('kind', 'batch', 'computer', 'ANY', 'routine', 'routine_' || (i %% 50),
                                                  'command', 'echo', 'args', jsonb_build_array('job ' || i),
                                                  'cwd', NULL, 'shell', false, 'env', '{}'::jsonb, 'revision', NULL,
                                                  'extra', '{}'::jsonb, 'depends_on', '[]'::jsonb, 'run_at', NULL),
                               'pg_jobs.batch:ANY', 0,
                               date_trunc('minute', now()) + make_interval(mins => i %% 1000), 1, NULL, NULL,
                               interval '1 hour', encode(sha256(('job ' || i)::bytea), 'hex'), 'replace', NULL, NULL)::pgjobs.job_spec
                    FROM generate_series(%s::integer, %s::integer) i), %s::regrole::oid, true, false)""",
                         (first, min(first + 100_000, JOBS) - 1, OWNER))
        # The Jobs tab's counts, which batch_post keeps and _add does not.
        conn.execute("SELECT pgjobs._batch_tally_rebuild()")
        conn.execute("ANALYZE pgjobs.jobs")
        log(f"added in {time.monotonic() - started:.0f} s")
        csv = "routine,group,external,realtime,runtimes,args,dependencies,computer,seq,command\n" + "".join(
            f"{OWNER}@host{i % 20}:feeds.feed{i},GROUP{i % 25},false,true,,--fast,,,,\n" for i in range(ROUTINES))
        conn.execute(f"SET ROLE {OWNER}")
        conn.execute("SELECT pgjobs.routines_import('BENCH', %s)", (csv,))
        conn.execute("SELECT pgjobs.routines_set_mode('BENCH', 'observe')")
        conn.execute("RESET ROLE")
        conn.execute("SELECT pgjobs._routines_tick(now())")
        prepare_queue(conn)


def prepare_queue(conn):
    """JOBS queue jobs of the owner waiting in QUEUE, JOBS of its finished ones due this month
    (one in a hundred failed, their ends spread over the last two days, so that the last hour
    holds some), and SCHEDULES cron schedules."""
    log(f"adding {JOBS:,} queue jobs and {JOBS:,} finished ones this month")
    started = time.monotonic()
    conn.execute(f"SET ROLE {OWNER}")
    for first in range(0, JOBS, 10_000):
        conn.execute("""SELECT count(*) FROM pgjobs.jobs_add_batch((
                            SELECT jsonb_agg(jsonb_build_object('task', 'send', 'queue', %s::text,
                                                                'payload', jsonb_build_object('to', 'user-' || i || '@example.org')))
                            FROM generate_series(%s::integer, %s::integer) i))""",
                     (QUEUE, first, min(first + 10_000, JOBS) - 1))
    for n in range(SCHEDULES):
        conn.execute("SELECT pgjobs.jobs_schedule(%s, '*/5 * * * *', jsonb_build_object('task', 'report', 'queue', %s::text))",
                     (f"report_{n}", QUEUE))
    conn.execute("RESET ROLE")
    # The months' partitions, which the background worker makes in its own database only.
    conn.execute("SELECT count(*) FROM pgjobs.jobs_history_prepare()")
    # Written directly, as the completions would have moved them.
    conn.execute("""
        INSERT INTO pgjobs.job_history (id, owner, status, task, queue, priority, payload, result,
                                        errors, attempts, max_attempts, due_at, start_time, end_time, listed)
        SELECT nextval('pgjobs.jobs_id_seq'), %s::regrole::oid,
               CASE WHEN i %% 100 = 0 THEN 'failed' ELSE 'completed' END::pgjobs.job_status,
               'send', %s, 0, jsonb_build_object('to', 'user-' || i || '@example.org'),
               CASE WHEN i %% 100 = 0 THEN '{"error": "mailbox full"}' ELSE '{}' END::jsonb, '[]', 1, 25,
               e.at - interval '1 second', e.at - interval '2 seconds', e.at, false
        FROM generate_series(1, %s) i,
             LATERAL (SELECT greatest(date_trunc('month', now()) + interval '3 seconds',
                                      now() - make_interval(secs => i %% 172800)) AS at) e""",
                 (OWNER, QUEUE, JOBS))
    # A day of the queue's minutes, as the launcher writes them down in its own database.
    conn.execute("""
        INSERT INTO pgjobs.queue_minutes (owner, queue, minute, completed, failed, ready, scheduled,
                                          waiting, running, oldest_ready_at)
        SELECT %s::regrole::oid, %s, date_trunc('minute', now()) - make_interval(mins => m),
               600, 6, %s, 0, 0, 0, now() - interval '1 hour'
        FROM generate_series(1, 1440) m""", (OWNER, QUEUE, JOBS))
    # Every table vacuumed and analyzed, so that the reads timed neither set the new rows' hint
    # bits nor share the machine with autovacuum's first pass over them (the groups request took
    # a second, against 11 ms once autovacuum had been).
    conn.execute("VACUUM ANALYZE")
    log(f"added in {time.monotonic() - started:.0f} s")


class Page:
    def __init__(self):
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self.base = f"http://127.0.0.1:{WEB_PORT}"

    def login(self):
        form = urllib.parse.urlencode({"role": OWNER, "password": "trusted"}).encode()
        self.opener.open(self.base + "/login", form).read()
        self.get("/api/me")

    def get(self, path):
        with self.opener.open(self.base + path) as response:
            return json.loads(response.read())


def timed(page, path):
    page.get(path)  # once to warm the server's and the backend's caches
    samples = []
    for _ in range(SAMPLES):
        started = time.perf_counter()
        page.get(path)
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def main():
    prepare()
    web = subprocess.Popen([f"{ROOT}/target/release/pg_jobs_web", "--listen", f"127.0.0.1:{WEB_PORT}",
                            "--dsn", f"host=localhost port={PORT} dbname=bench_sched"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        page = Page()
        for _ in range(50):
            try:
                page.login()
                break
            except OSError:
                time.sleep(0.1)
        groups = page.get("/api/jobs/groups?by=time")
        first = groups[0]["group_key"]
        rows = [
            (f"Jobs tab: the groups (by time and routine; {len(groups):,} groups of {JOBS:,} active jobs)",
             timed(page, "/api/jobs/groups?by=time")),
            ("Jobs tab: a group's first 200 jobs",
             timed(page, "/api/jobs/group?" + urllib.parse.urlencode({"by": "time", "group": first}))),
            ("Jobs tab: the count of active jobs and the months",
             timed(page, "/api/jobs/summary")),
            (f"Realtime tab: schedules and today's routines ({ROUTINES:,} routines)",
             timed(page, "/api/routines")),
        ]
        newest = page.get("/api/queues/jobs?" + urllib.parse.urlencode({"queue": QUEUE}))
        rows += [
            (f"Queues tab: each queue with its counts ({JOBS:,} queued, {JOBS:,} finished this month; "
             "counted at the last minute's end once counting takes over 60 ms)",
             timed(page, "/api/queues")),
            ("Queues tab: a queue's charts, the last hour (a minute a bar)",
             timed(page, "/api/queues/minutes?" + urllib.parse.urlencode({"queue": QUEUE, "hours": 1}))),
            ("Queues tab: a queue's charts, the last day (10 minutes a bar)",
             timed(page, "/api/queues/minutes?" + urllib.parse.urlencode({"queue": QUEUE, "hours": 24}))),
            ("Queues tab: a queue's newest 200 jobs, live and finished",
             timed(page, "/api/queues/jobs?" + urllib.parse.urlencode({"queue": QUEUE}))),
            ("Queues tab: a queue's newest 200 failed jobs",
             timed(page, "/api/queues/jobs?" + urllib.parse.urlencode({"queue": QUEUE, "status": "failed"}))),
            ("Queues tab: a queue's next 200 jobs (offset 200)",
             timed(page, "/api/queues/jobs?" + urllib.parse.urlencode({"queue": QUEUE, "offset": 200}))),
            ("Queues tab: jobs whose payload holds a text (among the newest 10,000)",
             timed(page, "/api/queues/jobs?" + urllib.parse.urlencode({"queue": QUEUE, "q": "user-4242@"}))),
            ("Queues tab: what each action on the whole filter would take (the queue's newest 1,000)",
             timed(page, "/api/queues/jobs/counts?" + urllib.parse.urlencode({"queue": QUEUE}))),
            ("Queues tab: the same counts for a text (found among the newest 10,000)",
             timed(page, "/api/queues/jobs/counts?" + urllib.parse.urlencode({"queue": QUEUE, "q": "user-4242@"}))),
            ("Queues tab: one job's details",
             timed(page, "/api/queues/job?" + urllib.parse.urlencode({"id": newest[0]["id"]}))),
            (f"Schedules tab: the cron schedules ({SCHEDULES} of them)",
             timed(page, "/api/cron/schedules")),
            ("Schedules tab: a schedule's last runs",
             timed(page, "/api/cron/runs?" + urllib.parse.urlencode({"name": "report_0"}))),
        ]
    finally:
        web.terminate()
        web.wait()
    lines = ["| request | p50 ms | p99 ms |", "|---|---|---|"]
    lines += [f"| {name} | {p50:.1f} | {p99:.1f} |" for name, (p50, p99) in rows]
    table = "\n".join(lines)
    print(table)
    os.makedirs(f"{ROOT}/target/bench", exist_ok=True)
    with open(f"{ROOT}/target/bench/sched.md", "w") as out:
        out.write(table + "\n")


if __name__ == "__main__":
    main()
