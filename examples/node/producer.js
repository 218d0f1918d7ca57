// Adds COUNT jobs of task "record" to a queue and prints their ids, one a line.
// Connects with DATABASE_URL or the PG* variables.
//   node producer.js 20                        # 20 jobs in queue "default"
//   node producer.js 10 --key order-7          # keys order-7:0 .. order-7:9: run it twice, still 10 jobs
//   node producer.js 1 --sleep 30 --queue q    # one job that takes 30 s to do
import { parseArgs } from 'node:util';
import pg from 'pg';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: { queue: { type: 'string', default: 'default' }, key: { type: 'string' }, sleep: { type: 'string', default: '0' } },
});
const count = Number(positionals[0]);
if (!Number.isInteger(count) || count < 0) {
  console.error('usage: node producer.js COUNT [--queue Q] [--key KEY] [--sleep SECONDS]');
  process.exit(2);
}

const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
await client.connect();
try {
  // One transaction: the jobs exist if and only if it commits, as would the rows of an
  // application that made them necessary (an order, a sign-up) added beside them.
  await client.query('BEGIN');
  for (let i = 0; i < count; i++) {
    // A key already held returns its job's id and adds nothing: a producer retried after a
    // timeout (did the commit happen?) cannot add the work twice.
    const { rows } = await client.query(
      'SELECT pgjobs.jobs_add($1, $2, queue => $3, key => $4) AS id',
      ['record', { n: i, sleep: Number(opts.sleep) }, opts.queue, opts.key ? `${opts.key}:${i}` : null]);
    console.log(rows[0].id);
  }
  await client.query('COMMIT');
} finally {
  await client.end();
}
