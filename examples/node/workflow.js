// A workflow from the client: adds STEPS jobs of task "record" and their join, a job of task
// "join" that runs once every step completed, in one call (the whole graph, atomically). Waits for
// the steps with jobs_wait (no polling); a step that failed blocks the join, so it sends the step
// back with jobs_retry once its cause is fixed, and the join waits for it again. Then waits for the
// join, which a worker did with what every step answered. Workers (worker.js) do the jobs. Prints
// each step of the way; the last line is the join job's id.
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
  // Fan out and join in one statement: the steps (one attempt each, so a failure is seen at
  // once), then the join, "after" the steps (their places in this call, from 1). It waits,
  // unclaimable, until the completion of the last step releases it.
  const steps = Array.from({ length: count }, (_, n) => ({
    task: 'record', queue: opts.queue, max_attempts: 1, payload: { n, needs: n === 0 ? opts.outage ?? null : null },
  }));
  const joinJob = { task: 'join', queue: opts.queue, after: Array.from({ length: count }, (_, n) => n + 1) };
  const ids = (await client.query('SELECT pgjobs.jobs_add_batch($1) AS id', [JSON.stringify([...steps, joinJob])]))
    .rows.map((r) => r.id);
  const join = ids.pop();
  console.log(`fanned out ${ids.length} steps [${ids.join(', ')}], join ${join} after them`);
  let done = false;
  for (let round = 0; round < 3 && !done; round++) {
    // Sleeps until the commits that finish them wake it (or 30 s pass). The steps, not the
    // join: the join would say only that it is blocked, not which steps to send again.
    const { rows } = await client.query(
      "SELECT id, status, error FROM pgjobs.jobs_wait($1::bigint[], '30 seconds')", [ids]);
    const failed = rows.filter((r) => r.status === 'failed');
    if (!failed.length && rows.every((r) => r.status === 'completed')) { done = true; break; }
    for (const r of failed) console.log(`step ${r.id} failed: ${r.error}`);
    if (failed.length) {
      // The join will not run without them: blocked, and jobs_result says by what.
      const { rows: [blocked] } = await client.query('SELECT status, error FROM pgjobs.jobs_result($1)', [join]);
      console.log(`join ${join} ${blocked.status}: ${blocked.error}`);
      // The operator's part: the service is back, and the failed steps go again, same ids;
      // the join waits for them again.
      if (opts.outage) await client.query('DELETE FROM example_outages WHERE service = $1', [opts.outage]);
      const retried = await client.query('SELECT pgjobs.jobs_retry($1::bigint[]) AS id', [failed.map((r) => r.id)]);
      console.log(`retried [${retried.rows.map((r) => r.id).join(', ')}]`);
    }
  }
  if (!done) throw new Error('the steps did not all complete');
  // The join: released by the last step's completion, done by a worker, which read what each
  // step answered (jobs_dependency_results).
  const { rows: [finished] } = await client.query(
    "SELECT status, error, result FROM pgjobs.jobs_wait(ARRAY[$1::bigint], '30 seconds')", [join]);
  if (finished.status !== 'completed') throw new Error(`join ${join} ${finished.status}: ${finished.error}`);
  console.log(`join ${join} completed: ${finished.result.steps} steps by ${finished.result.workers.join(', ')}`);
  console.log(join);
} finally {
  await client.end();
}
