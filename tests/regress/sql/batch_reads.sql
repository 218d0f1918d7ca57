-- What the reads answer: a job's status is as of the reading statement, not of its transaction's
-- start (batch_release answered WAITING for the job it had just made PENDING, wherever the
-- statement's time had moved on from the transaction's: in a transaction, and over the extended
-- protocol, which takes the time again at Execute); and the months offered are every month
-- that has jobs, those without a partition of job_history too.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.job_dependencies, pgjobs.batch_computers;
CREATE ROLE regress_reader IN ROLE pgjobs_user;
SET ROLE regress_reader;

-- Released in a transaction begun earlier: PENDING, in the answer and in the views.
SELECT pgjobs.batch_post('first', run_at => now() + interval '1 hour') AS first \gset
SELECT pgjobs.batch_post('second', depends_on => ARRAY[:'first']) AS second \gset
SELECT pgjobs.batch_post('third', depends_on => ARRAY[:'first']) AS third \gset
BEGIN;
SELECT pg_sleep(0.05);
SELECT pgjobs.batch_release(:second) AS released;
SELECT status FROM pgjobs.batch_jobs WHERE id = :second;
SELECT pgjobs.batch_find(statuses => ARRAY['PENDING']) -> 'total' AS pending_found;
COMMIT;
-- A prepared statement, executed in a transaction begun earlier.
PREPARE release(bigint) AS SELECT pgjobs.batch_release($1) AS released;
BEGIN;
SELECT pg_sleep(0.05);
EXECUTE release(:third);
COMMIT;
DEALLOCATE release;
-- A post due now, read in its own transaction: PENDING.
BEGIN;
SELECT pg_sleep(0.05);
SELECT pgjobs.batch_post('fourth') AS fourth \gset
SELECT status FROM pgjobs.batch_jobs WHERE id = :fourth;
COMMIT;

-- Months: a job due three months ago (before the oldest month made, so in job_history_other)
-- and one due twenty years ahead (after the newest that may be made), both ended, are offered
-- with this month.
RESET ROLE;
SELECT count(*) >= 0 AS months_made FROM pgjobs.jobs_history_prepare(0);
SET ROLE regress_reader;
SELECT pgjobs.batch_post('long-ago', run_at => pgjobs._utc_month(now()) - interval '3 months' + interval '1 day') AS long_ago \gset
SELECT pgjobs.batch_post('far-ahead', run_at => pgjobs._utc_month(now()) + interval '20 years' + interval '1 day') AS far_ahead \gset
SELECT count(*) AS cancelled FROM pgjobs.batch_cancel(ARRAY[:long_ago, :far_ahead]);
RESET ROLE;
SELECT id = :long_ago AS long_ago, c.relname = 'job_history_other' AS in_the_catch_all
FROM pgjobs.job_history h JOIN pg_class c ON c.oid = h.tableoid ORDER BY id;
SET ROLE regress_reader;
CREATE FUNCTION pg_temp.from_now(m date) RETURNS integer
LANGUAGE sql RETURN (12 * (date_part('year', m) - date_part('year', now() AT TIME ZONE 'UTC'))
                     + date_part('month', m) - date_part('month', now() AT TIME ZONE 'UTC'))::integer;
SELECT (SELECT array_agg(pg_temp.from_now(m::date)) FROM jsonb_array_elements_text(f -> 'months') m) AS months_from_now
FROM pgjobs.batch_find() f;
SELECT array_agg(pg_temp.from_now(month) ORDER BY month DESC) AS batch_months FROM pgjobs.batch_months;
SELECT pgjobs.batch_find(month => (pgjobs._utc_month(now()) - interval '3 months')::date) -> 'total' AS found_in_its_month;
-- Another identity is offered none of them.
RESET ROLE;
CREATE ROLE regress_other_reader IN ROLE pgjobs_user;
SET ROLE regress_other_reader;
SELECT pgjobs.batch_find() -> 'months' AS others_months;
RESET ROLE;
