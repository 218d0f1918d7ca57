"""What row-level security costs pg_jobs' callers: the claim path and an owner's read of its
jobs, done by a role under RLS, against the same work done by the table owner (a superuser,
which bypasses RLS), with 100,100 jobs of 1,001 owners queued. Prints one Markdown table of
ratios (work or time per operation under RLS ÷ as the table owner) and writes it to
target/bench/access.md; the plans of every statement on both sides go to
target/bench/access-plans.txt. It measures and reports; it asserts nothing about the figures.

It starts a cluster of its own (target/accessbench, port 28860, pg_jobs preloaded, by
scripts/lib.sh's start_cluster), makes database `bench` there anew, creates 1,000 NOLOGIN roles
bench_owner_0001..1000 (members of pgjobs_user) with 100 jobs each, each added as that role, and
1,000 proxies bench_proxy_NNNN of them, and bench_bypass (a member of pgjobs_user with
BYPASSRLS); at the end it drops the roles and stops the cluster. Takes about 8 minutes (on 2
CPUs, longer when the machine is busy with other work); needs valgrind (scripts/bench.sh
installs it):

    target/bench-venv/bin/python bench/access.py

Three measures for every figure, all with prepared statements:
- instructions per call: valgrind's callgrind counting what a single-user backend executes, on
  a copy of a snapshot of the data directory taken after loading; exact and repeatable, so the
  target is judged by it (the difference it shows is a few µs in 60, which the timed measures
  below see through ±5 % of noise on a shared machine);
- throughput: pgbench, CLIENTS clients, the two sides run in turn RUN_SECONDS at a time,
  ROUNDS times each (RLS, owner, owner, RLS, ...); the ratio is the median over the pairs of
  runs side by side, so that other work on the machine, which comes and goes within seconds,
  falls on both sides alike;
- server CPU: one connection per side calling in a loop, the backend's CPU time read from
  /proc/PID/schedstat (the script runs on the server's machine): no client or network in it,
  though other load still moves it (caches, and in a VM, time stolen by the host).

ACCESS_ROUNDS, ACCESS_RUN_SECONDS change the throughput runs; ACCESS_KEEP=1 leaves the cluster
running and the roles in place, to look further.
"""

import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "target" / "bench" / "access.md"
PLANS_OUTPUT = ROOT / "target" / "bench" / "access-plans.txt"
CLUSTER = "accessbench"
PORT = 28860
PGBENCH = "/usr/lib/postgresql/15/bin/pgbench"
PGBENCH_CONNECTION = ["-h", "localhost", "-p", str(PORT), "-U", "postgres", "bench"]

OWNERS = 1000
JOBS_PER_OWNER = 100
CLIENTS = 4
THREADS = 2
RUN_SECONDS = int(os.environ.get("ACCESS_RUN_SECONDS", "1"))
ROUNDS = int(os.environ.get("ACCESS_ROUNDS", "20"))
# Server CPU: CPU_ROUNDS turns per side of CPU_SECONDS of calls each, after CPU_WARMUP calls.
CPU_ROUNDS = 16
CPU_SECONDS = 0.4
CPU_WARMUP = 50
TARGET = 1.10  # the target: at most 10 % overhead

OWNER = "bench_owner_0042"  # the role measured
PROXY = "bench_proxy_0042"  # a proxy acting for it
BYPASS = "bench_bypass"  # a member of pgjobs_user that RLS does not apply to


def log(message):
    print(f"==> {message}", file=sys.stderr, flush=True)


def lib_sh(command):
    """Runs a function of scripts/lib.sh (start_cluster, stop_cluster)."""
    return subprocess.run(["bash", "-c", f'source "{ROOT}/scripts/lib.sh"; {command}'],
                          check=True, capture_output=True, text=True).stdout


def connect(dbname="bench", role=None):
    """A connection as postgres; with `role`, every statement runs as that role (the startup
    option `role`, as SET ROLE would make it), which is how pgbench's side connects too."""
    options = {"options": f"-c role={role}"} if role else {}
    return psycopg.connect(f"host=localhost port={PORT} user=postgres dbname={dbname}",
                           autocommit=True, **options)


# --- Setting up ----------------------------------------------------------------------------

def drop_roles(conn):
    """Drops the bench roles, and first what they own or were granted in this database (roles
    are cluster-wide; `bench` is the only database where they hold anything)."""
    roles = [name for (name,) in conn.execute(
        "SELECT rolname FROM pg_roles WHERE rolname ~ '^bench_((owner|proxy)_[0-9]{4}|bypass)$' ORDER BY 1")]
    for start in range(0, len(roles), 200):
        names = sql.SQL(", ").join(sql.Identifier(r) for r in roles[start:start + 200])
        conn.execute(sql.SQL("DROP OWNED BY {}").format(names))
        conn.execute(sql.SQL("DROP ROLE {}").format(names))
    return len(roles)


def create_database():
    with connect("postgres") as conn:
        conn.execute("SET client_min_messages = warning")
        conn.execute("DROP DATABASE IF EXISTS bench WITH (FORCE)")
        # Left by a run that stopped half-way: their database is gone, so they own nothing.
        drop_roles(conn)
        conn.execute("CREATE DATABASE bench")
    for attempt in range(1, 7):
        try:
            with connect() as conn:
                conn.execute("SET client_min_messages = warning")
                conn.execute("CREATE EXTENSION pg_jobs CASCADE")
            return
        except psycopg.Error as error:
            # The installed extension's SQL may be being replaced right now; it settles.
            if attempt == 6:
                raise
            log(f"CREATE EXTENSION failed ({str(error).strip().splitlines()[0]}); retrying in 10 s")
            time.sleep(10)


def populate():
    """1,000 owner roles with 100 jobs each, added by each role itself; a proxy role for each
    owner; 100 jobs of the superuser's own (its side of the claim). Returns the owner's oid."""
    log(f"creating {OWNERS:,} owner roles and {OWNERS:,} proxies of them")
    with connect() as conn:
        conn.execute(f"""
            DO $$
            BEGIN
                FOR i IN 1..{OWNERS} LOOP
                    EXECUTE format('CREATE ROLE %I NOLOGIN IN ROLE pgjobs_user', 'bench_owner_' || lpad(i::text, 4, '0'));
                    EXECUTE format('CREATE ROLE %I NOLOGIN IN ROLE pgjobs_user', 'bench_proxy_' || lpad(i::text, 4, '0'));
                END LOOP;
            END
            $$""")
        conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN BYPASSRLS IN ROLE pgjobs_user").format(sql.Identifier(BYPASS)))
        conn.execute(f"""
            SELECT pgjobs.jobs_add_proxy(('bench_proxy_' || lpad(i::text, 4, '0'))::regrole,
                                         ('bench_owner_' || lpad(i::text, 4, '0'))::regrole)
            FROM generate_series(1, {OWNERS}) i""")

    log(f"adding {JOBS_PER_OWNER} jobs for each owner, as itself, and {JOBS_PER_OWNER} for the superuser")

    def batch(i):
        return json.dumps([{"task": "noop", "payload": {"owner": i, "n": n}} for n in range(JOBS_PER_OWNER)])

    with connect() as conn:
        with conn.pipeline():
            for i in range(1, OWNERS + 1):
                conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(f"bench_owner_{i:04d}")))
                conn.execute("SELECT count(*) FROM pgjobs.jobs_add_batch(%s::jsonb)", [batch(i)])
                conn.execute("RESET ROLE")
        conn.execute("SELECT count(*) FROM pgjobs.jobs_add_batch(%s::jsonb)", [batch(0)])
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")
        [(jobs, owners, proxies)] = conn.execute(
            "SELECT (SELECT count(*) FROM pgjobs.jobs), "
            "(SELECT count(DISTINCT owner) FROM pgjobs.jobs), (SELECT count(*) FROM pgjobs.proxies)").fetchall()
        expected = (OWNERS + 1) * JOBS_PER_OWNER
        if (jobs, owners, proxies) != (expected, OWNERS + 1, OWNERS):
            raise RuntimeError(f"expected {expected:,} jobs of {OWNERS + 1} owners and "
                               f"{OWNERS} proxies; found {jobs} jobs, {owners} owners, {proxies} proxies")
        [(oid,)] = conn.execute("SELECT %s::regrole::oid", [OWNER]).fetchall()
        return int(oid)


# --- What is measured ----------------------------------------------------------------------

CLAIM = ["BEGIN", "SELECT * FROM pgjobs.jobs_claim('w', ARRAY['default'], 1)", "ROLLBACK"]


def figures(oid):
    """(figure, role under RLS, its statements, the table owner's statements doing the same
    work: the owner filter that RLS adds written out)."""
    count_rls = ["SELECT count(*), max(id) FROM pgjobs.jobs"]
    count_owner = [f"SELECT count(*), max(id) FROM pgjobs.jobs WHERE owner = {oid}"]
    find_rls = ["SELECT * FROM pgjobs.jobs_find(limit_rows => 20)"]
    list_rls = ["SELECT * FROM pgjobs.job_list ORDER BY id DESC LIMIT 20"]
    list_owner = [f"SELECT * FROM pgjobs.job_list WHERE owner = '{OWNER}'::regrole ORDER BY id DESC LIMIT 20"]
    return [
        ("Owner's read: `SELECT count(*), max(id) FROM pgjobs.jobs` (its 100 of 100,100); "
         "owner: `... WHERE owner = <oid>`", OWNER, count_rls, count_owner),
        ("the same, as a proxy of the owner", PROXY, count_rls, count_owner),
        ("Owner's read: `jobs_find(limit_rows => 20)`; owner: "
         "`SELECT * FROM job_list WHERE owner = '...'::regrole ORDER BY id DESC LIMIT 20`",
         OWNER, find_rls, list_owner),
        ("the same, as a proxy of the owner", PROXY, find_rls, list_owner),
        ("Owner's read without jobs_find's wrapper: `SELECT * FROM job_list ORDER BY id DESC LIMIT 20`; "
         "owner: as above", OWNER, list_rls, list_owner),
        ("Claim path: `BEGIN; jobs_claim('w', ARRAY['default'], 1); ROLLBACK`; "
         "owner: the same call by the superuser (its own 100 jobs)", OWNER, CLAIM, CLAIM),
        ("the same, as a proxy of the owner", PROXY, CLAIM, CLAIM),
    ]


def run_statements(conn, statements):
    rows = None
    for statement in statements:
        rows = conn.execute(statement, prepare=True).fetchall() if statement.startswith("SELECT") \
            else conn.execute(statement, prepare=True)
    return rows


def check(figure_list):
    """Both sides of every figure do the same work: same rows read, one job claimed each."""
    with connect() as owner_conn:
        for figure, role, rls, owner in figure_list:
            with connect(role=role) as rls_conn:
                if rls is CLAIM:
                    for conn, who in ((rls_conn, OWNER), (owner_conn, "postgres")):
                        conn.execute("BEGIN")
                        claimed = conn.execute(CLAIM[1]).fetchall()
                        conn.execute("ROLLBACK")
                        [(owner_of,)] = owner_conn.execute(
                            "SELECT owner::regrole::text FROM pgjobs.jobs WHERE id = %s", [claimed[0][0]]).fetchall() \
                            if len(claimed) == 1 else [(None,)]
                        if owner_of != who:
                            raise RuntimeError(f"{figure}: claimed {claimed!r}, expected one job of {who}")
                    continue
                got, expected = run_statements(rls_conn, rls), run_statements(owner_conn, owner)
                if got != expected or not got:
                    raise RuntimeError(f"{figure} as {role}: the two sides differ:\n{got!r}\n{expected!r}")


# --- Throughput: pgbench --------------------------------------------------------------------

def pgbench(script_path, role, seconds):
    """Runs a script for `seconds` with CLIENTS clients; returns (transactions, seconds)."""
    env = {name: value for name, value in os.environ.items() if name != "PGOPTIONS"}
    if role:
        env["PGOPTIONS"] = f"-c role={role}"
    args = [PGBENCH, "-n", "-M", "prepared", "-c", str(CLIENTS), "-j", str(THREADS),
            "-T", str(seconds), "-f", str(script_path), *PGBENCH_CONNECTION]
    run = subprocess.run(args, capture_output=True, text=True, env=env)
    failed = re.search(r"number of failed transactions: (\d+)", run.stdout)
    processed = re.search(r"number of transactions actually processed: (\d+)", run.stdout)
    tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", run.stdout)
    if run.returncode != 0 or not failed or failed.group(1) != "0" or not processed or not tps:
        raise RuntimeError(f"pgbench {script_path.name} as {role or 'postgres'} failed "
                           f"(exit {run.returncode}):\n{run.stdout}{run.stderr}")
    transactions = int(processed.group(1))
    return transactions, transactions / float(tps.group(1))


def vacuum_jobs():
    """A rolled-back claim leaves a dead row version; every claim run starts without them."""
    with connect() as conn:
        conn.execute("VACUUM pgjobs.jobs")


def throughput(scripts, name, role, rls_statements, owner_statements):
    """Returns each side's transactions per second over all its runs, and the ratio of every
    pair of runs side by side (owner's tx/s ÷ RLS tx/s = time per transaction RLS ÷ owner)."""
    paths = {}
    for side, statements in (("rls", rls_statements), ("owner", owner_statements)):
        paths[side] = Path(scripts) / f"{name}-{side}.sql"
        paths[side].write_text("".join(f"{s};\n" for s in statements))
    totals = {"rls": [0, 0.0], "owner": [0, 0.0]}
    ratios = []
    for r in range(ROUNDS):
        tps = {}
        for side in (("rls", "owner") if r % 2 == 0 else ("owner", "rls")):
            if rls_statements is CLAIM:
                vacuum_jobs()
            done, elapsed = pgbench(paths[side], role if side == "rls" else None, RUN_SECONDS)
            totals[side][0] += done
            totals[side][1] += elapsed
            tps[side] = done / elapsed
        ratios.append(tps["owner"] / tps["rls"])
    return totals["rls"][0] / totals["rls"][1], totals["owner"][0] / totals["owner"][1], ratios


# --- Server CPU: the backend's own CPU time ----------------------------------------------------

def backend_cpu_ns(conn):
    with open(f"/proc/{conn.info.backend_pid}/schedstat") as schedstat:
        return int(schedstat.read().split()[0])


def server_cpu(role, rls_statements, owner_statements):
    """Microseconds of backend CPU per call on each side, over all turns, and the ratio of every
    pair of turns side by side: one connection per side, calls in a loop, CPU_ROUNDS turns of
    CPU_SECONDS each, alternating."""
    with connect(role=role) as rls_conn, connect() as owner_conn:
        sides = {"rls": (rls_conn, rls_statements), "owner": (owner_conn, owner_statements)}
        used = {"rls": [0, 0], "owner": [0, 0]}
        ratios = []
        for conn, statements in sides.values():
            for _ in range(CPU_WARMUP):
                run_statements(conn, statements)
        for r in range(CPU_ROUNDS):
            per_call = {}
            for side in (("rls", "owner") if r % 2 == 0 else ("owner", "rls")):
                conn, statements = sides[side]
                if statements is CLAIM:
                    vacuum_jobs()
                calls, before = 0, backend_cpu_ns(conn)
                deadline = time.monotonic() + CPU_SECONDS
                while time.monotonic() < deadline:
                    run_statements(conn, statements)
                    calls += 1
                spent = backend_cpu_ns(conn) - before
                used[side][0] += spent
                used[side][1] += calls
                per_call[side] = spent / calls
            ratios.append(per_call["rls"] / per_call["owner"])
    return (*(used[side][0] / used[side][1] / 1000 for side in ("rls", "owner")), ratios)


# --- Instructions: the work itself, the same on every run --------------------------------------

# Calls per run: the two runs differ by exactly the work of the extra calls; all else (start-up,
# the first plan, cold caches) is in both.
INSTRUCTION_CALLS = (20, 120)


def snapshot_data(cluster=CLUSTER, port=PORT):
    """Stops the cluster, copies its data directory to `snapshot` beside it (the state every
    count starts from: the same rows, statistics and hint bits on both sides) and starts it
    again. drop_snapshot() removes it."""
    lib_sh(f'stop_cluster {cluster}; dir=$(cluster_dir {cluster}); rm -rf "$dir/snapshot"; '
           f'cp -a "$dir/data" "$dir/snapshot"; start_cluster {cluster} {port} bench >/dev/null')


def drop_snapshot(cluster=CLUSTER):
    lib_sh(f'rm -rf "$(cluster_dir {cluster})/snapshot"')


def instructions(role, statements, calls, cluster=CLUSTER, database="bench"):
    """Instructions a backend executes to do `calls` calls: a single-user backend under
    valgrind's callgrind, on a fresh copy of the snapshot of `cluster`, in `database`, given the
    statements as PREPAREd ones (EXECUTE), as `role` (SET ROLE) or as the superuser."""
    prepared = [(f"s{n}", statement) for n, statement in enumerate(statements)]
    # Transaction control cannot be prepared; every other statement is.
    control = ("BEGIN", "COMMIT", "ROLLBACK")
    script = [f"SET ROLE {role};"] if role else []
    script += [f"PREPARE {name} AS {statement};" for name, statement in prepared if statement not in control]
    call = [f"{statement};" if statement in control else f"EXECUTE {name};" for name, statement in prepared]
    script += call * calls
    run = subprocess.run(
        ["bash", "-c", f'source "{ROOT}/scripts/lib.sh"; dir=$(cluster_dir {cluster}); '
                       'rm -rf "$dir/counted"; cp -a "$dir/snapshot" "$dir/counted"; '
                       'as_db_user valgrind --tool=callgrind --callgrind-out-file=/dev/null '
                       f'"$PG_BIN/postgres" --single -D "$dir/counted" -c autovacuum=off {database}; '
                       'status=$?; rm -rf "$dir/counted"; exit $status'],
        input="\n".join(script) + "\n", capture_output=True, text=True)
    collected = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode != 0 or not collected or "ERROR:" in run.stderr + run.stdout:
        raise RuntimeError(f"callgrind of {statements} as {role or 'postgres'} failed "
                           f"(exit {run.returncode}):\n{run.stderr[-3000:]}")
    return int(collected.group(1))


def instructions_per_call(role, statements, cluster=CLUSTER, database="bench"):
    few, many = INSTRUCTION_CALLS
    return ((instructions(role, statements, many, cluster, database)
             - instructions(role, statements, few, cluster, database)) / (many - few))


# --- Where the time goes ---------------------------------------------------------------------

def plans(role, statements):
    """The plans of one call, nested statements included (auto_explain, ANALYZE, VERBOSE),
    after warming up as the benchmark does (prepared statements, generic plans)."""
    notices = []
    with connect() as conn:
        conn.add_notice_handler(lambda diagnostic: notices.append(diagnostic.message_primary))
        # Superuser-only settings, so made before SET ROLE; what the warm-up logs is dropped.
        for setting in ("LOAD 'auto_explain'", "SET auto_explain.log_nested_statements = on",
                        "SET auto_explain.log_analyze = on", "SET auto_explain.log_buffers = on",
                        "SET auto_explain.log_verbose = on", "SET auto_explain.log_level = notice",
                        "SET auto_explain.log_min_duration = 0"):
            conn.execute(setting)
        if role:
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        for _ in range(10):
            run_statements(conn, statements)
        notices.clear()
        run_statements(conn, statements)
        return list(notices)


def summarize(notices):
    """What the plans of one call did: identity() evaluations, indexes and sequential scans."""
    text = "\n".join(notices)
    identity = len(re.findall(r"Output: (?:pgjobs\.)?identity\(\)$", text, re.MULTILINE))
    indexes = sorted(set(re.findall(r"Index (?:Only )?Scan(?: Backward)? using (\w+)", text)))
    seq = sorted(set(re.findall(r"Seq Scan on (?:pgjobs\.)?(\w+)", text)))
    return identity, indexes, seq


def diagnostics(oid):
    """Instructions per call of the pieces, each against what it adds to."""
    count = "SELECT count(*), max(id) FROM pgjobs.jobs WHERE owner = "
    found = []
    for what, role, statements, against_role, against in (
            ("`SELECT pgjobs.identity()` alone, against `SELECT <oid>`", OWNER,
             ["SELECT pgjobs.identity()"], OWNER, [f"SELECT {oid}::oid"]),
            ("the same as the proxy", PROXY, ["SELECT pgjobs.identity()"], PROXY, [f"SELECT {oid}::oid"]),
            ("the superuser (no RLS) counting its own jobs with `WHERE owner = (SELECT pgjobs.identity())`, "
             "against `WHERE owner = 10`: the initplan", None,
             [count + "(SELECT pgjobs.identity())"], None, [count + "10"]),
            (f"`{BYPASS}` (a member of pgjobs_user with BYPASSRLS) counting the owner's jobs with "
             f"`WHERE owner = <oid>`, against the superuser doing the same: the permission checks "
             f"every role but a superuser pays", BYPASS, [count + str(oid)], None, [count + str(oid)]),
            ("`jobs_find(limit_rows => 20)` against `SELECT * FROM job_list ORDER BY id DESC LIMIT 20`, "
             "both as the owner under RLS: jobs_find's PL/pgSQL wrapper", OWNER,
             ["SELECT * FROM pgjobs.jobs_find(limit_rows => 20)"],
             OWNER, ["SELECT * FROM pgjobs.job_list ORDER BY id DESC LIMIT 20"])):
        a, b = instructions_per_call(role, statements), instructions_per_call(against_role, against)
        found.append(f"- {what} (as `{role or 'postgres'}`): {a:,.0f} against {b:,.0f} instructions per call, "
                     f"{a - b:+,.0f}, ratio {a / b:.3f}")
    return found


# --- The report -------------------------------------------------------------------------------

def environment():
    with connect() as conn:
        [(version, fsync, shared_buffers, jit)] = conn.execute(
            "SELECT current_setting('server_version'), current_setting('fsync'), "
            "current_setting('shared_buffers'), current_setting('jit')").fetchall()
    with open("/proc/cpuinfo") as cpuinfo:
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
                     "unknown model")
    revision = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                              capture_output=True, text=True).stdout.strip() or "unknown"
    return [
        f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; pg_jobs {revision}",
        f"- Server: PostgreSQL {version}, cluster target/{CLUSTER} (port {PORT}), stock settings: "
        f"fsync {fsync}, shared_buffers {shared_buffers}, jit {jit}",
        f"- Machine: {len(os.sched_getaffinity(0))} CPUs, {model}; load average "
        f"{os.getloadavg()[0]:.2f} at the start (other work on the machine moves every figure: "
        f"compare ratios, and their ranges)",
        f"- Data: {(OWNERS + 1) * JOBS_PER_OWNER:,} jobs queued, {JOBS_PER_OWNER} for each of {OWNERS:,} "
        f"NOLOGIN roles (members of pgjobs_user, each adding its own with jobs_add_batch) and "
        f"{JOBS_PER_OWNER} of the superuser; {OWNERS:,} proxies (bench_proxy_N for bench_owner_N); "
        f"VACUUM ANALYZE after loading; measured as {OWNER} and its proxy {PROXY}",
    ]


def main():
    log(f"starting cluster {CLUSTER} on port {PORT}")
    lib_sh(f"start_cluster {CLUSTER} {PORT} bench >/dev/null")
    try:
        create_database()
        header = environment()
        oid = populate()
        figure_list = figures(oid)
        check(figure_list)
        snapshot_data()
        rows, plan_text, findings = [], [], []
        with tempfile.TemporaryDirectory() as scripts:
            for n, (figure, role, rls, owner) in enumerate(figure_list):
                log(f"{figure} [{role}]")
                rls_tps, owner_tps, ratios = throughput(scripts, f"f{n}", role, rls, owner)
                rls_cpu, owner_cpu, cpu_ratios = server_cpu(role, rls, owner)
                rows.append((figure, role, rls_tps, owner_tps, ratios, rls_cpu, owner_cpu, cpu_ratios))
                log(f"  throughput {rls_tps:,.0f} vs {owner_tps:,.0f} tx/s, median ratio "
                    f"{statistics.median(ratios):.2f}; server CPU {rls_cpu:.1f} vs {owner_cpu:.1f} µs, "
                    f"median ratio {statistics.median(cpu_ratios):.2f}")
                for side, side_role, statements in (("under RLS", role, rls), ("table owner", None, owner)):
                    notices = plans(side_role, statements)
                    plan_text.append(f"===== {figure}\n===== {side}, as {side_role or 'postgres'}: "
                                     f"{'; '.join(statements)}\n\n" + "\n\n".join(notices) + "\n")
                    findings.append((n, side, side_role or "postgres", *summarize(notices)))
        log("counting instructions (callgrind)")
        counted = [(instructions_per_call(role, rls), instructions_per_call(None, owner))
                   for _, role, rls, owner in figure_list]
        log("where the time goes")
        pieces = diagnostics(oid)
        drop_snapshot()

        table = ["| Figure | under RLS (role) | table owner | ratio |", "|---|---:|---:|---:|"]
        above, above_in_time = 0, 0
        for n, (row, (rls_instructions, owner_instructions)) in enumerate(zip(rows, counted), 1):
            figure, role, rls_tps, owner_tps, ratios, rls_cpu, owner_cpu, cpu_ratios = row
            ratio = rls_instructions / owner_instructions
            median, cpu_median = statistics.median(ratios), statistics.median(cpu_ratios)
            above += ratio > TARGET
            above_in_time += (median > TARGET) + (cpu_median > TARGET)
            table.append(f"| {n}. {figure}; as `{role}`: instructions per call | {rls_instructions:,.0f} "
                         f"| {owner_instructions:,.0f} | **{ratio:.3f}** |")
            table.append(f"| ↳ throughput | {rls_tps:,.0f} tx/s | {owner_tps:,.0f} tx/s "
                         f"| {median:.2f} ({min(ratios):.2f}–{max(ratios):.2f}) |")
            table.append(f"| ↳ server CPU per call | {rls_cpu:,.1f} µs | {owner_cpu:,.1f} µs "
                         f"| {cpu_median:.2f} ({min(cpu_ratios):.2f}–{max(cpu_ratios):.2f}) |")
        few, many = INSTRUCTION_CALLS
        settings = (
            f"Instructions: valgrind's callgrind counts what a single-user backend executes for {many} and for "
            f"{few} calls (PREPARE, then EXECUTE; SET ROLE on the RLS side), each run on a copy of the same "
            f"snapshot of the data directory; per call = the difference ÷ {many - few}. It is the same on "
            f"every run and whatever else the machine does, so it is the figure the target is judged by. "
            f"Settings of the timed measures: pgbench `-M prepared -c {CLIENTS} -j {THREADS}`, {ROUNDS} runs of {RUN_SECONDS} s per side, "
            f"taken in turn (RLS, owner, owner, RLS, ...); throughput ratio = owner's tx/s ÷ RLS tx/s "
            f"(time per transaction RLS ÷ owner), median over the {ROUNDS} pairs of runs side by side, "
            f"their range in brackets. Server CPU: one connection per side, prepared statements, "
            f"{CPU_WARMUP} calls to warm up, then {CPU_ROUNDS} turns of {CPU_SECONDS} s per side in turn; the backend's "
            f"CPU time (/proc/PID/schedstat) ÷ calls, ratio = median over the pairs of turns (range). RLS side: connections as postgres with `-c role=<role>`; "
            f"owner side: postgres. Target: ratio ≤ {TARGET:.2f}; instructions: {above} of {len(rows)} ratios "
            f"are above it; the timed medians, which move by about ±5 % between runs on a shared machine: "
            f"{above_in_time} of {2 * len(rows)}.")
        where = [
            "Where the time goes (plans of one warm call, in target/bench/access-plans.txt):",
            "",
            *pieces,
            "",
            "Per call, from the plans: `identity()` initplans (one per table with a policy; one not run "
            "when its table has no rows), and the indexes and sequential scans used:",
            "",
            "| Figure | side | as | `identity()` initplans | indexes | seq scans |",
            "|---|---|---|---:|---|---|",
        ]
        for n, side, who, identity, indexes, seq in findings:
            where.append(f"| {n + 1} | {side} | `{who}` | {identity} | {', '.join(indexes) or '—'} "
                         f"| {', '.join(seq) or '—'} |")
        report = "\n".join([*header, "", *table, "", settings, "", *where]) + "\n"
        OUTPUT.parent.mkdir(parents=True, exist_ok=True)
        OUTPUT.write_text(report)
        PLANS_OUTPUT.write_text("\n".join(plan_text))
        print(report)
        log(f"written to {OUTPUT} and {PLANS_OUTPUT}")
    finally:
        if os.environ.get("ACCESS_KEEP") == "1":
            log("ACCESS_KEEP=1: the cluster keeps running and the roles stay")
        else:
            try:
                with connect() as conn:
                    log(f"dropped {drop_roles(conn)} bench roles")
            finally:
                lib_sh(f"stop_cluster {CLUSTER}")
                log(f"stopped cluster {CLUSTER}")


if __name__ == "__main__":
    main()
