"""procrastinate 3.x, driven for bench/bench.py through its own API, on queue `noop`.

Run with the benchmark's venv: `python procrastinate_driver.py COMMAND 'JSON'`; prints one JSON
line. Commands (each takes {"conninfo": ...} and more):
  setup                          applies procrastinate's schema
  enqueue {clients, seconds, batch}
                                 `clients` coroutines calling defer_async() (batch 1) or
                                 batch_defer_async() of `batch` jobs; {jobs, seconds}
  fill {jobs}                    batch_defer_async() of no-op jobs, 1,000 per call
  drain {concurrency}            its worker (run_worker_async) with that concurrency, until stdin
                                 closes; {handled}
  pickup {samples}               one idle worker (concurrency 1, LISTEN/NOTIFY on, as by
                                 default); {latencies_ns}: defer_async() to the task starting
"""

import asyncio
import json
import random
import sys
import time

import procrastinate

handled = 0
picked = None


def make_app(options, pool_size):
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(
        conninfo=options["conninfo"], min_size=pool_size, max_size=pool_size))

    @app.task(name="noop", queue="noop")
    async def noop(t=None):
        global handled
        handled += 1
        if picked is not None and t is not None:
            picked.set_result(time.perf_counter_ns() - t)

    return app, noop


async def setup(options):
    app, _ = make_app(options, 1)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
    return {"ok": True}


async def enqueue(options):
    clients, batch = options["clients"], options["batch"]
    app, noop = make_app(options, clients + 1)
    added = 0
    async with app.open_async():
        deadline = time.monotonic() + options["seconds"]
        started = time.perf_counter()

        async def client():
            nonlocal added
            while time.monotonic() < deadline:
                if batch == 1:
                    await noop.defer_async()
                else:
                    await noop.batch_defer_async(*([{}] * batch))
                added += batch

        await asyncio.gather(*(client() for _ in range(clients)))
        seconds = time.perf_counter() - started
    return {"jobs": added, "seconds": seconds}


async def fill(options):
    app, noop = make_app(options, 1)
    async with app.open_async():
        left = options["jobs"]
        while left > 0:
            await noop.batch_defer_async(*([{}] * min(1000, left)))
            left -= 1000
    return {"jobs": options["jobs"]}


async def stdin_closed():
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


async def drain(options):
    concurrency = options["concurrency"]
    # A connection per concurrent job, one for LISTEN and one spare.
    app, _ = make_app(options, concurrency + 2)
    async with app.open_async():
        worker = asyncio.create_task(app.run_worker_async(
            queues=["noop"], concurrency=concurrency, install_signal_handlers=False))
        await stdin_closed()
        worker.cancel()  # procrastinate's graceful stop: running jobs finish first
        try:
            await worker
        except asyncio.CancelledError:
            pass
    return {"handled": handled}


async def pickup(options):
    global picked
    app, noop = make_app(options, 4)
    latencies = []
    async with app.open_async():
        worker = asyncio.create_task(app.run_worker_async(
            queues=["noop"], concurrency=1, install_signal_handlers=False))
        await asyncio.sleep(0.5)
        loop = asyncio.get_running_loop()
        for _ in range(options["samples"]):
            await asyncio.sleep(random.uniform(0.005, 0.025))
            picked = loop.create_future()
            job_id = await noop.defer_async(t=time.perf_counter_ns())
            latencies.append(await asyncio.wait_for(picked, 15))
            # The next job is added only once this one is finished, so that the worker is idle
            # (waiting on LISTEN) when it arrives.
            while await app.job_manager.get_job_status_async(job_id) != procrastinate.jobs.Status.SUCCEEDED:
                await asyncio.sleep(0.001)
        worker.cancel()
        try:
            await worker
        except asyncio.CancelledError:
            pass
    return {"latencies_ns": latencies}


COMMANDS = {"setup": setup, "enqueue": enqueue, "fill": fill, "drain": drain, "pickup": pickup}

if __name__ == "__main__":
    command, options = sys.argv[1], json.loads(sys.argv[2] if len(sys.argv) > 2 else "{}")
    print(json.dumps(asyncio.run(COMMANDS[command](options))), flush=True)
