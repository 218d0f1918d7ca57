// A pg_jobs worker: claims one job at a time, does it and completes it in one transaction.
// Tasks: "record" (a row of example_effects) and "join" (a workflow's last step: reads what its
// dependencies answered with jobs_dependency_results, records it, answers with a summary).
//
// Connects with DATABASE_URL or the PG* variables. QUEUES (comma-separated, default "default"),
// LEASE_SECONDS (default 30). SIGTERM or Ctrl-C: the job at hand is finished, then it exits 0.
import os from 'node:os';
import pg from 'pg';

const QUEUES = (process.env.QUEUES ?? 'default').split(',');
const LEASE = Number(process.env.LEASE_SECONDS ?? 30);
// Shown in pgjobs.jobs.locked_by and in lease-expired errors: make it findable.
const WORKER = `${os.hostname()}:${process.pid}`;

let stopping = false;
let wake = () => {};
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => { stopping = true; wake(); });

const log = (message) => console.log(`${WORKER} ${message}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function connect() {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  return client;
}

async function heartbeat(hb, job) {
  const { rows } = await hb.query(
    'SELECT lease_state FROM pgjobs.jobs_heartbeat($1, $2, make_interval(secs => $3))',
    [job.id, job.lease_token, LEASE]);
  return rows[0].lease_state;
}

// Renews a job's lease every third of it, from a second connection: the first one is inside
// the job's transaction, and a heartbeat committed there would only count at the end.
function keepLease(hb, job) {
  const lease = { state: 'held' };
  const timer = setInterval(() => {
    if (lease.state !== 'held') return;
    lease.beat = heartbeat(hb, job).then((state) => { lease.state = state; },
      (e) => log(`heartbeat of job ${job.id} failed: ${e.message}`));
  }, (LEASE * 1000) / 3);
  lease.stop = async () => { clearInterval(timer); await lease.beat; };
  return lease;
}

// The job's effect: a row in the application's table, in the job's transaction.
async function doRecord(client, job, lease) {
  const needs = job.payload.needs;
  if (needs && (await client.query('SELECT FROM example_outages WHERE service = $1', [needs])).rowCount) {
    throw new Error(`${needs} is down`);
  }
  await client.query('INSERT INTO example_effects (job_id, n, worker) VALUES ($1, $2, $3)',
    [job.id, job.payload.n, WORKER]);
  // Slow work ("sleep" seconds) looks at its lease as it goes, so an abort stops it early.
  const deadline = Date.now() + 1000 * (job.payload.sleep ?? 0);
  while (lease.state === 'held' && Date.now() < deadline) await sleep(50);
}

// A workflow's join: runs once every step it was added after completed, and reads what they
// answered (one row per dependency, in id order) in the job's transaction.
async function doJoin(client, job) {
  const { rows: steps } = await client.query(
    'SELECT dependency, status, result, error FROM pgjobs.jobs_dependency_results($1, $2)',
    [job.id, job.lease_token]);
  // All completed, unless someone let it run without them (jobs_unblock).
  const missing = steps.filter((s) => s.status !== 'completed').map((s) => `job ${s.dependency} ${s.status}`);
  if (missing.length) throw new Error(`steps not completed: ${missing.join(', ')}`);
  await client.query('INSERT INTO example_effects (job_id, n, worker) VALUES ($1, $2, $3)',
    [job.id, steps.length, WORKER]);
  return { steps: steps.length, workers: [...new Set(steps.map((s) => s.result.worker))].sort() };
}

async function run(client, hb, job) {
  const lease = keepLease(hb, job);
  let completed = false;
  let error = null;
  try {
    // Effects and completion commit together or not at all: that is what makes it exactly once.
    await client.query('BEGIN');
    let result;
    if (job.task === 'record') {
      await doRecord(client, job, lease);
      result = { worker: WORKER };
    } else if (job.task === 'join') {
      result = await doJoin(client, job);
    } else {
      throw new Error(`unknown task ${job.task}`);
    }
    if (lease.state === 'held') {
      // (The casts pick the one-job forms: jobs_complete and jobs_fail also take arrays.)
      await client.query('SELECT pgjobs.jobs_complete($1::bigint, $2::uuid, $3::jsonb)',
        [job.id, job.lease_token, result]);
      await client.query('COMMIT');
      completed = true;
    }
  } catch (e) {
    // 55000: jobs_complete refused, aborted or lost since the last heartbeat. Anything else is
    // the job's own failure: it is retried after its backoff.
    if (e.code !== '55000') error = String(e.message);
  } finally {
    if (!completed) await client.query('ROLLBACK');
    await lease.stop();
  }
  if (completed) return log(`job ${job.id} completed`);
  // Rolled back. Why? The lease says, if it has not already.
  const state = lease.state !== 'held' ? lease.state : await heartbeat(hb, job);
  if (state === 'lost') return log(`job ${job.id} lost: rolled back; someone else may have it`);
  if (state === 'aborted') error = 'aborted while running: rolled back';
  try {
    // On an aborted job this is the report README asks for, and the job ends aborted.
    await client.query('SELECT pgjobs.jobs_fail($1::bigint, $2::uuid, $3::text)', [job.id, job.lease_token, error]);
    log(`job ${job.id} ${state}: ${error}`);
  } catch (e) {
    if (e.code !== '55000') throw e;
    log(`job ${job.id} lost: rolled back; someone else may have it`);
  }
}

const client = await connect();
const hb = await connect();
// Notifications carry a queue's signal, not its name; others' signals mean nothing here.
const signals = new Set();
for (const q of QUEUES) signals.add((await client.query('SELECT pgjobs.jobs_ready_signal($1) AS s', [q])).rows[0].s);
const poll = Number((await client.query(
  "SELECT extract(epoch FROM current_setting('pg_jobs.poll_interval')::interval) AS s")).rows[0].s);
client.on('notification', (msg) => { if (signals.has(msg.payload)) wake(); });
await client.query('LISTEN pgjobs_ready');
log(`working on ${QUEUES.join(',')}`);
while (!stopping) {
  const { rows } = await client.query(
    'SELECT id, lease_token, task, payload FROM pgjobs.jobs_claim($1, $2::text[], 1, make_interval(secs => $3))',
    [WORKER, QUEUES, LEASE]);
  if (rows.length) {
    await run(client, hb, rows[0]);
    continue; // a claim that found work claims again at once: no NOTIFY comes for it
  }
  // Idle: until one of our signals arrives, or poll_interval passes (a pooler in transaction
  // mode drops notifications; the poll still finds the work).
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, poll * 1000);
    wake = () => { clearTimeout(timer); resolve(); };
  });
  wake = () => {};
}
await Promise.all([client.end(), hb.end()]);
log('stopped');
