"""What the SCHED page's reads cost with a large store: the Jobs tab's group request and a
group's first 200 jobs with 1,000,000 active batch jobs, and the Realtime tab's request with
1,000 routines, each timed through pg_jobs_web (HTTP on loopback, the server connected as the
role logged in), p50 and p99 in ms over SCHED_SAMPLES requests. Prints one Markdown table and writes it
to target/bench/sched.md. It measures and reports; it asserts nothing about the figures.

It uses the cluster scripts/bench.sh started (port 28817, which trusts localhost), makes
database `bench_sched` there anew (the background worker works in `bench`, so the routines'
state is read in by calling the scheduler's round by hand), a role bench_sched_owner, and runs
target/release/pg_jobs_web on port 28819. SCHED_JOBS changes the number of jobs, SCHED_SAMPLES
the requests timed per figure (20), SCHED_PG_PORT the cluster's port.

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
                               interval '1 hour', encode(sha256(('job ' || i)::bytea), 'hex'), 'replace')::pgjobs.job_spec
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
