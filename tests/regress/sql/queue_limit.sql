-- A concurrency limit (jobs_limit): claims lease at most max_running of a queue's jobs at once,
-- alone, among other queues and in jobs_complete_and_claim; a slot comes back when its job
-- completes, fails (to retry or for good), is released, snoozed, or its lease runs out and is
-- requeued, and an aborted job keeps its slot until its worker reports. The jobs leased when a
-- limit is set count; raising it lets more go, lowering it lets none go until enough have ended;
-- jobs_unlimit lifts it. As non-superuser members: a limit is the identity's (set by a proxy),
-- another identity's queue of the same name is another queue; bad input changes nothing; who may
-- read and write the limits and slots.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.queue_limits, pgjobs.queue_slots, pgjobs.proxies;

CREATE ROLE regress_limiter;
CREATE ROLE regress_limiter_proxy;
CREATE ROLE regress_limit_neighbour;
CREATE ROLE regress_limit_stranger;  -- not a member of pgjobs_user
GRANT pgjobs_user TO regress_limiter, regress_limiter_proxy, regress_limit_neighbour;
GRANT regress_limiter_proxy TO regress_limiter;
SELECT regress.as_role('regress_limiter', $$SELECT pgjobs.jobs_add_proxy('regress_limiter_proxy')$$) AS proxy_added;

-- Ten jobs in q (a retry each, no backoff), two in q_other; the neighbour's own q.
SELECT regress.as_role('regress_limiter', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add('t' || n, queue => 'q', max_attempts => 2, backoff => '0 seconds')
                          FROM generate_series(1, 10) n) a$$) AS added;
SELECT regress.as_role('regress_limiter', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add('other' || n, queue => 'q_other') FROM generate_series(1, 2) n) a$$) AS added_other;
SELECT regress.as_role('regress_limit_neighbour', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add('neighbours' || n, queue => 'q') FROM generate_series(1, 4) n) a$$) AS added_neighbours;
-- Job 1 is leased before the limit is set: it takes the first slot.
SELECT regress.as_role('regress_limiter', $$SELECT string_agg(id::text, ',') FROM pgjobs.jobs_claim('w', ARRAY['q'], 1)$$) AS leased_before;

-- Limited to 3 by the proxy, for its root: the limit says when and who, and job 1 holds slot 1.
SELECT regress.as_role('regress_limiter_proxy', $$
    SELECT max_running || ' by ' || set_by || ', at the statement''s time: ' || (set_at = statement_timestamp()) FROM pgjobs.jobs_limit('q', 3)$$) AS limited;
SELECT owner::regrole, queue, max_running, set_by FROM pgjobs.queue_limits;
SELECT slot, job_id, lease_token = regress.token(job_id) AS holds FROM pgjobs.queue_slots ORDER BY slot;

-- Claims take two more, then none: alone, and among other queues (q_other's jobs are taken).
SELECT regress.as_role('regress_limiter', $$SELECT string_agg(id::text, ',' ORDER BY id) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed;
SELECT regress.as_role('regress_limiter', $$SELECT coalesce(string_agg(id::text, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_at_limit;
SELECT regress.as_role('regress_limiter', $$SELECT string_agg(task, ',' ORDER BY id) FROM pgjobs.jobs_claim('w', ARRAY['q', 'q_other'], 10)$$) AS claimed_from_both;
SELECT regress.as_role('regress_limiter', $$SELECT coalesce(string_agg(task, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['q_other', 'q'], 10)$$) AS claimed_from_both_again;
-- Monitoring sees q's ready jobs held back by its limit.
SELECT metric, queue, value FROM pgjobs.metrics WHERE metric = 'jobs_held_back';
-- Another identity's q is not limited.
SELECT regress.as_role('regress_limit_neighbour', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS neighbour_claimed;
SELECT role, regress.as_role(role, $$
    SELECT string_agg(format('%s: ready %s, running %s, max_running %s', queue, ready, running, coalesce(max_running::text, '-')), '; ' ORDER BY queue)
    FROM pgjobs.jobs_queues$$) AS queues
FROM (VALUES ('regress_limiter'), ('regress_limiter_proxy'), ('regress_limit_neighbour'), ('regress_limit_stranger')) AS r(role);

-- Each way a lease ends gives its slot back, and the next claim takes exactly one job.
SELECT regress.as_role('regress_limiter', format($$SELECT pgjobs.jobs_complete(1::bigint, %L::uuid)$$, regress.token(1))) AS completed_1;
SELECT regress.as_role('regress_limiter', $$SELECT string_agg(id::text, ',') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_complete;
SELECT regress.as_role('regress_limiter', format($$SELECT pgjobs.jobs_fail(2::bigint, %L::uuid, 'once')$$, regress.token(2))) AS failed_2;
SELECT regress.as_role('regress_limiter', $$SELECT string_agg(id::text, ',') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_fail;
SELECT regress.as_role('regress_limiter', format($$SELECT pgjobs.jobs_release(ARRAY[3::bigint], ARRAY[%L::uuid])$$, regress.token(3))) AS released_3;
SELECT regress.as_role('regress_limiter', $$SELECT string_agg(id::text, ',') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_release;
SELECT regress.as_role('regress_limiter', format($$SELECT pgjobs.jobs_snooze(4, %L, '1 hour') IS NOT NULL$$, regress.token(4))) AS snoozed_4;
SELECT regress.as_role('regress_limiter', $$SELECT string_agg(id::text, ',') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_snooze;
SELECT id, status FROM pgjobs.jobs WHERE owner = 'regress_limiter'::regrole AND queue = 'q' AND lease_token IS NOT NULL ORDER BY id;
-- An abort keeps the slot until the worker reports; then it is free.
SELECT id AS aborted FROM pgjobs.jobs WHERE owner = 'regress_limiter'::regrole AND queue = 'q' AND lease_token IS NOT NULL ORDER BY id LIMIT 1 \gset
SELECT regress.as_role('regress_limiter', format($$SELECT pgjobs.jobs_abort(%s)$$, :aborted)) AS abort;
SELECT regress.as_role('regress_limiter', $$SELECT coalesce(string_agg(id::text, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_while_aborting;
SELECT regress.as_role('regress_limiter', format($$SELECT pgjobs.jobs_fail(%s::bigint, %L::uuid, 'stopped')$$, :aborted, regress.token(:aborted))) AS reported;
SELECT regress.as_role('regress_limiter', $$SELECT string_agg(id::text, ',') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_abort;
-- A lease that ran out is requeued by the next claim, whose slot it was: the claim takes it again.
SELECT id AS expired FROM pgjobs.jobs WHERE owner = 'regress_limiter'::regrole AND queue = 'q' AND lease_token IS NOT NULL ORDER BY id LIMIT 1 \gset
SELECT regress.expire_lease(:expired);
SELECT regress.as_role('regress_limiter', $$SELECT string_agg(id || ' attempt ' || attempt, ',') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_expiry;
-- jobs_complete_and_claim: the slot its completion frees is taken by its claim.
SELECT id AS done FROM pgjobs.jobs WHERE owner = 'regress_limiter'::regrole AND queue = 'q' AND lease_token IS NOT NULL ORDER BY id LIMIT 1 \gset
SELECT regress.as_role('regress_limiter', format($$SELECT string_agg(id::text, ',') FROM pgjobs.jobs_complete_and_claim(ARRAY[%s::bigint], ARRAY[%L::uuid], NULL, 'w', ARRAY['q'], 10)$$, :done, regress.token(:done))) AS completed_and_claimed;
SELECT count(*) AS leased FROM pgjobs.jobs WHERE owner = 'regress_limiter'::regrole AND queue = 'q' AND lease_token IS NOT NULL;

-- Raised to 4: one more; lowered to 1: none until only one is left leased.
SELECT regress.as_role('regress_limiter', $$SELECT max_running FROM pgjobs.jobs_limit('q', 4)$$) AS raised;
SELECT regress.as_role('regress_limiter', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_raise;
SELECT regress.as_role('regress_limiter', $$SELECT max_running FROM pgjobs.jobs_limit('q', 1)$$) AS lowered;
SELECT count(*) AS slots FROM pgjobs.queue_slots;
SELECT regress.as_role('regress_limiter', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_lower;
-- Lifted: the rest of q is claimed; a second lift says it was not limited.
SELECT regress.as_role('regress_limiter', $$SELECT pgjobs.jobs_unlimit('q')::text$$) AS unlimited;
SELECT regress.as_role('regress_limiter', $$SELECT pgjobs.jobs_unlimit('q')::text$$) AS unlimited_again;
SELECT count(*) AS slots FROM pgjobs.queue_slots;
SELECT regress.as_role('regress_limiter', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_unlimit;

-- Bad input is refused with 22023 and changes nothing: a limit outside 1 to 1000 or none, a null,
-- empty or extension's queue, also for an administrator; a limit written past the function.
SELECT regress.as_role('regress_limiter', $$SELECT max_running FROM pgjobs.jobs_limit('kept', 5)$$) AS kept;
SELECT regress.fingerprint() AS before \gset
SELECT string_agg(l::text, ',' ORDER BY l.owner, l.queue) || (SELECT count(*) FROM pgjobs.queue_slots) AS limits_before FROM pgjobs.queue_limits l \gset
SELECT statement, regress.as_role('regress_limiter', 'SELECT regress.error_of(' || quote_literal(statement) || ')') AS result
FROM (VALUES ($$SELECT pgjobs.jobs_limit('kept', 0)$$),
             ($$SELECT pgjobs.jobs_limit('kept', -1)$$),
             ($$SELECT pgjobs.jobs_limit('kept', 1001)$$),
             ($$SELECT pgjobs.jobs_limit('kept', NULL)$$),
             ($$SELECT pgjobs.jobs_limit(NULL, 5)$$),
             ($$SELECT pgjobs.jobs_limit('', 5)$$),
             ($$SELECT pgjobs.jobs_limit('pg_jobs.sql', 5)$$),
             ($$SELECT pgjobs.jobs_limit('pg_jobs.batch:anyone', 5)$$),
             ($$SELECT pgjobs.jobs_unlimit(NULL)$$),
             ($$SELECT pgjobs.jobs_unlimit('pg_jobs.compute')$$)) AS s(statement);
SELECT regress.error_of($$SELECT pgjobs.jobs_limit('pg_jobs.sql', 5)$$) AS as_superuser;
SELECT regress.error_of($$INSERT INTO pgjobs.queue_limits VALUES (0, 'pg_jobs.sql', 5, now(), 'postgres')$$) AS written_directly;
SELECT regress.error_of($$INSERT INTO pgjobs.queue_limits VALUES (0, 'big', 5000, now(), 'postgres')$$) AS too_many_directly;
SELECT regress.fingerprint() = :'before' AS unchanged,
       (SELECT string_agg(l::text, ',' ORDER BY l.owner, l.queue) || (SELECT count(*) FROM pgjobs.queue_slots) FROM pgjobs.queue_limits l) = :'limits_before' AS limits_unchanged;

-- Access: each identity (and its proxy) reads its own limits and slots only; a role outside
-- pgjobs_user may neither read them nor limit; members write the tables only through the functions.
SELECT role, regress.as_role(role, $$SELECT coalesce(string_agg(owner::regrole || ':' || queue || ':' || max_running, ',' ORDER BY queue), 'nothing') FROM pgjobs.queue_limits$$) AS sees,
       regress.as_role(role, $$SELECT count(*) FROM pgjobs.queue_slots$$) AS slots_seen,
       regress.as_role(role, $$SELECT max_running FROM pgjobs.jobs_limit('mine', 2)$$) AS limits,
       regress.as_role(role, $$SELECT pgjobs.jobs_unlimit('mine')::text$$) AS unlimits
FROM (VALUES ('regress_limiter'), ('regress_limiter_proxy'), ('regress_limit_neighbour'), ('regress_limit_stranger')) AS r(role);
SELECT regress.fingerprint() AS before \gset
SELECT string_agg(l::text, ',' ORDER BY l.owner, l.queue) || (SELECT string_agg(s::text, ',' ORDER BY s.slot) FROM pgjobs.queue_slots s) AS limits_before FROM pgjobs.queue_limits l \gset
SELECT role, statement, regress.as_role(role, statement) AS result
FROM (VALUES ('regress_limiter'), ('regress_limit_neighbour')) AS r(role),
     (VALUES ($$INSERT INTO pgjobs.queue_limits VALUES (pgjobs.identity(), 'direct', 1, now(), current_user::regrole) RETURNING queue$$),
             ($$UPDATE pgjobs.queue_limits SET max_running = 1000 RETURNING queue$$),
             ($$DELETE FROM pgjobs.queue_limits RETURNING queue$$),
             ($$UPDATE pgjobs.queue_slots SET job_id = NULL RETURNING slot$$),
             ($$DELETE FROM pgjobs.queue_slots RETURNING slot$$),
             ($$SELECT slot FROM pgjobs.queue_slots FOR UPDATE$$)) AS s(statement)
ORDER BY role, statement;
SELECT regress.fingerprint() = :'before' AS unchanged,
       (SELECT string_agg(l::text, ',' ORDER BY l.owner, l.queue) || (SELECT string_agg(s::text, ',' ORDER BY s.slot) FROM pgjobs.queue_slots s) FROM pgjobs.queue_limits l) = :'limits_before' AS limits_unchanged;

SELECT regress.as_role('regress_limiter', $$SELECT pgjobs.jobs_remove_proxy('regress_limiter_proxy')$$) AS proxy_removed;
TRUNCATE pgjobs.queue_limits, pgjobs.queue_slots;
SELECT regress.reset();
DROP ROLE regress_limiter, regress_limiter_proxy, regress_limit_neighbour, regress_limit_stranger;
