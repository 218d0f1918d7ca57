// pg-boss 10.4.2, driven for bench/bench.py through its own API, on queue `noop`.
//   setup   {connectionString}                          creates the pgboss schema and the queue
//   enqueue {connectionString, clients, seconds, batch} `clients` loops calling send() (batch 1)
//                                                       or insert() of `batch` jobs; {jobs, seconds}
//   fill    {connectionString, jobs}                    insert()s no-op jobs, 1,000 per call
//   drain   {connectionString, workers, batch, mode, pollingIntervalSeconds}
//           mode "work": `workers` work() subscriptions with batchSize `batch`, its recommended
//           worker; mode "fetch": `workers` loops of fetch() then complete(), without work()'s
//           wait for the polling interval. Works until stdin closes; replies {handled}
//   pickup  {connectionString, samples, pollingIntervalSeconds}
//           one idle work() subscription; {latencies_ns}: send() to the handler starting
//   keyed_fill {connectionString, jobs, keys}
//           queue `keyed` made anew with the `singleton` policy (one active job per
//           singletonKey: pg-boss's limit of one per key), `jobs` jobs of `keys` keys in turn
//   keyed   {connectionString, workers, batch, seconds}
//           `workers` loops of fetch() and complete() of queue `keyed` for `seconds`;
//           {handled, seconds, conflicts}: conflicts are fetches refused because a job they took
//           has a key already active
const PgBoss = require('pg-boss');
const common = require('./common');

const QUEUE = 'noop';
const KEYED = 'keyed';

async function boss(options, extra = {}) {
  const instance = new PgBoss({
    connectionString: options.connectionString,
    // One connection per concurrent loop, and a spare for pg-boss's own maintenance.
    max: (options.clients || options.workers || 1) + 2,
    ...extra,
  });
  instance.on('error', (error) => console.error(`pg-boss: ${error.stack || error}`));
  await instance.start();
  return instance;
}

function noopJobs(count) {
  return Array.from({ length: count }, () => ({ name: QUEUE, data: {} }));
}

common.run({
  async setup(options) {
    const b = await boss(options);
    await b.createQueue(QUEUE);
    await b.stop({ graceful: false });
    return { ok: true };
  },

  async enqueue(options) {
    const b = await boss(options);
    const deadline = Date.now() + options.seconds * 1000;
    let added = 0;
    const started = process.hrtime.bigint();
    await Promise.all(Array.from({ length: options.clients }, async () => {
      while (Date.now() < deadline) {
        if (options.batch === 1) {
          await b.send(QUEUE, {});
        } else {
          await b.insert(noopJobs(options.batch));
        }
        added += options.batch;
      }
    }));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    await b.stop({ graceful: false });
    return { jobs: added, seconds };
  },

  async fill(options) {
    const b = await boss(options);
    for (let left = options.jobs; left > 0; left -= 1000) {
      await b.insert(noopJobs(Math.min(1000, left)));
    }
    await b.stop({ graceful: false });
    return { jobs: options.jobs };
  },

  async drain(options) {
    const b = await boss(options);
    let handled = 0;
    let stopping = false;
    const loops = [];
    if (options.mode === 'work') {
      for (let i = 0; i < options.workers; i += 1) {
        await b.work(QUEUE, { batchSize: options.batch, pollingIntervalSeconds: options.pollingIntervalSeconds },
          async (jobs) => {
            handled += jobs.length;
          });
      }
    } else {
      for (let i = 0; i < options.workers; i += 1) {
        loops.push((async () => {
          while (!stopping) {
            const jobs = await b.fetch(QUEUE, { batchSize: options.batch });
            if (!jobs || jobs.length === 0) {
              await common.sleep(10);
              continue;
            }
            handled += jobs.length;
            await b.complete(QUEUE, jobs.map((job) => job.id));
          }
        })());
      }
    }
    await common.stdinClosed();
    stopping = true;
    await Promise.all(loops);
    if (options.mode === 'work') {
      // work() completes a batch without awaiting it: stop fetching, then wait for the last
      // completions to land before the pool closes.
      await b.offWork(QUEUE);
      await common.sleep(200); // a fetch under way when the workers were told to stop
      const db = b.getDb();
      for (let i = 0; i < 500; i += 1) {
        const { rows } = await db.executeSql(
          "SELECT count(*)::int AS active FROM pgboss.job WHERE name = $1 AND state = 'active'", [QUEUE]);
        if (rows[0].active === 0) break;
        await common.sleep(10);
      }
    }
    await b.stop({ graceful: true, wait: true, timeout: 1000 });
    return { handled };
  },

  async keyed_fill(options) {
    const b = await boss(options);
    await b.deleteQueue(KEYED);
    await b.createQueue(KEYED, { policy: 'singleton' });
    for (let first = 0; first < options.jobs; first += 1000) {
      const count = Math.min(1000, options.jobs - first);
      await b.insert(Array.from({ length: count }, (_, i) => ({
        name: KEYED, data: {}, singletonKey: `customer:${(first + i) % options.keys}`,
      })));
    }
    await b.stop({ graceful: false });
    return { jobs: options.jobs };
  },

  async keyed(options) {
    const b = await boss(options);
    let handled = 0;
    let conflicts = 0;
    const deadline = Date.now() + options.seconds * 1000;
    const started = process.hrtime.bigint();
    await Promise.all(Array.from({ length: options.workers }, async () => {
      while (Date.now() < deadline) {
        let jobs;
        try {
          jobs = await b.fetch(KEYED, { batchSize: options.batch });
        } catch (error) {
          // The unique index of active singleton jobs refuses the whole fetch.
          if (error.code !== '23505') throw error;
          conflicts += 1;
          continue;
        }
        if (!jobs || jobs.length === 0) {
          await common.sleep(1);
          continue;
        }
        await b.complete(KEYED, jobs.map((job) => job.id));
        handled += jobs.length;
      }
    }));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    await b.stop({ graceful: false });
    return { handled, seconds, conflicts };
  },

  async pickup(options) {
    const b = await boss(options);
    let latency = null;
    let picked = null;
    await b.work(QUEUE, { batchSize: 1, pollingIntervalSeconds: options.pollingIntervalSeconds }, async ([job]) => {
      latency = process.hrtime.bigint() - BigInt(job.data.t);
      picked();
    });
    await common.sleep(500);
    const latencies = [];
    for (let i = 0; i < options.samples; i += 1) {
      // A polling worker's latency depends on where in its interval a job arrives: a random
      // wait of up to one interval, so that jobs arrive at every phase of the poll.
      await common.sleep(Math.random() * options.pollingIntervalSeconds * 1000);
      await common.gap();
      const done = new Promise((resolve, reject) => {
        picked = resolve;
        setTimeout(() => reject(new Error('no pickup within 15 s of a send')), 15000).unref();
      });
      await b.send(QUEUE, { t: process.hrtime.bigint().toString() });
      await done;
      latencies.push(Number(latency));
    }
    await b.stop({ graceful: true, wait: true, timeout: 1000 });
    return { latencies_ns: latencies };
  },
});
