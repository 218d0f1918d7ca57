// A workflow from the client: fans out STEPS jobs of task "record" in one call, waits for them
// all with jobs_wait (no polling), sends a step that failed back with jobs_retry once its cause is
// fixed, then joins: one more job, added with what every step answered. Workers (worker.js) do the
// jobs. Prints each step of the way; the last line is the join job's id.
// Connects with DATABASE_URL or the PG* variables.
//   node workflow.js 10 --queue q                  # 10 steps, then the join
//   node workflow.js 10 --outage smtp              # step 0 needs smtp, which is down until the
//                                                  # workflow sees it fail and brings it back
import { parseArgs } from 'node:util';
import pg from 'pg';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: { queue: { type: 'string', default: 'default' }, outage: { type: 'string' } },
});
const count = Number(positionals[0]);
if (!Number.isInteger(count) || count < 1) {
  console.error('usage: node workflow.js STEPS [--queue Q] [--outage SERVICE]');
  process.exit(2);
}

const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
await client.connect();
try {
  if (opts.outage) {
    await client.query('INSERT INTO example_outages VALUES ($1) ON CONFLICT DO NOTHING', [opts.outage]);
  }
  // Fan out: every step in one statement. One attempt each, so a failure is seen at once.
  const steps = Array.from({ length: count }, (_, n) => ({
    task: 'record', queue: opts.queue, max_attempts: 1, payload: { n, needs: n === 0 ? opts.outage ?? null : null },
  }));
  const ids = (await client.query('SELECT pgjobs.jobs_add_batch($1) AS id', [JSON.stringify(steps)])).rows.map((r) => r.id);
  console.log(`fanned out ${ids.length} steps`);
  let done = null;
  for (let round = 0; round < 3 && !done; round++) {
    // Sleeps until the commits that finish them wake it (or 30 s pass).
    const { rows } = await client.query(
      "SELECT id, status, error, result FROM pgjobs.jobs_wait($1::bigint[], '30 seconds')", [ids]);
    const failed = rows.filter((r) => r.status === 'failed');
    if (!failed.length && rows.every((r) => r.status === 'completed')) { done = rows; break; }
    for (const r of failed) console.log(`step ${r.id} failed: ${r.error}`);
    if (failed.length) {
      // The operator's part: the service is back, and the failed steps go again, same ids.
      if (opts.outage) await client.query('DELETE FROM example_outages WHERE service = $1', [opts.outage]);
      const retried = await client.query('SELECT pgjobs.jobs_retry($1::bigint[]) AS id', [failed.map((r) => r.id)]);
      console.log(`retried [${retried.rows.map((r) => r.id).join(', ')}]`);
    }
  }
  if (!done) throw new Error('the steps did not all complete');
  // Join: what each step answered, in one job.
  const workers = [...new Set(done.map((r) => r.result.worker))].sort();
  const join = (await client.query('SELECT pgjobs.jobs_add($1, $2, queue => $3) AS id',
    ['record', { n: done.length, steps: ids, workers }, opts.queue])).rows[0].id;
  const { rows: [finished] } = await client.query(
    "SELECT status FROM pgjobs.jobs_wait(ARRAY[$1::bigint], '30 seconds')", [join]);
  console.log(`join ${join} ${finished.status}`);
  console.log(join);
} finally {
  await client.end();
}
