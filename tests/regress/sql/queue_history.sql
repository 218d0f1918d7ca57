-- Finished jobs move to job_history, into the partition of the UTC month they were first due,
-- even when they finish in a later month; months are made ahead, listed and dropped. Months are
-- UTC months, and so is the session's time zone here: in pg_regress's own (PST8PDT) the first
-- hours of a UTC month are still the last day of the month before.
SET TimeZone = 'UTC';
SELECT regress.reset();

-- Installed, job_history has only its catch-all partition; the launcher makes the months of the
-- database it serves (this is not it), from last month to three ahead.
SELECT month IS NOT NULL AS dated, count(*) AS partitions
FROM pgjobs.jobs_history_months() GROUP BY 1 ORDER BY 1;
SET client_min_messages = warning;
SELECT count(*) AS made FROM pgjobs.jobs_history_prepare();
RESET client_min_messages;
SELECT month IS NOT NULL AS dated, count(*) AS partitions
FROM pgjobs.jobs_history_months() GROUP BY 1 ORDER BY 1;

SELECT pgjobs.jobs_add('last_month', run_at => date_trunc('month', now(), 'UTC') - interval '1 day');
SELECT pgjobs.jobs_add('this_month');
SELECT pgjobs.jobs_add('far_future', run_at => now() + interval '5 years');
SELECT count(*) FROM pgjobs.jobs_claim('w', n => 10) c, pgjobs.jobs_complete(c.id, c.lease_token);
UPDATE pgjobs.jobs SET run_at = now() WHERE id = 3;
SELECT count(*) FROM pgjobs.jobs_claim('w', n => 10) c, pgjobs.jobs_complete(c.id, c.lease_token);

SELECT h.id, h.task,
       h.tableoid::regclass::text = 'pgjobs.job_history_' || to_char(h.due_at AT TIME ZONE 'UTC', 'YYYYMM') AS in_its_month,
       CASE WHEN h.tableoid::regclass::text <> 'pgjobs.job_history_' || to_char(h.due_at AT TIME ZONE 'UTC', 'YYYYMM')
            THEN h.tableoid::regclass END AS partition_if_not
FROM pgjobs.job_history h ORDER BY h.id;
SELECT count(*) AS live FROM pgjobs.jobs;

-- Preparing the far month moves its jobs out of the catch-all partition.
SET client_min_messages = warning;
SELECT count(*) > 0 AS made FROM pgjobs.jobs_history_prepare(61);
RESET client_min_messages;
SELECT h.id, h.tableoid::regclass::text = 'pgjobs.job_history_' || to_char(h.due_at AT TIME ZONE 'UTC', 'YYYYMM') AS in_its_month
FROM pgjobs.job_history h WHERE h.id = 3;
SELECT jobs FROM pgjobs.jobs_history_months() WHERE month IS NULL;

-- Dropping last month drops its partition and its jobs; keys of its skip-jobs are freed, found
-- as the range of the month in job_keys_due_at (with sequential scans off, a condition no index
-- serves is still a sequential scan, counted), and the keys of other months are kept.
SELECT pgjobs.jobs_add('keyed', key => 'k:last', run_at => date_trunc('month', now(), 'UTC') - interval '2 days');
SELECT pgjobs.jobs_add('keyed', key => 'k:this');
SELECT count(*) FROM pgjobs.jobs_claim('w', n => 10) c, pgjobs.jobs_complete(c.id, c.lease_token);
-- (Counted as a difference within the transaction: a backend's counts of its own scans hold those
-- of its earlier transactions too until it sends them, at most once a second.)
BEGIN;
SET LOCAL enable_seqscan = off;
CREATE TEMP TABLE job_keys_scans ON COMMIT DROP AS
SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relid = 'pgjobs.job_keys'::regclass;
SELECT pgjobs.jobs_history_drop(pgjobs._utc_month(now())) = pgjobs._utc_month(now() - interval '1 month') AS dropped_last_month;
SELECT x.seq_scan - s.seq_scan AS job_keys_read_whole
FROM pg_stat_xact_user_tables x, job_keys_scans s WHERE x.relid = 'pgjobs.job_keys'::regclass;
COMMIT;
SELECT id, task FROM pgjobs.job_history ORDER BY id;
SELECT idempotency_key AS key_left FROM pgjobs.job_keys WHERE idempotency_key IN ('k:last', 'k:this');
SELECT to_regclass('pgjobs.job_history_' || to_char(now() AT TIME ZONE 'UTC' - interval '1 month', 'YYYYMM')) AS dropped_partition;

-- The current month cannot be dropped.
SELECT regress.error_of('SELECT pgjobs.jobs_history_drop(''2999-01-01'')');

-- Finding and counting.
SELECT id, status, task FROM pgjobs.jobs_find(search => 'month') ORDER BY id;
SELECT id FROM pgjobs.jobs_find(status => 'completed', limit_rows => 1, offset_rows => 1);
-- A text among the newest jobs only: the newest one holds none, so a search of one finds nothing,
-- one of all finds them (and without a text the bound reads nothing less).
SELECT count(*) AS in_newest_one FROM pgjobs.jobs_find(search => 'month', search_newest => 1);
SELECT count(*) AS in_all FROM pgjobs.jobs_find(search => 'month', search_newest => 1000);
SELECT count(*) = (SELECT count(*) FROM pgjobs.job_list) AS bound_without_text
FROM pgjobs.jobs_find(search_newest => 1, limit_rows => 1000);
SELECT id FROM pgjobs.jobs_find(month => (now() + interval '5 years')::date);
SELECT * FROM pgjobs.jobs_counts();

-- When a job's last attempt began: job_list shows it once a claim takes the job, and job_history
-- keeps it (a retried job's last attempt's); null for a job that never ran.
SELECT pgjobs.jobs_add('timed', queue => 'timed', max_attempts => 2, backoff => '0 seconds') AS timed \gset
SELECT pgjobs.jobs_add('never run', queue => 'timed', run_at => now() + interval '1 hour') AS never \gset
SELECT begin_time IS NULL AS waiting_has_none FROM pgjobs.job_list WHERE id = :timed;
CREATE TEMP TABLE timed_claims AS
SELECT 1 AS attempt, lease_token, statement_timestamp() AS claimed_at FROM pgjobs.jobs_claim('w', ARRAY['timed'], 1);
SELECT l.begin_time = c.claimed_at AS shown_while_it_runs FROM pgjobs.job_list l, timed_claims c WHERE l.id = :timed;
SELECT pgjobs.jobs_fail(:timed, lease_token, 'again') FROM timed_claims;
SELECT pg_sleep(0.01);
INSERT INTO timed_claims
SELECT 2, lease_token, statement_timestamp() FROM pgjobs.jobs_claim('w', ARRAY['timed'], 1);
SELECT pgjobs.jobs_complete(:timed, lease_token) FROM timed_claims WHERE attempt = 2;
SELECT pgjobs.jobs_abort(:never);
SELECT h.task, h.status, h.begin_time = c.claimed_at AS began_at_last_claim, h.begin_time IS NULL AS never_began
FROM pgjobs.job_history h LEFT JOIN timed_claims c ON c.attempt = 2 AND h.id = :timed
WHERE h.queue = 'timed' ORDER BY h.id;
SELECT begin_time IS NOT NULL AND end_time IS NOT NULL AS listed_with_both FROM pgjobs.job_list WHERE id = :timed;
