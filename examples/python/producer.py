"""Adds COUNT jobs of task "record" to a queue and prints their ids, one a line.

Connects with DATABASE_URL or the PG* variables.
  python producer.py 20                        # 20 jobs in queue "default"
  python producer.py 10 --key order-7          # keys order-7:0 .. order-7:9: run it twice, still 10 jobs
  python producer.py 1 --sleep 30 --queue q    # one job that takes 30 s to do
"""
import argparse
import os

import psycopg
from psycopg.types.json import Jsonb

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("count", type=int)
parser.add_argument("--queue", default="default")
parser.add_argument("--key", help="give job i the idempotency key KEY:i")
parser.add_argument("--sleep", type=float, default=0, help="seconds each job takes to do")
args = parser.parse_args()

# One transaction: the jobs exist if and only if it commits, as would the rows of an
# application that made them necessary (an order, a sign-up) added beside them.
with psycopg.connect(os.environ.get("DATABASE_URL", "")) as conn:
    for i in range(args.count):
        # A key already held returns its job's id and adds nothing: a producer retried after a
        # timeout (did the commit happen?) cannot add the work twice.
        (job_id,) = conn.execute(
            "SELECT pgjobs.jobs_add('record', %s, queue => %s, key => %s)",
            (Jsonb({"n": i, "sleep": args.sleep}), args.queue,
             f"{args.key}:{i}" if args.key else None)).fetchone()
        print(job_id)
