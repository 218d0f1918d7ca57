-- Posting batch jobs: one active job per command, dependencies, and every refusal changing
-- nothing. The agent's side is batch_agent, who may do what is access_batch.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.job_dependencies, pgjobs.batch_computers;
CREATE ROLE regress_poster IN ROLE pgjobs_user;
INSERT INTO pgjobs.batch_computers (computer, agent, capacity) VALUES ('alpha', 10, 2);
SET ROLE regress_poster;

-- A job for any computer, one for alpha; the same command again replaces the one waiting.
SELECT pgjobs.batch_post('backup', ARRAY['--full', '--password', 'hunter2']) AS backup \gset
SELECT :backup AS first;
SELECT pgjobs.batch_post('backup', ARRAY['--full', '--password', 'hunter2'], priority => 5) AS same_command;
SELECT pgjobs.batch_post('report', computer => 'alpha', routine => 'daily', revision => '{"commit": "abc1"}') AS report \gset
SELECT id, status, kind, computer, routine, command, args, priority, left(hash, 12) AS hash
FROM pgjobs.batch_jobs ORDER BY id;
-- Secrets are masked wherever a member reads the job, job_list and jobs_find included.
SELECT payload -> 'args' AS job_list_args FROM pgjobs.job_list WHERE id = :backup;
SELECT payload -> 'args' AS jobs_find_args FROM pgjobs.jobs_find() WHERE id = :backup;

-- Dependencies, by id or by command hash: a job waits until they complete.
SELECT pgjobs.batch_post('compress', depends_on => ARRAY[:'backup', (SELECT hash FROM pgjobs.batch_jobs WHERE id = :report)]) AS compress \gset
SELECT command, status, depends_on = ARRAY[:backup, :report]::bigint[] AS depends_on_both, run_at IS NULL AS no_time_yet FROM pgjobs.batch_jobs WHERE id = :compress;
SELECT count(*) AS waits FROM pgjobs.job_dependencies WHERE job_id = :compress;
-- Replacing the waiting job replaces what it waits for.
SELECT pgjobs.batch_post('compress', depends_on => ARRAY[:'report']) = :compress AS replaced;
SELECT on_job = :report AS waits_for_report FROM pgjobs.job_dependencies WHERE job_id = :compress;
-- A job posted for later waits for its time.
SELECT pgjobs.batch_post('later', run_at => now() + interval '1 hour') AS later \gset
SELECT command, status FROM pgjobs.batch_jobs WHERE id = :later;

-- Refusals, each with its SQLSTATE, and nothing changed.
RESET ROLE;
SELECT regress.fingerprint() AS before \gset
SET ROLE regress_poster;
SELECT refusal, regress.error_of(statement) AS error
FROM (VALUES
    ('unknown computer', $$SELECT pgjobs.batch_post('x', computer => 'gamma')$$),
    ('empty command', $$SELECT pgjobs.batch_post('  ')$$),
    ('null command', $$SELECT pgjobs.batch_post(NULL)$$),
    ('unknown kind', $$SELECT pgjobs.batch_post('x', kind => 'cron')$$),
    ('kill without routine', $$SELECT pgjobs.batch_post('', kind => 'kill', computer => 'alpha')$$),
    ('kill for ANY', $$SELECT pgjobs.batch_post('', kind => 'kill', routine => 'daily')$$),
    ('null argument', $$SELECT pgjobs.batch_post('x', ARRAY['a', NULL])$$),
    ('env not strings', $$SELECT pgjobs.batch_post('x', env => '{"A": 1}')$$),
    ('malformed dependency', $$SELECT pgjobs.batch_post('x', depends_on => ARRAY['12abc'])$$),
    ('unknown dependency', $$SELECT pgjobs.batch_post('x', depends_on => ARRAY['999'])$$),
    ('unknown hash', $$SELECT pgjobs.batch_post('x', depends_on => ARRAY[repeat('ab', 32)])$$),
    ('cycle', $$SELECT pgjobs.batch_post('report', computer => 'alpha', routine => 'daily', revision => '{"commit": "abc1"}', depends_on => ARRAY[$$ || :compress || $$::text])$$),
    ('self', $$SELECT pgjobs.batch_post('compress', depends_on => ARRAY[$$ || :compress || $$::text])$$),
    ('attempts', $$SELECT pgjobs.batch_post('x', max_attempts => 0)$$),
    -- A job's label (its routine, else its command) is an entry of an index.
    ('long command', $$SELECT pgjobs.batch_post(repeat('c', 2001))$$),
    ('long routine', $$SELECT pgjobs.batch_post('x', routine => repeat('r', 2001))$$),
    ('malformed hash', $$SELECT * FROM pgjobs.batch_get('ABC')$$),
    ('null hash', $$SELECT * FROM pgjobs.batch_get(NULL)$$),
    ('unknown grouping', $$SELECT * FROM pgjobs.batch_groups('owner')$$),
    ('unknown status', $$SELECT pgjobs.batch_find(statuses => ARRAY['DONE'])$$),
    ('negative limit', $$SELECT pgjobs.batch_find(limit_rows => -1)$$),
    ('cancel unknown', $$SELECT * FROM pgjobs.batch_cancel(ARRAY[$$ || :backup || $$, 999])$$),
    ('release not waiting', $$SELECT pgjobs.batch_release($$ || :backup || $$)$$),
    ('group without key', $$SELECT * FROM pgjobs.batch_cancel_where(by => 'routine')$$)
) AS r(refusal, statement);
RESET ROLE;
SELECT regress.fingerprint() = :'before' AS nothing_changed,
       (SELECT count(*) FROM pgjobs.job_dependencies) AS waits;
-- A dependency of another owner is refused as one that does not exist.
CREATE ROLE regress_stranger IN ROLE pgjobs_user;
SELECT regress.as_role('regress_stranger', format('SELECT pgjobs.batch_post(''x'', depends_on => ARRAY[''%s''])', :backup)) AS others_job;
SELECT regress.as_role('regress_stranger', format('SELECT pgjobs.batch_post(''x'', depends_on => ARRAY[%L])', hash)) AS others_hash
FROM pgjobs.batch_jobs WHERE id = :backup;
SET ROLE regress_poster;

-- Reading: active jobs with counts by status, one hash's latest job, the groups.
SELECT f -> 'total' AS total, f -> 'counts' AS counts, jsonb_array_length(f -> 'months') AS months,
       (SELECT array_agg((r ->> 'id')::int) FROM jsonb_array_elements(f -> 'rows') r) AS newest_first
FROM pgjobs.batch_find() f;
SELECT (SELECT array_agg((r ->> 'id')::int) FROM jsonb_array_elements(f -> 'rows') r) AS page
FROM pgjobs.batch_find(statuses => ARRAY['PENDING', 'WAITING'], limit_rows => 2, offset_rows => 1) f;
SELECT (SELECT array_agg((r ->> 'id')::int) FROM jsonb_array_elements(f -> 'rows') r) AS by_text
FROM pgjobs.batch_find(search => 'abc1') f;
SELECT id = :backup AS latest, command FROM pgjobs.batch_get((SELECT hash FROM pgjobs.batch_jobs WHERE id = :backup));
SELECT group_key, status, jobs, counts FROM pgjobs.batch_groups('routine');
SELECT group_key, status, jobs, counts FROM pgjobs.batch_groups('status');
SELECT group_key, status, jobs FROM pgjobs.batch_groups('computer');
SELECT count(*) AS groups_by_time FROM pgjobs.batch_groups_active;
SELECT array_agg(id) = ARRAY[:later, :compress]::bigint[] AS newest_two FROM pgjobs.batch_group_jobs('computer', 'ANY', limit_rows => 2);

-- Cancel: a waiting job is no longer handed out; its dependents are blocked, with the reason;
-- the owner releases one.
SELECT status FROM pgjobs.batch_cancel(ARRAY[:report]);
SELECT command, status, blocked_reason = format('job %s ended in CANCEL', :report) AS reason_names_it
FROM pgjobs.batch_jobs WHERE id IN (:report, :compress) ORDER BY id;
SELECT pgjobs.batch_release(:compress) AS released;
SELECT count(*) AS waits_left FROM pgjobs.job_dependencies;
-- Cancel by filter or by group: the active jobs selected, read or not.
SELECT id = :later AS later, status FROM pgjobs.batch_cancel_where(by => 'routine', group_key => 'later');
SELECT id = :backup AS backup, status FROM pgjobs.batch_cancel_where(search => 'backup');
SELECT status, count(*) FROM pgjobs.batch_jobs GROUP BY 1 ORDER BY 1;

-- A month: finished jobs stay under the month they were due; dropping it is one call.
RESET ROLE;
SELECT count(*) >= 0 AS months_made FROM pgjobs.jobs_history_prepare(0);
SET ROLE regress_poster;
SELECT pgjobs.batch_post('old', run_at => pgjobs._utc_month(now()) - interval '1 month' + interval '1 day') AS old \gset
SELECT status FROM pgjobs.batch_cancel(ARRAY[:old]);
SELECT month = pgjobs._utc_month(now() - interval '1 month') AS in_last_month, status FROM pgjobs.batch_jobs WHERE id = :old;
SELECT jsonb_array_length(pgjobs.batch_find() -> 'months') AS months_before,
       pgjobs.batch_find(month => pgjobs._utc_month(now()) - 1) -> 'total' AS last_months_jobs;
RESET ROLE;
SELECT count(*) AS dropped FROM pgjobs.jobs_history_drop(pgjobs._utc_month(now()));
SET ROLE regress_poster;
SELECT jsonb_array_length(pgjobs.batch_find() -> 'months') AS months_after,
       pgjobs.batch_find(month => pgjobs._utc_month(now()) - 1) -> 'total' AS last_months_jobs;
RESET ROLE;
