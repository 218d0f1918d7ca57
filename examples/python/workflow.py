"""A workflow from the client: fans out STEPS jobs of task "record" in one call, waits for them
all with jobs_wait (no polling), sends a step that failed back with jobs_retry once its cause is
fixed, then joins: one more job, added with what every step answered. Workers (worker.py) do the
jobs. Prints each step of the way; the last line is the join job's id.

Connects with DATABASE_URL or the PG* variables.
  python workflow.py 10 --queue q                  # 10 steps, then the join
  python workflow.py 10 --outage smtp              # step 0 needs smtp, which is down until the
                                                   # workflow sees it fail and brings it back
"""
import argparse
import os

import psycopg
from psycopg.types.json import Jsonb

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("steps", type=int)
parser.add_argument("--queue", default="default")
parser.add_argument("--outage", help="a service step 0 needs, down until the workflow fixes it")
args = parser.parse_args()

with psycopg.connect(os.environ.get("DATABASE_URL", ""), autocommit=True) as conn:
    if args.outage:
        conn.execute("INSERT INTO example_outages VALUES (%s) ON CONFLICT DO NOTHING", (args.outage,))
    # Fan out: every step in one statement. One attempt each, so a failure is seen at once.
    steps = [{"task": "record", "queue": args.queue, "max_attempts": 1,
              "payload": {"n": n, "needs": args.outage if n == 0 else None}} for n in range(args.steps)]
    ids = [id for (id,) in conn.execute("SELECT pgjobs.jobs_add_batch(%s)", (Jsonb(steps),))]
    print(f"fanned out {len(ids)} steps", flush=True)
    for _ in range(3):
        # Sleeps until the commits that finish them wake it (or 30 s pass).
        done = conn.execute("SELECT id, status, error, result FROM pgjobs.jobs_wait(%s::bigint[], '30 seconds')",
                            (ids,)).fetchall()
        failed = [(id, error) for id, status, error, _ in done if status == "failed"]
        if not failed and all(status == "completed" for _, status, _, _ in done):
            break
        for id, error in failed:
            print(f"step {id} failed: {error}", flush=True)
        if failed:
            # The operator's part: the service is back, and the failed steps go again, same ids.
            if args.outage:
                conn.execute("DELETE FROM example_outages WHERE service = %s", (args.outage,))
            retried = [id for (id,) in conn.execute("SELECT pgjobs.jobs_retry(%s::bigint[])", ([id for id, _ in failed],))]
            print(f"retried {retried}", flush=True)
    else:
        raise SystemExit("the steps did not all complete")
    # Join: what each step answered, in one job.
    workers = sorted({result["worker"] for _, _, _, result in done})
    (join,) = conn.execute("SELECT pgjobs.jobs_add('record', %s, queue => %s)",
                           (Jsonb({"n": len(done), "steps": ids, "workers": workers}), args.queue)).fetchone()
    [(status,)] = conn.execute("SELECT status FROM pgjobs.jobs_wait(ARRAY[%s::bigint], '30 seconds')", (join,)).fetchall()
    print(f"join {join} {status}", flush=True)
    print(join)
