// A pg_jobs compute worker: registers, joins a compute group, then fetches tasks, works their
// slices and submits the results. When a job's results go elsewhere (a fetch gives each slice a
// result_url), each result is POSTed there first, as JSON: the job's result_params with the
// result under "result". Only a result the store took is submitted; a slice whose POST failed is
// handed back (compute_return) for another try, so a store that is down loses nothing.
//
// Connects with DATABASE_URL or the PG* variables. GROUP (the group's opaque id), JOIN_KEY and
// JOIN_SECRET name the group it joins. A job's work names one of WORK below (a real worktime runs
// JavaScript; this example knows its functions by name). Exits 0 after IDLE_SECONDS without a
// task (default: never), or on SIGTERM / Ctrl-C once the task at hand is submitted.
import os from 'node:os';
import pg from 'pg';

const IDLE = Number(process.env.IDLE_SECONDS ?? Infinity);
const WORKER = `${os.hostname()}:${process.pid}`;
const WORK = {
  square: (x) => String(BigInt(x) ** 2n),
  reverse: (x) => [...x].reverse().join(''),
};

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => { stopping = true; });

const log = (message) => console.log(`${WORKER} ${message}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The text of a data: URI, as a fetch gives a slice's datum (a range's number or one of a list's
// values) and a work function given as text.
function dataText(uri) {
  if (!uri.startsWith('data:,')) throw new Error(`this example reads data: URIs only, not ${uri}`);
  return decodeURIComponent(uri.slice('data:,'.length));
}

// POSTs one result to its address; whether the store took it (a 2xx answer).
async function post(url, params, result) {
  try {
    const answer = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...params, result }),
      signal: AbortSignal.timeout(10_000),
    });
    if (answer.ok) return true;
    log(`POST ${url} failed: ${answer.status} ${answer.statusText}`);
  } catch (e) {
    log(`POST ${url} failed: ${e.message}`);
  }
  return false;
}

async function workTask(client, rows) {
  const token = rows[0].task_token;
  const done = [], results = [], handedBack = [];
  for (const row of rows) {
    const result = WORK[dataText(row.work)](dataText(row.datum));
    if (row.result_url !== null && !(await post(row.result_url, row.result_params, result))) {
      handedBack.push(row.slice_number);
      continue;
    }
    done.push(row.slice_number);
    results.push(result);
  }
  if (handedBack.length > 0) {
    await client.query('SELECT pgjobs.compute_return($1, $2::integer[])', [token, handedBack]);
    log(`handed back slices ${handedBack}: their results were not stored`);
  }
  if (done.length > 0) {
    const { rows: outcomes } = await client.query(
      'SELECT slice_number, outcome FROM pgjobs.compute_submit($1, $2::integer[], $3::text[])', [token, done, results]);
    log(`submitted ${outcomes.length} slices: ${[...new Set(outcomes.map((o) => o.outcome))].sort()}`);
  }
}

async function main() {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  await client.query(`SELECT pgjobs.compute_worker_register($1, '[]', '{"map-basic": "1.0.0"}', 2, 0, 1)`, [WORKER]);
  await client.query('SELECT pgjobs.compute_worker_join($1, $2, $3)',
    [process.env.GROUP, process.env.JOIN_KEY, process.env.JOIN_SECRET]);
  log('joined; fetching');
  let idle = 0;
  while (!stopping && idle < IDLE) {
    const { rows } = await client.query(
      'SELECT task_token, slice_number, datum, work, result_url, result_params FROM pgjobs.compute_fetch()');
    if (rows.length > 0) {
      idle = 0;
      await workTask(client, rows);
    } else {
      await sleep(500);
      idle += 0.5;
    }
  }
  await client.query('SELECT pgjobs.compute_worker_leave($1)', [process.env.GROUP]);
  await client.end();
  log('stopped');
}

main().catch((e) => { console.error(e); process.exit(1); });
