-- Each queue's minutes (jobs_queue_minutes, jobs_queues_counted): the completions and failed
-- attempts of the minute under way, counted when their transactions commit (not those rolled
-- back, to a savepoint either), then written down with the queue's live jobs at the minute's end
-- by the launcher's round; a queue emptied since gets a row of zeros once. As non-superuser
-- members: each identity sees its own queues' minutes only (a proxy its root's; another's queue of
-- the same name is another queue), a role outside pgjobs_user none; nobody writes them. (The
-- minutes written hold the work of the tests before this one too: those of this test's roles are
-- shown.)
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.queue_minutes;

CREATE ROLE regress_charted;
CREATE ROLE regress_charted_proxy;
CREATE ROLE regress_charted_too;
CREATE ROLE regress_outsider;  -- not a member of pgjobs_user
GRANT pgjobs_user TO regress_charted, regress_charted_proxy, regress_charted_too;
GRANT regress_charted_proxy TO regress_charted;
SELECT regress.as_role('regress_charted', $$SELECT pgjobs.jobs_add_proxy('regress_charted_proxy')$$) AS proxy_added;

-- regress_charted's queue c: five jobs; four claimed: two complete, one fails its last attempt,
-- one fails with attempts left (back to waiting, an hour away); one stays ready.
SELECT regress.as_role('regress_charted', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add('t' || n, queue => 'c', max_attempts => CASE WHEN n = 3 THEN 1 ELSE 3 END,
                                                 backoff => '1 hour')
                          FROM generate_series(1, 5) n) a$$) AS added;
SELECT regress.as_role('regress_charted', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['c'], 4)$$) AS claimed;
SELECT regress.as_role('regress_charted', format($$SELECT pgjobs.jobs_complete(ARRAY[1, 2]::bigint[], ARRAY[%L, %L]::uuid[])$$,
                                                 regress.token(1), regress.token(2))) AS completed;
SELECT regress.as_role('regress_charted', format($$SELECT pgjobs.jobs_fail(3, %L, 'last')$$, regress.token(3))) AS failed_last;
SELECT regress.as_role('regress_charted', format($$SELECT pgjobs.jobs_fail(4, %L, 'again')$$, regress.token(4))) AS failed_again;
-- A completion the statement's error undoes (as_role's savepoint rolls back) is not counted, nor
-- one rolled back with its transaction.
SELECT regress.as_role('regress_charted', $$
    SELECT length(pgjobs.jobs_complete(j.id, j.lease_token)::text) + 1 / (j.id - j.id)
    FROM pgjobs.jobs_claim('w', ARRAY['c'], 1) j$$) AS undone;
SELECT id, status FROM pgjobs.jobs WHERE queue = 'c' ORDER BY id;
BEGIN;
SELECT regress.as_role('regress_charted', $$
    SELECT count(pgjobs.jobs_complete(j.id, j.lease_token)) FROM pgjobs.jobs_claim('w', ARRAY['c'], 1) j$$) AS completed_then_rolled_back;
ROLLBACK;
-- regress_charted_too's queue of the same name: one completion.
SELECT regress.as_role('regress_charted_too', $$SELECT pgjobs.jobs_add('theirs', queue => 'c')::text$$) AS added_too;
SELECT regress.as_role('regress_charted_too', $$
    SELECT count(pgjobs.jobs_complete(j.id, j.lease_token)) FROM pgjobs.jobs_claim('w', ARRAY['c'], 1) j$$) AS completed_too;

-- The minute under way, as each role reads it.
SELECT role, regress.as_role(role, $$
    SELECT string_agg(format('%s %s: %s completed, %s failed, ready %s, at this minute: %s', owner, queue, completed, failed,
                             coalesce(ready::text, 'not yet counted'), minute = date_trunc('minute', now())), '; ')
    FROM pgjobs.jobs_queue_minutes$$) AS minute_under_way
FROM (VALUES ('regress_charted'), ('regress_charted_proxy'), ('regress_charted_too'), ('regress_outsider')) AS r(role);

-- The launcher's round writes the minute down: the row of the minute that ended, with the live
-- jobs as they are; the minute under way starts from nothing. (In one transaction, whose now()
-- the round is given: a minute's end between two statements changes nothing shown.)
BEGIN;
SELECT pgjobs._launcher_tick(now()) IS NOT NULL AS round;
SELECT now() AS round_at \gset
SELECT owner::regrole, queue, minute = date_trunc('minute', now()) - interval '1 minute' AS last_minute, completed, failed,
       ready, scheduled, waiting, running, oldest_ready_at IS NOT NULL AS has_oldest
FROM pgjobs.queue_minutes WHERE owner::regrole::text LIKE 'regress\_charted%' ORDER BY owner::regrole::text;
SELECT role, regress.as_role(role, $$
    SELECT string_agg(format('%s: %s completed, %s failed, ready %s, scheduled %s', queue, completed, failed, ready, scheduled), '; ')
    FROM pgjobs.jobs_queue_minutes$$) AS written
FROM (VALUES ('regress_charted'), ('regress_charted_proxy'), ('regress_charted_too'), ('regress_outsider')) AS r(role);
COMMIT;

-- jobs_queues_counted: the live jobs as written at the last minute's end, beside jobs_queues's
-- counted now; a job added since shows in jobs_queues only.
SELECT regress.as_role('regress_charted', $$SELECT pgjobs.jobs_add('later', queue => 'c')::text$$) AS added_later;
SELECT regress.as_role('regress_charted', format($$
    SELECT format('now: ready %%s, scheduled %%s; at the minute''s end: ready %%s, scheduled %%s, counted then: %%s',
                  n.ready, n.scheduled, m.ready, m.scheduled, m.counted_at = date_trunc('minute', %L::timestamptz))
    FROM pgjobs.jobs_queues n JOIN pgjobs.jobs_queues_counted m USING (queue)$$, :'round_at')) AS counts;

-- The charted identity's queue is emptied: the next minute written gives it a row of zeros (its
-- last minute says it has nothing), and jobs_queues_counted no longer lists it, as jobs_queues.
DELETE FROM pgjobs.jobs WHERE queue = 'c';
BEGIN;
SELECT pgjobs._launcher_tick(now() + interval '1 minute') IS NOT NULL AS round_a_minute_later;
SELECT owner::regrole, minute = date_trunc('minute', now()) AS minute, completed, failed, ready, scheduled
FROM pgjobs.queue_minutes
WHERE minute = (SELECT max(minute) FROM pgjobs.queue_minutes) AND owner::regrole::text LIKE 'regress\_charted%' ORDER BY 1;
COMMIT;
SELECT role, regress.as_role(role, $$
    SELECT string_agg(format('%s: ready %s, scheduled %s', queue, ready, scheduled), '; ') FROM pgjobs.jobs_queues_counted$$) AS counted_after_emptied
FROM (VALUES ('regress_charted'), ('regress_charted_too')) AS r(role);

-- Nobody writes the minutes, not even their identity.
SELECT role, regress.as_role(role, $$DELETE FROM pgjobs.queue_minutes$$) AS delete_minutes
FROM (VALUES ('regress_charted'), ('regress_outsider')) AS r(role);
SELECT count(*) AS minutes_kept FROM pgjobs.queue_minutes WHERE owner::regrole::text LIKE 'regress\_charted%';

-- A table of more blocks than a round of the launcher counts (2,048 blocks of jobs, about 35,000
-- jobs: it counts a range a round, so that a big table never holds its round, and a schedule's
-- firing with it, for long): the minute is written by the round that counts its last block, and
-- says what jobs_queues counts; the round before writes nothing of it.
SELECT regress.reset();
DO $$
BEGIN
    FOR b IN 1..40 LOOP
        PERFORM pgjobs.jobs_add_batch((SELECT jsonb_agg(jsonb_build_object(
            'task', 'bulk', 'queue', 'bulk', 'run_at', CASE WHEN i % 4 = 0 THEN now() + interval '1 day' END))
            FROM generate_series(1, 1000) i));
    END LOOP;
END
$$;
SELECT pg_relation_size('pgjobs.jobs') / current_setting('block_size')::bigint BETWEEN 2049 AND 4096
    AS more_than_one_round_and_less_than_two;
BEGIN;
SELECT pgjobs._launcher_tick(now() + interval '2 minutes') IS NOT NULL AS first_round;
SELECT count(*) AS written_by_the_first_round FROM pgjobs.queue_minutes WHERE queue = 'bulk';
SELECT pgjobs._launcher_tick(now() + interval '2 minutes') IS NOT NULL AS second_round;
SELECT m.minute = date_trunc('minute', now() + interval '1 minute') AS minute, m.ready, m.scheduled,
       (m.ready, m.scheduled, m.waiting, m.running) = (q.ready, q.scheduled, q.waiting, q.running) AS as_jobs_queues
FROM pgjobs.queue_minutes m JOIN pgjobs.jobs_queues q ON q.owner = m.owner::regrole AND q.queue = m.queue
WHERE m.queue = 'bulk';
COMMIT;
SELECT regress.reset();

TRUNCATE pgjobs.queue_minutes;
DELETE FROM pgjobs.proxies WHERE proxy = 'regress_charted_proxy'::regrole;
DROP ROLE regress_charted, regress_charted_proxy, regress_charted_too, regress_outsider;
