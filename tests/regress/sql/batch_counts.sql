-- The Jobs tab's counts (batch_tally) and status words after each kind of transition: post,
-- replace, dependencies (waiting, blocked, released, completed), claim, start, finish, hand
-- back, silence, cancel (waiting and running), jobs_abort, the fold and the rebuild. After each,
-- the counted reads (batch_groups, batch_group_jobs and batch_find with no month and no text)
-- must give what reading every job gives (the same calls with search '', which match every job
-- and take the reading path), as the member and as a superuser.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.job_dependencies, pgjobs.batch_computers;
CREATE ROLE regress_counts_user IN ROLE pgjobs_user;
CREATE ROLE regress_counts_other IN ROLE pgjobs_user;
CREATE ROLE regress_counts_agent IN ROLE pgjobs_agent;

-- 'agree', or what disagrees: the counts against the jobs, the groups (first_due to within its
-- minute, see batch_tally.first_due), each group's jobs, and batch_find's total, counts and months.
CREATE FUNCTION regress.counts_disagree() RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    grouped_by text;
    wrong text[] := '{}';
BEGIN
    -- (A member may not call it.)
    IF current_setting('is_superuser') = 'on' THEN
        IF EXISTS (SELECT FROM pgjobs._batch_tally_differences()) THEN
            wrong := wrong || 'tally'::text;
        END IF;
    END IF;
    FOREACH grouped_by IN ARRAY ARRAY['time', 'routine', 'computer', 'status'] LOOP
        IF EXISTS (SELECT FROM pgjobs.batch_groups(grouped_by) f
                   FULL JOIN pgjobs.batch_groups(grouped_by, search => '') r ON r.group_key = f.group_key
                   WHERE (f.status, f.jobs, f.counts) IS DISTINCT FROM (r.status, r.jobs, r.counts)
                      OR NOT (f.first_due <= r.first_due
                              AND date_trunc('minute', f.first_due) = date_trunc('minute', r.first_due))) THEN
            wrong := wrong || ('groups by ' || grouped_by);
        END IF;
    END LOOP;
    FOREACH grouped_by IN ARRAY ARRAY['time', 'routine', 'computer', 'status'] LOOP
        IF EXISTS (SELECT FROM pgjobs.batch_groups(grouped_by, search => '') g
                   WHERE ARRAY(SELECT row(b.*)::text FROM pgjobs.batch_group_jobs(grouped_by, g.group_key) b)
                         IS DISTINCT FROM
                         ARRAY(SELECT row(b.*)::text FROM pgjobs.batch_group_jobs(grouped_by, g.group_key, search => '') b)
                      OR ARRAY(SELECT b.id FROM pgjobs.batch_group_jobs(grouped_by, g.group_key, limit_rows => 1, offset_rows => 1) b)
                         IS DISTINCT FROM
                         ARRAY(SELECT b.id FROM pgjobs.batch_group_jobs(grouped_by, g.group_key, search => '', limit_rows => 1, offset_rows => 1) b)
                      OR ARRAY(SELECT b.id FROM pgjobs.batch_group_jobs(grouped_by, g.group_key, statuses => ARRAY['WAITING', 'RUNNING']) b)
                         IS DISTINCT FROM
                         ARRAY(SELECT b.id FROM pgjobs.batch_group_jobs(grouped_by, g.group_key, statuses => ARRAY['WAITING', 'RUNNING'], search => '') b)) THEN
            wrong := wrong || ('jobs of groups by ' || grouped_by);
        END IF;
    END LOOP;
    IF pgjobs.batch_find() IS DISTINCT FROM pgjobs.batch_find(search => '')
       OR pgjobs.batch_find(statuses => ARRAY['PENDING', 'BLOCKED'], limit_rows => 1)
          IS DISTINCT FROM pgjobs.batch_find(statuses => ARRAY['PENDING', 'BLOCKED'], search => '', limit_rows => 1) THEN
        wrong := wrong || 'find'::text;
    END IF;
    RETURN coalesce(array_to_string(nullif(wrong, '{}'), ', '), 'agree');
END
$$;
GRANT USAGE ON SCHEMA regress TO regress_counts_user;
GRANT EXECUTE ON FUNCTION regress.counts_disagree() TO regress_counts_user;

-- The member's view: its jobs' words, its groups by status, and whether every read agrees (as
-- the member and as a superuser, who sees every member's jobs).
CREATE FUNCTION regress.counts(at_step text) RETURNS TABLE (step text, words text, by_status text, agree text)
LANGUAGE sql AS $$
    SELECT at_step,
           regress.as_role('regress_counts_user',
               $q$SELECT string_agg(command || ' ' || status, ', ' ORDER BY id) FROM pgjobs.batch_active$q$),
           regress.as_role('regress_counts_user',
               $q$SELECT string_agg(format('%s %s %s', group_key, jobs, counts), '; ' ORDER BY group_key) FROM pgjobs.batch_groups('status')$q$),
           regress.as_role('regress_counts_user', $q$SELECT regress.counts_disagree()$q$)
           || ' / ' || regress.counts_disagree();
$$;

SELECT regress.as_role('regress_counts_agent', $$SELECT pgjobs.batch_register('gamma', 4)$$) AS gamma;

-- Posts: due now (PENDING), later (WAITING, also, most often, within the current minute), on a computer,
-- with a routine, and waiting for a dependency; another member's job is not counted for this one.
SET ROLE regress_counts_other;
SELECT pgjobs.batch_post('theirs', run_at => now() + interval '5 hours') AS theirs \gset
SET ROLE regress_counts_user;
SELECT pgjobs.batch_post('build') AS build \gset
SELECT pgjobs.batch_post('later', run_at => now() + interval '1 hour') AS later \gset
SELECT pgjobs.batch_post('soon', run_at => now() + interval '30 seconds') AS soon \gset
SELECT pgjobs.batch_post('past', run_at => now() - interval '1 microsecond') AS past \gset
SELECT pgjobs.batch_post('report', routine => 'nightly', computer => 'gamma') AS report \gset
SELECT pgjobs.batch_post('test', depends_on => ARRAY[:'build']) AS test \gset
SELECT pgjobs.batch_post('deploy', depends_on => ARRAY[:'test']) AS deploy \gset
RESET ROLE;
SELECT * FROM regress.counts('posted');
SELECT regress.as_role('regress_counts_user', $$SELECT count(*)::text FROM pgjobs.batch_tally WHERE owner <> (SELECT pgjobs.identity())$$) AS others_rows_seen,
       regress.as_role('regress_counts_user', $$SELECT pgjobs.batch_find() ->> 'total'$$) AS members_total,
       pgjobs.batch_find() ->> 'total' AS superusers_total;
SELECT regress.as_role('regress_counts_user', $$INSERT INTO pgjobs.batch_tally VALUES (10, now(), 'x', 'ANY', now(), 1000) RETURNING n$$) AS write_counts,
       regress.as_role('regress_counts_user', $$SELECT pgjobs._batch_tally_rebuild()$$) AS rebuild;

-- Replace: the waiting job takes the new time (same id), and moves from one minute to another.
SET ROLE regress_counts_user;
SELECT pgjobs.batch_post('later', run_at => now() + interval '3 hours') = :later AS same_job;
RESET ROLE;
SELECT run_at - now() > interval '2 hours' AS moved FROM pgjobs.batch_active WHERE id = :later;
SELECT * FROM regress.counts('replaced');

-- Claim and start: FETCHED, then RUNNING; their counts leave the tally.
SELECT regress.as_role('regress_counts_agent', $$SELECT string_agg(command, ',' ORDER BY id) FROM pgjobs.batch_claim('gamma', 3)$$) AS taken;
SELECT regress.as_role('regress_counts_agent', format('SELECT pgjobs.batch_started(%s, %L, 100)', :build, regress.token(:build))) AS started;
SELECT * FROM regress.counts('claimed');

-- Completed: its dependent is due at once; the dependent fails, and the job after it is BLOCKED.
SELECT regress.as_role('regress_counts_agent', format($$SELECT pgjobs.batch_finish(%s, %L, 0, '1 second')$$, :build, regress.token(:build))) AS finished;
SELECT * FROM regress.counts('completed');
SELECT regress.as_role('regress_counts_agent', $$SELECT string_agg(command, ',' ORDER BY id) FROM pgjobs.batch_claim('gamma', 4)$$) AS taken;
SELECT regress.as_role('regress_counts_agent', format($$SELECT pgjobs.batch_finish(%s, %L, 1, '1 second', 'broken')$$, :test, regress.token(:test))) AS failed;
SELECT * FROM regress.counts('failed');

-- Release: the blocked job runs without its dependency.
SELECT regress.as_role('regress_counts_user', format('SELECT pgjobs.batch_release(%s)', :deploy)) AS released;
SELECT * FROM regress.counts('released');

-- Hand back: pending again. Silence: with attempts left, pending again (the rescue); without,
-- it ends in ERROR.
SELECT regress.as_role('regress_counts_agent', format($$SELECT pgjobs.batch_hand_back(ARRAY[%s]::bigint[], ARRAY[%L]::uuid[])$$, :past, regress.token(:past))) AS handed_back;
SELECT * FROM regress.counts('handed back');
SET ROLE regress_counts_user;
SELECT pgjobs.batch_post('flaky', max_attempts => 2) AS flaky \gset
RESET ROLE;
SELECT regress.as_role('regress_counts_agent', $$SELECT string_agg(command, ',' ORDER BY id) FROM pgjobs.batch_claim('gamma', 4)$$) AS taken;
SELECT regress.expire_lease(:flaky), regress.expire_lease(:report);
SELECT pgjobs._rescue_expired() AS rescued;
SELECT * FROM regress.counts('rescued');

-- Cancel: a running job is marked CANCEL until its agent reports; a waiting one ends at once,
-- by batch_cancel and by jobs_abort.
SELECT regress.as_role('regress_counts_user', format($$SELECT string_agg(status, ',') FROM pgjobs.batch_cancel(ARRAY[%s, %s])$$, :past, :soon)) AS cancelled;
SELECT * FROM regress.counts('cancelled');
SELECT regress.as_role('regress_counts_user', format('SELECT pgjobs.jobs_abort(%s)', :flaky)) AS aborted;
SELECT * FROM regress.counts('aborted');
SELECT regress.as_role('regress_counts_agent', format($$SELECT pgjobs.batch_finish(%s, %L, NULL, '1 second', cancelled => true)$$, :past, regress.token(:past))) AS cancel_reported;
SELECT * FROM regress.counts('cancel reported');

-- The fold leaves one row per key and changes no count; the rebuild neither.
SELECT count(*) > count(DISTINCT (owner, due_minute, label, computer, run_minute)) AS deltas_before_fold FROM pgjobs.batch_tally;
SELECT pgjobs._batch_tally_fold();
SELECT count(*) = count(DISTINCT (owner, due_minute, label, computer, run_minute)) AS one_row_per_key,
       count(*) FILTER (WHERE n = 0) AS zero_rows FROM pgjobs.batch_tally;
SELECT * FROM regress.counts('folded');
UPDATE pgjobs.jobs SET run_at = now() - interval '1 hour' WHERE id = :later;
SELECT count(*) AS differences_behind_its_back FROM pgjobs._batch_tally_differences();
SELECT pgjobs._batch_tally_rebuild();
SELECT * FROM regress.counts('rebuilt');

-- The counted reads take the same arguments and refuse the same input.
SELECT regress.as_role('regress_counts_user', $$SELECT count(*)::text FROM pgjobs.batch_group_jobs('time', 'not a minute')$$) AS no_such_group,
       regress.as_role('regress_counts_user', $$SELECT count(*)::text FROM pgjobs.batch_group_jobs('time', '2026-99-99 99:99 x')$$) AS no_such_minute,
       regress.as_role('regress_counts_user', $$SELECT count(*)::text FROM pgjobs.batch_group_jobs('routine', NULL)$$) AS null_group,
       regress.as_role('regress_counts_user', $$SELECT count(*)::text FROM pgjobs.batch_groups('owner')$$) AS bad_grouping,
       regress.as_role('regress_counts_user', $$SELECT count(*)::text FROM pgjobs.batch_group_jobs('status', 'PENDING', limit_rows => -1)$$) AS bad_limit;

-- Waits exist only for jobs whose run_at is infinity (what lets the views look up job_dependencies
-- for those jobs only).
SELECT count(*) AS waits_of_timed_jobs FROM pgjobs.job_dependencies w JOIN pgjobs.jobs j ON j.id = w.job_id
WHERE j.run_at < 'infinity';
