"""A pg_jobs worker: claims one job at a time, does it and completes it in one transaction.
Tasks: "record" (a row of example_effects) and "join" (a workflow's last step: reads what its
dependencies answered with jobs_dependency_results, records it, answers with a summary).

Connects with DATABASE_URL or the PG* variables. QUEUES (comma-separated, default "default"),
LEASE_SECONDS (default 30). SIGTERM or Ctrl-C: the job at hand is finished, then it exits 0.
"""
import os
import signal
import socket
import threading
import time

import psycopg
from psycopg.types.json import Jsonb

DSN = os.environ.get("DATABASE_URL", "")
QUEUES = os.environ.get("QUEUES", "default").split(",")
LEASE = float(os.environ.get("LEASE_SECONDS", "30"))
# Shown in pgjobs.jobs.locked_by and in lease-expired errors: make it findable.
WORKER = f"{socket.gethostname()}:{os.getpid()}"

stopping = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stopping.set())
signal.signal(signal.SIGINT, lambda *_: stopping.set())


def log(message):
    print(f"{WORKER} {message}", flush=True)


def heartbeat(conn, job_id, token):
    return conn.execute(
        "SELECT lease_state FROM pgjobs.jobs_heartbeat(%s, %s, make_interval(secs => %s))",
        (job_id, token, LEASE)).fetchone()[0]


class Lease:
    """Renews a job's lease every third of it, from a second connection: the first one is
    inside the job's transaction, and a heartbeat committed there would only count at the end."""

    def __init__(self, conn, job_id, token):
        self.state = "held"
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, args=(conn, job_id, token), daemon=True)
        self._thread.start()

    def _beat(self, conn, job_id, token):
        while self.state == "held" and not self._done.wait(LEASE / 3):
            self.state = heartbeat(conn, job_id, token)

    def stop(self):
        self._done.set()
        self._thread.join()


def do_record(conn, job_id, payload, lease):
    """The job's effect: a row in the application's table, in the job's transaction."""
    needs = payload.get("needs")
    if needs and conn.execute("SELECT true FROM example_outages WHERE service = %s", (needs,)).fetchone():
        raise RuntimeError(f"{needs} is down")
    conn.execute("INSERT INTO example_effects (job_id, n, worker) VALUES (%s, %s, %s)",
                 (job_id, payload.get("n"), WORKER))
    # Slow work ("sleep" seconds) looks at its lease as it goes, so an abort stops it early.
    deadline = time.monotonic() + float(payload.get("sleep", 0))
    while lease.state == "held" and time.monotonic() < deadline:
        time.sleep(0.05)


def do_join(conn, job_id, token):
    """A workflow's join: runs once every step it was added after completed, and reads what
    they answered (one row per dependency, in id order) in the job's transaction."""
    steps = conn.execute("SELECT dependency, status, result, error"
                         " FROM pgjobs.jobs_dependency_results(%s, %s)", (job_id, token)).fetchall()
    # All completed, unless someone let it run without them (jobs_unblock).
    missing = [f"job {dep} {status}" for dep, status, _, _ in steps if status != "completed"]
    if missing:
        raise RuntimeError(f"steps not completed: {', '.join(missing)}")
    conn.execute("INSERT INTO example_effects (job_id, n, worker) VALUES (%s, %s, %s)",
                 (job_id, len(steps), WORKER))
    return {"steps": len(steps), "workers": sorted({result["worker"] for _, _, result, _ in steps})}


def run(conn, hb, job_id, token, task, payload):
    lease = Lease(hb, job_id, token)
    completed, error = False, None
    try:
        # Effects and completion commit together or not at all: that is what makes it exactly once.
        with conn.transaction():
            if task == "record":
                do_record(conn, job_id, payload, lease)
                result = {"worker": WORKER}
            elif task == "join":
                result = do_join(conn, job_id, token)
            else:
                raise ValueError(f"unknown task {task!r}")
            if lease.state != "held":
                raise psycopg.Rollback()
            # (The casts pick the one-job forms: jobs_complete and jobs_fail also take arrays.)
            conn.execute("SELECT pgjobs.jobs_complete(%s::bigint, %s::uuid, %s::jsonb)",
                         (job_id, token, Jsonb(result)))
            completed = True  # (a Rollback leaves the block quietly, with this still False)
    except psycopg.errors.ObjectNotInPrerequisiteState:
        completed = False  # 55000: jobs_complete refused, aborted or lost since the last heartbeat
    except Exception as e:  # the job's own failure: it is retried after its backoff
        completed, error = False, f"{type(e).__name__}: {e}"
    finally:
        lease.stop()
    if completed:
        log(f"job {job_id} completed")
        return
    # Rolled back. Why? The lease says, if it has not already.
    state = lease.state if lease.state != "held" else heartbeat(hb, job_id, token)
    if state == "lost":
        log(f"job {job_id} lost: rolled back; someone else may have it")
        return
    if state == "aborted":
        error = "aborted while running: rolled back"
    try:
        # On an aborted job this is the report README asks for, and the job ends aborted.
        conn.execute("SELECT pgjobs.jobs_fail(%s::bigint, %s::uuid, %s::text)", (job_id, token, error))
        log(f"job {job_id} {state}: {error}")
    except psycopg.errors.ObjectNotInPrerequisiteState:
        log(f"job {job_id} lost: rolled back; someone else may have it")


def main():
    with psycopg.connect(DSN, autocommit=True) as conn, psycopg.connect(DSN, autocommit=True) as hb:
        # Notifications carry a queue's signal, not its name; others' signals mean nothing here.
        signals = {conn.execute("SELECT pgjobs.jobs_ready_signal(%s)", (q,)).fetchone()[0] for q in QUEUES}
        poll = float(conn.execute(
            "SELECT extract(epoch FROM current_setting('pg_jobs.poll_interval')::interval)").fetchone()[0])
        conn.execute("LISTEN pgjobs_ready")
        log(f"working on {','.join(QUEUES)}")
        while not stopping.is_set():
            job = conn.execute(
                "SELECT id, lease_token, task, payload FROM pgjobs.jobs_claim(%s, %s::text[], 1,"
                " make_interval(secs => %s))", (WORKER, QUEUES, LEASE)).fetchone()
            if job:
                run(conn, hb, *job)
                continue  # a claim that found work claims again at once: no NOTIFY comes for it
            # Idle: until one of our signals arrives, or poll_interval passes (a pooler in
            # transaction mode drops notifications; the poll still finds the work).
            for notify in conn.notifies(timeout=poll):
                if notify.payload in signals or stopping.is_set():
                    break
    log("stopped")


if __name__ == "__main__":
    main()
