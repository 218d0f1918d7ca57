// graphile-worker 0.16.6, driven for bench/bench.py with its own runner (`run`) and a no-op task.
//   migrate {connectionString}                  creates the graphile_worker schema
//   drain   {connectionString, concurrency}     works until stdin closes; replies {handled}
//   pickup  {connectionString, samples}         one idle worker (concurrency 1); replies
//                                               {latencies_ns}: add_job to the task starting
// Jobs are added by bench.py in SQL (graphile_worker.add_job / add_jobs), not here.
const { run, runMigrations, Logger } = require('graphile-worker');
const { Client } = require('pg');
const common = require('./common');

// Errors only: the default logger writes a line per worker start and stop to stdout.
const logger = new Logger(() => (level, message) => {
  if (level === 'error') console.error(`graphile-worker: ${message}`);
});

function runner(options, task) {
  return run({
    connectionString: options.connectionString,
    concurrency: options.concurrency,
    // One connection per concurrent job, one for LISTEN and one spare (the default pool is 10).
    maxPoolSize: options.concurrency + 2,
    noHandleSignals: true,
    logger,
    taskList: { noop: task },
  });
}

common.run({
  async migrate(options) {
    await runMigrations({ connectionString: options.connectionString, logger });
    return { ok: true };
  },

  async drain(options) {
    let handled = 0;
    const worker = await runner(options, async () => {
      handled += 1;
    });
    await common.stdinClosed();
    await worker.stop();
    return { handled };
  },

  async pickup(options) {
    let latency = null;
    let completed = null;
    const worker = await runner({ ...options, concurrency: 1 }, async (payload) => {
      latency = process.hrtime.bigint() - BigInt(payload.t);
    });
    // The next job is added only once this one is deleted, so that the worker is idle again
    // (waiting on LISTEN) when it arrives.
    worker.events.on('job:complete', () => completed());
    const producer = new Client({ connectionString: options.connectionString });
    await producer.connect();
    // Let the worker connect and LISTEN before the first add.
    await common.sleep(500);
    const latencies = [];
    for (let i = 0; i < options.samples; i += 1) {
      await common.gap();
      const done = new Promise((resolve, reject) => {
        completed = resolve;
        setTimeout(() => reject(new Error('no pickup within 15 s of an add')), 15000).unref();
      });
      await producer.query("SELECT graphile_worker.add_job('noop', json_build_object('t', $1::text))",
                           [process.hrtime.bigint().toString()]);
      await done;
      latencies.push(Number(latency));
    }
    await producer.end();
    await worker.stop();
    return { latencies_ns: latencies };
  },
});
