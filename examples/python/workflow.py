"""A workflow from the client: adds STEPS jobs of task "record" and their join, a job of task
"join" that runs once every step completed, in one call (the whole graph, atomically). Waits for
the steps with jobs_wait (no polling); a step that failed blocks the join, so it sends the step
back with jobs_retry once its cause is fixed, and the join waits for it again. Then waits for the
join, which a worker did with what every step answered. Workers (worker.py) do the jobs. Prints
each step of the way; the last line is the join job's id.

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
    # Fan out and join in one statement: the steps (one attempt each, so a failure is seen at
    # once), then the join, "after" the steps (their places in this call, from 1). It waits,
    # unclaimable, until the completion of the last step releases it.
    steps = [{"task": "record", "queue": args.queue, "max_attempts": 1,
              "payload": {"n": n, "needs": args.outage if n == 0 else None}} for n in range(args.steps)]
    join_job = {"task": "join", "queue": args.queue, "after": list(range(1, args.steps + 1))}
    *ids, join = [id for (id,) in conn.execute("SELECT pgjobs.jobs_add_batch(%s)", (Jsonb(steps + [join_job]),))]
    print(f"fanned out {len(ids)} steps {ids}, join {join} after them", flush=True)
    for _ in range(3):
        # Sleeps until the commits that finish them wake it (or 30 s pass). The steps, not the
        # join: the join would say only that it is blocked, not which steps to send again.
        done = conn.execute("SELECT id, status, error FROM pgjobs.jobs_wait(%s::bigint[], '30 seconds')",
                            (ids,)).fetchall()
        failed = [(id, error) for id, status, error in done if status == "failed"]
        if not failed and all(status == "completed" for _, status, _ in done):
            break
        for id, error in failed:
            print(f"step {id} failed: {error}", flush=True)
        if failed:
            # The join will not run without them: blocked, and jobs_result says by what.
            status, error = conn.execute("SELECT status, error FROM pgjobs.jobs_result(%s)", (join,)).fetchone()
            print(f"join {join} {status}: {error}", flush=True)
            # The operator's part: the service is back, and the failed steps go again, same ids;
            # the join waits for them again.
            if args.outage:
                conn.execute("DELETE FROM example_outages WHERE service = %s", (args.outage,))
            retried = [id for (id,) in conn.execute("SELECT pgjobs.jobs_retry(%s::bigint[])", ([id for id, _ in failed],))]
            print(f"retried {retried}", flush=True)
    else:
        raise SystemExit("the steps did not all complete")
    # The join: released by the last step's completion, done by a worker, which read what each
    # step answered (jobs_dependency_results).
    status, error, result = conn.execute(
        "SELECT status, error, result FROM pgjobs.jobs_wait(ARRAY[%s::bigint], '30 seconds')", (join,)).fetchone()
    if status != "completed":
        raise SystemExit(f"join {join} {status}: {error}")
    print(f"join {join} completed: {result['steps']} steps by {', '.join(result['workers'])}", flush=True)
    print(join)
