"""pg_jobs' throughput and latency, as one Markdown table; run by scripts/bench.sh.

Expects the cluster that scripts/bench.sh starts (port 28817) with a fresh database `bench` in
which pg_jobs is created. Prints the table and writes it to target/bench/latest.md.
BENCH_QUICK=1 measures the claim with 100,000 jobs queued instead of 1,000,000.
"""

import datetime
import json
import os
import queue
import random
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

BENCH_DIR = Path(__file__).resolve().parent
OUTPUT = BENCH_DIR.parent / "target" / "bench" / "latest.md"
PGBENCH = "/usr/lib/postgresql/15/bin/pgbench"
CONNINFO = "host=localhost port=28817 user=postgres dbname=bench"
PGBENCH_CONNECTION = ["-h", "localhost", "-p", "28817", "-U", "postgres", "bench"]

CLIENTS = 8
THREADS = 2
SECONDS = 10
FILL_CHUNK = 10_000
FILL_CONNECTIONS = 2

# Every claim size drains a queue of the same size, exactly: each pgbench client runs
# DRAIN_JOBS / (CLIENTS × batch) claims, so the figures differ in nothing but the claim size.
# Large claims drain it in about a second; rounds repeat until DRAIN_SECONDS were timed.
DRAIN_JOBS = 8_000
DRAIN_BATCHES = (1, 10, 100)
DRAIN_SECONDS = 10

PICKUP_JOBS = 300

# A claim that sorts the whole queue (as pg_jobs' first one did) takes most of a second with a
# million jobs queued; the time limit keeps such a run within minutes, and the table says how
# many claims were timed.
CLAIM_ITERATIONS = 2000
CLAIM_SECONDS = 60
QUICK = os.environ.get("BENCH_QUICK") == "1"
QUEUE_SIZES = (10_000, 100_000 if QUICK else 1_000_000)

CLAIM_ONE = "SELECT * FROM pgjobs.jobs_claim('b', ARRAY['default'], 1)"


def log(message):
    print(f"==> {message}", file=sys.stderr, flush=True)


def connect():
    return psycopg.connect(CONNINFO, autocommit=True)


def execute(statement):
    with connect() as conn:
        conn.execute(statement)


def query(statement):
    with connect() as conn:
        return conn.execute(statement).fetchall()


def settle():
    """Starts a measurement from the same state: no garbage, fresh statistics, and no
    checkpoint's flush left over from the load that came before it."""
    with connect() as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")


def reset_queue():
    execute("TRUNCATE pgjobs.slices, pgjobs.jobs, pgjobs.job_keys, pgjobs.job_history")


def noop_jobs(count):
    return json.dumps([{"task": "noop"}] * count)


def fill_queue(count):
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


def pgbench(script, *, seconds=None, transactions=None, defines=()):
    """Runs a script from bench/ with CLIENTS clients, for `seconds` or for `transactions` per
    client; returns its transactions per second."""
    length = ["-T", str(seconds)] if seconds else ["-t", str(transactions)]
    args = [PGBENCH, "-n", "-M", "prepared", "-c", str(CLIENTS), "-j", str(THREADS), *length,
            "-f", str(BENCH_DIR / script)]
    for name, value in defines:
        args += ["-D", f"{name}={value}"]
    run = subprocess.run(args + PGBENCH_CONNECTION, capture_output=True, text=True)
    failed = re.search(r"number of failed transactions: (\d+)", run.stdout)
    if run.returncode != 0 or not failed or failed.group(1) != "0":
        raise RuntimeError(f"pgbench {script} failed (exit {run.returncode}):\n{run.stdout}{run.stderr}")
    return float(re.search(r"tps = ([\d.]+) \(without initial connection time\)", run.stdout).group(1))


def percentile(samples, fraction):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def in_ms(nanoseconds):
    return f"{nanoseconds / 1e6:.2f}"


def reference_commit_rate():
    log(f"reference: one-row UPDATE, {CLIENTS} clients, {SECONDS} s")
    execute("CREATE TABLE ref (id integer PRIMARY KEY, n bigint NOT NULL DEFAULT 0)")
    execute("INSERT INTO ref (id) SELECT generate_series(1, 10000)")
    settle()
    return pgbench("reference.sql", seconds=SECONDS)


def enqueue_rates():
    """Jobs added per second, one per transaction and 100 per transaction."""
    log(f"enqueue: jobs_add, {CLIENTS} clients, {SECONDS} s")
    reset_queue()
    settle()
    single = pgbench("enqueue_single.sql", seconds=SECONDS)
    log(f"enqueue: jobs_add_batch of 100, {CLIENTS} clients, {SECONDS} s")
    reset_queue()
    settle()
    batched = 100 * pgbench("enqueue_batch.sql", seconds=SECONDS, defines=[("jobs", noop_jobs(100))])
    return single, batched


def check_drained(batch):
    [(completed, finished_otherwise, slices_left, jobs_left)] = query("""
        SELECT (SELECT count(*) FROM pgjobs.job_history WHERE status = 'completed'),
               (SELECT count(*) FROM pgjobs.job_history WHERE status <> 'completed'),
               (SELECT count(*) FROM pgjobs.slices),
               (SELECT count(*) FROM pgjobs.jobs)""")
    if (completed, finished_otherwise, slices_left, jobs_left) != (DRAIN_JOBS, 0, 0, 0):
        raise RuntimeError(
            f"draining at batch {batch} did not complete every job: of {DRAIN_JOBS}, {completed} "
            f"completed, {finished_otherwise} finished otherwise, {slices_left} slices and "
            f"{jobs_left} jobs left")


def drain_rate(batch):
    """Jobs completed per second by CLIENTS workers claiming `batch` at a time."""
    log(f"drain: {CLIENTS} workers claiming {batch} at a time from {DRAIN_JOBS} jobs")
    completed = 0
    elapsed = 0.0
    while elapsed < DRAIN_SECONDS:
        reset_queue()
        fill_queue(DRAIN_JOBS)
        settle()
        started = time.monotonic()
        pgbench("drain.sql", transactions=DRAIN_JOBS // (CLIENTS * batch), defines=[("batch", batch)])
        elapsed += time.monotonic() - started
        check_drained(batch)
        completed += DRAIN_JOBS
    dead = query("""SELECT relname, n_dead_tup FROM pg_stat_user_tables
                    WHERE schemaname = 'pgjobs' AND relname IN ('jobs', 'slices') ORDER BY relname""")
    log(f"  {completed // DRAIN_JOBS} rounds in {elapsed:.1f} s; dead tuples after the last: "
        + ", ".join(f"{name} {n}" for name, n in dead))
    return completed / elapsed


def pickup_latency():
    """p50 and p99, in ns, from just before a job is added until an idle worker, woken by
    NOTIFY, has claimed it. One job at a time, so the worker is always idle when it arrives."""
    log(f"pickup latency: {PICKUP_JOBS} jobs, one at a time, to a LISTENing worker")
    reset_queue()
    settle()
    listening = threading.Event()
    latencies = queue.SimpleQueue()

    def worker():
        with connect() as conn:
            conn.execute("LISTEN pgjobs_ready")
            listening.set()
            for _ in range(PICKUP_JOBS):
                # The next job is added only after this one is handed back below, and nothing
                # runs on this connection from then until here, so no command can swallow the
                # notification: it waits in the socket if it comes early.
                if not list(conn.notifies(timeout=10, stop_after=1)):
                    raise RuntimeError("no notification on pgjobs_ready within 10 s of an add")
                claimed = conn.execute(CLAIM_ONE).fetchall()
                claimed_at = time.perf_counter_ns()
                if len(claimed) != 1:
                    raise RuntimeError(f"the woken worker claimed {len(claimed)} jobs, not 1")
                [(job, _, token, _, payload, _)] = claimed
                conn.execute("SELECT pgjobs.jobs_complete(%s, %s)", [job, token])
                latencies.put(claimed_at - payload["t"])

    with ThreadPoolExecutor(1) as pool, connect() as producer:
        listener = pool.submit(worker)
        if not listening.wait(10):
            listener.result(timeout=0)
        samples = []
        for _ in range(PICKUP_JOBS):
            # Random gaps, so that adds do not fall in step with anything periodic on the server.
            time.sleep(random.uniform(0.005, 0.025))
            producer.execute("SELECT pgjobs.jobs_add('noop', %s)", [Jsonb({"t": time.perf_counter_ns()})])
            try:
                samples.append(latencies.get(timeout=15))
            except queue.Empty:
                listener.result(timeout=0)
                raise
        listener.result()
    return percentile(samples, 0.50), percentile(samples, 0.99)


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
    reset_queue()
    results = {}
    for size in QUEUE_SIZES:
        log(f"claim latency: filling the queue to {size} jobs")
        [(queued,)] = query("SELECT count(*) FROM pgjobs.slices")
        fill_queue(size - queued)
        settle()
        log(f"claim latency: up to {CLAIM_ITERATIONS} claims or {CLAIM_SECONDS} s with {size} jobs queued")
        results[size] = claim_latency()
    return results


def environment():
    [(version, fsync, synchronous_commit, shared_buffers, max_connections)] = query("""
        SELECT current_setting('server_version'), current_setting('fsync'),
               current_setting('synchronous_commit'), current_setting('shared_buffers'),
               current_setting('max_connections')""")
    with open("/proc/cpuinfo") as cpuinfo:
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
                     "unknown model")
    revision = subprocess.run(["git", "-C", str(BENCH_DIR), "describe", "--always", "--dirty"],
                              capture_output=True, text=True).stdout.strip() or "unknown"
    # Anything else busy on the machine skews every figure; the load average shows it.
    load = os.getloadavg()[0]
    return [
        f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; pg_jobs {revision}",
        f"- Server: PostgreSQL {version}; fsync {fsync}, synchronous_commit {synchronous_commit}, "
        f"shared_buffers {shared_buffers}, max_connections {max_connections}",
        f"- Machine: {len(os.sched_getaffinity(0))} CPUs, {model}; load average {load:.2f} at the start",
        f"- Load: pgbench with {CLIENTS} clients and {THREADS} threads, prepared statements; "
        f"claim latency with up to {QUEUE_SIZES[-1]:,} jobs queued{' (BENCH_QUICK=1)' if QUICK else ''}",
    ]


def main():
    header = environment()
    rows = [("Reference: one-row UPDATE commits", f"{reference_commit_rate():,.0f}", "tx/s")]
    single, batched = enqueue_rates()
    rows.append(("Enqueue, jobs_add, 1 job per transaction", f"{single:,.0f}", "jobs/s"))
    rows.append(("Enqueue, jobs_add_batch, 100 jobs per transaction", f"{batched:,.0f}", "jobs/s"))
    for batch in DRAIN_BATCHES:
        rows.append((f"Drain, {CLIENTS} workers claiming {batch} at a time, {DRAIN_JOBS:,} jobs queued",
                     f"{drain_rate(batch):,.0f}", "jobs/s"))
    p50, p99 = pickup_latency()
    rows.append(("Pickup latency, idle LISTENing worker, p50", in_ms(p50), "ms"))
    rows.append(("Pickup latency, idle LISTENing worker, p99", in_ms(p99), "ms"))
    claims = claim_latencies()
    for size, (p50, p99, timed) in claims.items():
        rows.append((f"Claim latency, {size:,} jobs queued, p50 of {timed:,} claims", in_ms(p50), "ms"))
        rows.append((f"Claim latency, {size:,} jobs queued, p99 of {timed:,} claims", in_ms(p99), "ms"))
    small, large = QUEUE_SIZES
    for name, at in (("p50", 0), ("p99", 1)):
        rows.append((f"Claim latency {name}, {large:,} vs {small:,} jobs queued",
                     f"{claims[large][at] / claims[small][at]:.1f}", "×"))

    table = "\n".join([*header, "", "| Figure | Value | Unit |", "|---|---:|---|",
                       *(f"| {figure} | {value} | {unit} |" for figure, value, unit in rows)]) + "\n"
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(table)
    print(table)


if __name__ == "__main__":
    main()
