"""A pg_jobs compute worker: registers, joins a compute group, then fetches tasks, works their
slices and submits the results. When a job's results go elsewhere (a fetch gives each slice a
result_url), each result is POSTed there first, as JSON: the job's result_params with the result
under "result". Only a result the store took is submitted; a slice whose POST failed is handed
back (compute_return) for another try, so a store that is down loses nothing.

Connects with DATABASE_URL or the PG* variables. GROUP (the group's opaque id), JOIN_KEY and
JOIN_SECRET name the group it joins. A job's work names one of WORK below (a real worktime runs
JavaScript; this example knows its functions by name). Exits 0 after IDLE_SECONDS without a task
(default: never), or on SIGTERM / Ctrl-C once the task at hand is submitted.
"""
import json
import os
import signal
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request

import psycopg

DSN = os.environ.get("DATABASE_URL", "")
IDLE = float(os.environ.get("IDLE_SECONDS", "inf"))
WORKER = f"{socket.gethostname()}:{os.getpid()}"
WORK = {
    "square": lambda x: str(int(x) ** 2),
    "reverse": lambda x: x[::-1],
}

stopping = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stopping.set())
signal.signal(signal.SIGINT, lambda *_: stopping.set())


def log(message):
    print(f"{WORKER} {message}", flush=True)


def datum_text(uri):
    """The text of a data: URI, as a fetch gives a slice's datum (a range's number or one of a
    list's values) and a work function given as text."""
    if not uri.startswith("data:,"):
        raise ValueError(f"this example reads data: URIs only, not {uri!r}")
    return urllib.parse.unquote(uri[len("data:,"):])


def post(url, params, result):
    """POSTs one result to its address; whether the store took it (a 2xx answer)."""
    body = json.dumps({**(params or {}), "result": result}).encode()
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10):
            return True
    except (urllib.error.URLError, OSError) as e:
        log(f"POST {url} failed: {e}")
        return False


def work_task(conn, rows):
    token = rows[0][0]
    done, results, handed_back = [], [], []
    for _, slice_number, datum, work, result_url, result_params in rows:
        result = WORK[datum_text(work)](datum_text(datum))
        if result_url is not None and not post(result_url, result_params, result):
            handed_back.append(slice_number)
            continue
        done.append(slice_number)
        results.append(result)
    if handed_back:
        conn.execute("SELECT pgjobs.compute_return(%s, %s::integer[])", (token, handed_back))
        log(f"handed back slices {handed_back}: their results were not stored")
    if done:
        outcomes = conn.execute("SELECT slice_number, outcome FROM pgjobs.compute_submit(%s, %s::integer[], %s::text[])",
                                (token, done, results)).fetchall()
        log(f"submitted {len(outcomes)} slices: {sorted({o for _, o in outcomes})}")


def main():
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute("SELECT pgjobs.compute_worker_register(%s, '[]', '{\"map-basic\": \"1.0.0\"}', 2, 0, 1)",
                     (WORKER,))
        conn.execute("SELECT pgjobs.compute_worker_join(%s, %s, %s)",
                     (os.environ["GROUP"], os.environ["JOIN_KEY"], os.environ["JOIN_SECRET"]))
        log("joined; fetching")
        idle = 0.0
        while not stopping.is_set() and idle < IDLE:
            rows = conn.execute("SELECT task_token, slice_number, datum, work, result_url, result_params"
                                " FROM pgjobs.compute_fetch()").fetchall()
            if rows:
                idle = 0.0
                work_task(conn, rows)
            elif not stopping.wait(0.5):
                idle += 0.5
        conn.execute("SELECT pgjobs.compute_worker_leave(%s)", (os.environ["GROUP"],))
    log("stopped")


if __name__ == "__main__":
    main()
