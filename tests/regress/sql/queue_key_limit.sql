-- Key limits (jobs_key_limit, jobs_key_rate_limit): claims lease at most max_per_key jobs of
-- each concurrency key of a queue at once, one job of a key per claim, in a round across the keys;
-- with ordered, one at a time in the order of (priority, due_at, id), a job that failed with
-- attempts left holding its key until it runs again. A slot comes back when its job ends or its
-- lease runs out; the jobs leased when a limit is set count; jobs without a key are not limited; a
-- queue may also have a concurrency limit, a rate limit, or both; a retried job keeps its key; a
-- rate limit per key. As non-superuser members: a limit is the identity's (set by a proxy),
-- another identity's queue of the same name is another queue; bad input changes nothing; who may
-- read and write the limits, gates and slots.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.queue_key_limits, pgjobs.queue_key_gates, pgjobs.queue_key_slots, pgjobs.queue_key_tokens, pgjobs.queue_limits, pgjobs.proxies CASCADE;

CREATE ROLE regress_keyer;
CREATE ROLE regress_keyer_proxy;
CREATE ROLE regress_key_neighbour;
CREATE ROLE regress_key_stranger;  -- not a member of pgjobs_user
GRANT pgjobs_user TO regress_keyer, regress_keyer_proxy, regress_key_neighbour;
GRANT regress_keyer_proxy TO regress_keyer;
SELECT regress.as_role('regress_keyer', $$SELECT pgjobs.jobs_add_proxy('regress_keyer_proxy')$$) AS proxy_added;

-- In q: three jobs of key a, two of b, one of c, one without a key; a failure retries after an
-- hour. The neighbour's own q, with jobs of key a.
SELECT regress.as_role('regress_keyer', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add(k || n, queue => 'q', concurrency_key => k, max_attempts => 2, backoff => '1 hour')
                          FROM (VALUES ('a', 3), ('b', 2), ('c', 1)) AS keys(k, jobs), generate_series(1, jobs) n) a$$) AS added;
SELECT regress.as_role('regress_keyer', $$SELECT pgjobs.jobs_add('free', queue => 'q') IS NOT NULL$$) AS added_without_key;
SELECT regress.as_role('regress_key_neighbour', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add('neighbours_a' || n, queue => 'q', concurrency_key => 'a') FROM generate_series(1, 3) n) a$$) AS added_neighbours;
-- a1 is leased before the limit is set: it takes a's slot.
SELECT regress.as_role('regress_keyer', $$SELECT string_agg(task, ',') FROM pgjobs.jobs_claim('w', ARRAY['q'], 1)$$) AS leased_before;

-- One per key, set by the proxy for its root: the limit says when and who, a1 holds a's slot.
SELECT regress.as_role('regress_keyer_proxy', $$
    SELECT max_per_key || ' ordered ' || ordered || ' by ' || set_by || ', at the statement''s time: ' || (set_at = statement_timestamp())
    FROM pgjobs.jobs_key_limit('q', 1)$$) AS limited;
SELECT owner::regrole, queue, max_per_key, ordered, set_by FROM pgjobs.queue_key_limits;
SELECT count(*) AS gates FROM pgjobs.queue_key_gates;
SELECT s.concurrency_key, s.slot, j.task FROM pgjobs.queue_key_slots s JOIN pgjobs.jobs j ON j.id = s.job_id ORDER BY 1, 2;

-- A claim of ten takes the first job of b and c and the job without a key, not a2 nor b2; the
-- next takes nothing. Another identity's q is not limited.
SELECT regress.as_role('regress_keyer', $$SELECT string_agg(task, ',' ORDER BY task) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed;
SELECT regress.as_role('regress_keyer', $$SELECT coalesce(string_agg(task, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_at_limit;
-- Monitoring sees a2, a3 and b2 held back by their keys.
SELECT metric, queue, value FROM pgjobs.metrics WHERE metric = 'jobs_held_back_by_key';
SELECT regress.as_role('regress_key_neighbour', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS neighbour_claimed;
SELECT role, regress.as_role(role, $$
    SELECT string_agg(format('%s: ready %s, running %s, max_per_key %s, ordered %s', queue, ready, running,
                             coalesce(max_per_key::text, '-'), coalesce(key_ordered::text, '-')), '; ' ORDER BY queue)
    FROM pgjobs.jobs_queues$$) AS queues
FROM (VALUES ('regress_keyer'), ('regress_keyer_proxy'), ('regress_key_neighbour'), ('regress_key_stranger')) AS r(role);

-- Each end of a lease frees its key's slot: a completion (a2 next), a failure to retry (not
-- ordered: b2 goes on while b1 waits an hour), a lease that ran out (requeued, c1 again).
SELECT id AS a1 FROM pgjobs.jobs WHERE task = 'a1' \gset
SELECT id AS b1 FROM pgjobs.jobs WHERE task = 'b1' \gset
SELECT id AS c1 FROM pgjobs.jobs WHERE task = 'c1' \gset
SELECT regress.as_role('regress_keyer', format($$SELECT pgjobs.jobs_complete(%s::bigint, %L::uuid)$$, :a1, regress.token(:a1))) AS completed_a1;
SELECT regress.as_role('regress_keyer', format($$SELECT pgjobs.jobs_fail(%s::bigint, %L::uuid, 'once')$$, :b1, regress.token(:b1))) AS failed_b1;
SELECT regress.expire_lease(:c1);
SELECT regress.as_role('regress_keyer', $$SELECT string_agg(task || ' attempt ' || attempt, ',' ORDER BY task) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_ends;
-- Two per key: a3 goes beside a2; b1 is not due.
SELECT regress.as_role('regress_keyer', $$SELECT max_per_key FROM pgjobs.jobs_key_limit('q', 2)$$) AS raised;
SELECT regress.as_role('regress_keyer', $$SELECT coalesce(string_agg(task, ',' ORDER BY task), 'none') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_raise;
SELECT s.concurrency_key, s.slot, j.task FROM pgjobs.queue_key_slots s JOIN pgjobs.jobs j ON j.id = s.job_id ORDER BY 1, 2;

-- Ordered (queue o): a1 fails with an attempt left and holds a: a2 waits, though due, until a1
-- has run again; b goes on meanwhile. Jobs run in the order of (priority, due_at, id): b's job
-- of priority -1 first.
SELECT regress.as_role('regress_keyer', $$SELECT max_per_key || ' ordered ' || ordered FROM pgjobs.jobs_key_limit('o', 1, ordered => true)$$) AS ordered;
SELECT regress.as_role('regress_keyer', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add(k || n, queue => 'o', concurrency_key => k, max_attempts => 2, backoff => '1 hour',
                                                 priority => CASE WHEN k = 'b' AND n = 2 THEN -1 ELSE 0 END)
                          FROM (VALUES ('a'), ('b')) AS keys(k), generate_series(1, 2) n) a$$) AS added;
SELECT regress.as_role('regress_keyer', $$SELECT string_agg(task, ',' ORDER BY task) FROM pgjobs.jobs_claim('w', ARRAY['o'], 10)$$) AS claimed;
SELECT id AS oa1 FROM pgjobs.jobs WHERE task = 'a1' AND queue = 'o' \gset
SELECT id AS ob2 FROM pgjobs.jobs WHERE task = 'b2' AND queue = 'o' \gset
SELECT regress.as_role('regress_keyer', format($$SELECT pgjobs.jobs_fail(%s::bigint, %L::uuid, 'once')$$, :oa1, regress.token(:oa1))) AS failed_a1;
SELECT regress.as_role('regress_keyer', format($$SELECT pgjobs.jobs_complete(%s::bigint, %L::uuid)$$, :ob2, regress.token(:ob2))) AS completed_b2;
SELECT regress.as_role('regress_keyer', $$SELECT coalesce(string_agg(task, ',' ORDER BY task), 'none') FROM pgjobs.jobs_claim('w', ARRAY['o'], 10)$$) AS claimed_while_a1_waits;
SELECT regress.make_due(:oa1);
SELECT regress.as_role('regress_keyer', $$SELECT string_agg(task || ' attempt ' || attempt, ',' ORDER BY task) FROM pgjobs.jobs_claim('w', ARRAY['o'], 10)$$) AS claimed_a1_again;
SELECT regress.as_role('regress_keyer', $$SELECT coalesce(string_agg(task, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['o'], 10)$$) AS a2_still_waits;

-- A round across the keys (queue r, two per key): a claim takes one job of each key, so big's
-- 30 jobs take one turn as each small key's one job does; the next claim takes big's second.
SELECT regress.as_role('regress_keyer', $$SELECT max_per_key FROM pgjobs.jobs_key_limit('r', 2)$$) AS round_limit;
SELECT regress.as_role('regress_keyer', $$
    SELECT count(*) FROM pgjobs.jobs_add_batch((
        SELECT jsonb_agg(jsonb_build_object('task', k, 'queue', 'r', 'concurrency_key', k))
        FROM (SELECT 'big' AS k FROM generate_series(1, 30) UNION ALL SELECT 'small' || n FROM generate_series(1, 5) n) keys))$$) AS added;
SELECT regress.as_role('regress_keyer', $$SELECT string_agg(task, ',' ORDER BY task) FROM pgjobs.jobs_claim('w', ARRAY['r'], 10)$$) AS first_claim;
SELECT regress.as_role('regress_keyer', $$SELECT string_agg(task, ',' ORDER BY task) FROM pgjobs.jobs_claim('w', ARRAY['r'], 10)$$) AS second_claim;
SELECT regress.as_role('regress_keyer', $$SELECT coalesce(string_agg(task, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['r'], 10)$$) AS third_claim;

-- With a concurrency limit too (queue m: 2 at once, one per key): each holds.
SELECT regress.as_role('regress_keyer', $$SELECT max_per_key FROM pgjobs.jobs_key_limit('m', 1)$$) AS key_limited;
SELECT regress.as_role('regress_keyer', $$SELECT max_running FROM pgjobs.jobs_limit('m', 2)$$) AS limited;
SELECT regress.as_role('regress_keyer', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add(k || n, queue => 'm', concurrency_key => k)
                          FROM (VALUES ('a'), ('b'), ('c')) AS keys(k), generate_series(1, 2) n) a$$) AS added;
SELECT regress.as_role('regress_keyer', $$SELECT count(DISTINCT concurrency_key) || ' keys, ' || count(*) || ' jobs'
    FROM pgjobs.jobs_claim('w', ARRAY['m'], 10) c JOIN pgjobs.jobs j USING (id)$$) AS claimed;
SELECT regress.as_role('regress_keyer', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['m', 'q'], 10)$$) AS claimed_at_both_limits;

-- A job that failed for good keeps its key in history, and jobs_retry brings it back with it.
SELECT regress.as_role('regress_keyer', $$SELECT pgjobs.jobs_add('last', queue => 'h', concurrency_key => 'k', max_attempts => 1) IS NOT NULL$$) AS added;
SELECT id AS last FROM pgjobs.jobs WHERE task = 'last' \gset
SELECT regress.as_role('regress_keyer', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['h'], 1)$$) AS claimed;
SELECT regress.as_role('regress_keyer', format($$SELECT pgjobs.jobs_fail(%s::bigint, %L::uuid, 'for good')$$, :last, regress.token(:last))) AS failed;
SELECT status, concurrency_key FROM pgjobs.job_history WHERE id = :last;
SELECT regress.as_role('regress_keyer', format($$SELECT count(*) FROM pgjobs.jobs_retry(ARRAY[%s::bigint])$$, :last)) AS retried;
SELECT status, concurrency_key FROM pgjobs.jobs WHERE id = :last;

-- The launcher's service removes the slots no job holds (r's small keys, completed); a held one
-- stays.
SELECT regress.as_role('regress_keyer', format($$SELECT pgjobs.jobs_complete(%L::bigint[], %L::uuid[])$$,
    array_agg(id), array_agg(lease_token))) AS completed_small
FROM pgjobs.jobs WHERE queue = 'r' AND task LIKE 'small%';
SELECT count(*) AS slots_before FROM pgjobs.queue_key_slots;
SELECT pgjobs._launcher_tick(now()) IS NOT NULL AS ticked;
SELECT s.queue, s.concurrency_key, j.task FROM pgjobs.queue_key_slots s JOIN pgjobs.jobs j ON j.id = s.job_id AND j.lease_token = s.lease_token ORDER BY 1, 2, 3;
SELECT count(*) AS slots_after FROM pgjobs.queue_key_slots;

-- A rate limit per key (queue k, 2 claims of each key an hour): a claim takes one job of each key,
-- a's third job waits for its window while b's goes; when the window has passed (the tokens made
-- older here), it goes. A key limit set afterwards keeps the rate limit, and both show.
SELECT regress.as_role('regress_keyer_proxy', $$
    SELECT claims || ' per ' || per || ' by ' || set_by FROM pgjobs.jobs_key_rate_limit('k', 2, '1 hour')$$) AS key_rate_limited;
SELECT regress.as_role('regress_keyer', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add(k || n, queue => 'k', concurrency_key => k)
                          FROM (VALUES ('a', 3), ('b', 2)) AS keys(k, jobs), generate_series(1, jobs) n) a$$) AS added;
SELECT regress.as_role('regress_keyer', $$SELECT string_agg(task, ',' ORDER BY task) FROM pgjobs.jobs_claim('w', ARRAY['k'], 10)$$) AS first_claim;
SELECT regress.as_role('regress_keyer', $$SELECT string_agg(task, ',' ORDER BY task) FROM pgjobs.jobs_claim('w', ARRAY['k'], 10)$$) AS second_claim;
SELECT regress.as_role('regress_keyer', $$SELECT coalesce(string_agg(task, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['k'], 10)$$) AS at_rate;
SELECT metric, queue, value FROM pgjobs.metrics WHERE metric = 'jobs_held_back_by_key' AND queue = 'k';
UPDATE pgjobs.queue_key_tokens SET taken_at = taken_at - interval '1 hour' WHERE queue = 'k';
SELECT regress.as_role('regress_keyer', $$SELECT coalesce(string_agg(task, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['k'], 10)$$) AS after_window;
SELECT regress.as_role('regress_keyer', $$SELECT max_per_key FROM pgjobs.jobs_key_limit('k', 5)$$) AS key_limited;
SELECT regress.as_role('regress_keyer', $$
    SELECT format('%s: max_per_key %s, %s per %s', queue, max_per_key, key_rate_claims, key_rate_per)
    FROM pgjobs.jobs_queues WHERE queue = 'k'$$) AS shown;
-- A claim that comes back short there notes when a waiting key's token is free again, and for
-- that reads the tokens of the keys with jobs, not every token of the queue (a row per key ever
-- claimed): 1,000 keys' tokens taken, one of those keys with a job waiting.
SELECT regress.as_role('regress_keyer', $$SELECT claims FROM pgjobs.jobs_key_rate_limit('kt', 1, '1 hour')$$) AS kt_limited;
INSERT INTO pgjobs.queue_key_tokens (owner, queue, concurrency_key, token, taken_at)
SELECT l.owner, l.queue, 'key:' || n, 1, now() FROM pgjobs.queue_key_limits l, generate_series(1, 1000) n WHERE l.queue = 'kt';
SELECT regress.as_role('regress_keyer', $$SELECT count(pgjobs.jobs_add('kt', queue => 'kt', concurrency_key => 'key:7'))$$) AS added;
BEGIN;
SELECT regress.as_role('regress_keyer', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['kt'], 10)$$) AS kt_claimed;
SELECT pg_stat_get_xact_tuples_returned('pgjobs.queue_key_tokens'::regclass)
       + pg_stat_get_xact_tuples_returned('pgjobs.queue_key_tokens_pkey'::regclass) < 100 AS few_tokens_read;
COMMIT;
-- The launcher removes the tokens out of their window once a minute, not each round (those in it
-- are read one by one): made an hour old, kt's 1,000 stay after a round within the minute, and go
-- in the round a minute on.
SELECT pgjobs._launcher_tick(now()) IS NOT NULL AS ticked;
UPDATE pgjobs.queue_key_tokens SET taken_at = taken_at - interval '1 hour' WHERE queue = 'kt';
SELECT pgjobs._launcher_tick(now()) IS NOT NULL AS ticked;
SELECT count(*) AS tokens_within_the_minute FROM pgjobs.queue_key_tokens WHERE queue = 'kt';
SELECT pgjobs._launcher_tick(now() + interval '1 minute') IS NOT NULL AS ticked;
SELECT count(*) AS tokens_a_minute_on FROM pgjobs.queue_key_tokens WHERE queue = 'kt';
SELECT regress.as_role('regress_keyer', $$SELECT pgjobs.jobs_key_unlimit('kt')::text$$) AS kt_unlimited;

-- Limits by a prefix of the key (queue p): every key one at a time, keys of customer: two at a
-- time, of customer:vip: three (the longest prefix a key starts with wins); a claim takes one job
-- of each key, so four claims reach each key's limit. Shown by jobs_queues, counted held back.
SELECT regress.as_role('regress_keyer', $$SELECT max_per_key FROM pgjobs.jobs_key_limit('p', 1)$$) AS every_key;
SELECT regress.as_role('regress_keyer_proxy', $$
    SELECT max_per_key || ' by ' || set_by FROM pgjobs.jobs_key_limit('p', 2, prefix => 'customer:')$$) AS customers;
SELECT regress.as_role('regress_keyer', $$SELECT max_per_key FROM pgjobs.jobs_key_limit('p', 3, prefix => 'customer:vip:')$$) AS vips;
SELECT regress.as_role('regress_keyer', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add(k || '#' || n, queue => 'p', concurrency_key => k)
                          FROM (VALUES ('plain'), ('customer:1'), ('customer:vip:1')) AS keys(k), generate_series(1, 4) n) a$$) AS added;
SELECT regress.as_role('regress_keyer', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['p'], 10)$$) AS claim_1,
       regress.as_role('regress_keyer', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['p'], 10)$$) AS claim_2,
       regress.as_role('regress_keyer', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['p'], 10)$$) AS claim_3,
       regress.as_role('regress_keyer', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['p'], 10)$$) AS claim_4;
SELECT concurrency_key, count(*) AS leased FROM pgjobs.jobs WHERE queue = 'p' AND lease_token IS NOT NULL GROUP BY 1 ORDER BY 1;
SELECT metric, queue, value FROM pgjobs.metrics WHERE metric = 'jobs_held_back_by_key' AND queue = 'p';
SELECT regress.as_role('regress_keyer', $$
    SELECT format('max_per_key %s; %s', max_per_key, key_prefix_limits) FROM pgjobs.jobs_queues WHERE queue = 'p'$$) AS shown;
-- A rate limit of a prefix's keys (rated:, one claim an hour), beside the limit of every key.
SELECT regress.as_role('regress_keyer', $$SELECT claims FROM pgjobs.jobs_key_rate_limit('p', 1, '1 hour', prefix => 'rated:')$$) AS rated;
SELECT regress.as_role('regress_keyer', $$
    SELECT count(pgjobs.jobs_add('rated#' || n, queue => 'p', concurrency_key => 'rated:1')) FROM generate_series(1, 2) n$$) AS added;
SELECT regress.as_role('regress_keyer', $$SELECT coalesce(string_agg(task, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['p'], 10)$$) AS rated_claim,
       regress.as_role('regress_keyer', $$SELECT coalesce(string_agg(task, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['p'], 10)$$) AS rated_at_rate;
-- Removed, the limit of every key: plain, under no prefix, is not limited (one job a claim);
-- customer:'s keys keep theirs. Removed, the last: the queue's gates, slots and tokens go too.
SELECT regress.as_role('regress_keyer', $$SELECT pgjobs.jobs_key_unlimit('p')::text$$) AS every_key_unlimited,
       regress.as_role('regress_keyer', $$SELECT pgjobs.jobs_key_unlimit('p')::text$$) AS again;
SELECT regress.as_role('regress_keyer', $$SELECT coalesce(string_agg(task, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['p'], 10)$$) AS claim_1,
       regress.as_role('regress_keyer', $$SELECT coalesce(string_agg(task, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['p'], 10)$$) AS claim_2,
       regress.as_role('regress_keyer', $$SELECT coalesce(string_agg(task, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['p'], 10)$$) AS claim_3;
SELECT regress.as_role('regress_key_neighbour', $$SELECT pgjobs.jobs_key_unlimit('p', 'customer:')::text$$) AS neighbours_unlimit;
SELECT regress.as_role('regress_keyer', $$
    SELECT string_agg(pgjobs.jobs_key_unlimit('p', x)::text, ',') FROM unnest(ARRAY['customer:', 'customer:vip:', 'rated:']) x$$) AS unlimited;
SELECT count(*) AS gates, (SELECT count(*) FROM pgjobs.queue_key_slots WHERE queue = 'p') AS slots,
       (SELECT count(*) FROM pgjobs.queue_key_tokens WHERE queue = 'p') AS tokens,
       (SELECT count(*) FROM pgjobs.queue_key_limits WHERE queue = 'p') AS limits
FROM pgjobs.queue_key_gates WHERE queue = 'p';

-- Bad input is refused with 22023 and changes nothing: a count outside 1 to 1000 or none, ordered
-- with more than one or null, a null, empty or extension's queue; a concurrency key empty or over
-- 1000 bytes, alone or in a batch; a limit written past the function.
SELECT regress.fingerprint() AS before \gset
SELECT string_agg(l::text, ',' ORDER BY l.owner, l.queue) || (SELECT count(*) FROM pgjobs.queue_key_slots) AS limits_before FROM pgjobs.queue_key_limits l \gset
SELECT statement, regress.as_role('regress_keyer', 'SELECT regress.error_of(' || quote_literal(statement) || ')') AS result
FROM (VALUES ($$SELECT pgjobs.jobs_key_limit('q', 0)$$),
             ($$SELECT pgjobs.jobs_key_limit('q', -1)$$),
             ($$SELECT pgjobs.jobs_key_limit('q', 1001)$$),
             ($$SELECT pgjobs.jobs_key_limit('q', NULL)$$),
             ($$SELECT pgjobs.jobs_key_limit('q', 2, ordered => true)$$),
             ($$SELECT pgjobs.jobs_key_limit('q', 1, ordered => NULL)$$),
             ($$SELECT pgjobs.jobs_key_limit(NULL, 1)$$),
             ($$SELECT pgjobs.jobs_key_limit('', 1)$$),
             ($$SELECT pgjobs.jobs_key_limit('pg_jobs.sql', 1)$$),
             ($$SELECT pgjobs.jobs_key_limit('q', 1, prefix => NULL)$$),
             ($$SELECT pgjobs.jobs_key_limit('q', 1, prefix => repeat('k', 1001))$$),
             ($$SELECT pgjobs.jobs_key_rate_limit('k', 5, '1 minute', prefix => NULL)$$),
             ($$SELECT pgjobs.jobs_key_unlimit('q', NULL)$$),
             ($$SELECT pgjobs.jobs_key_unlimit('q', repeat('k', 1001))$$),
             ($$SELECT pgjobs.jobs_key_unlimit('pg_jobs.sql')$$),
             ($$SELECT pgjobs.jobs_key_unlimit(NULL)$$),
             ($$SELECT pgjobs.jobs_key_rate_limit('k', 0, '1 minute')$$),
             ($$SELECT pgjobs.jobs_key_rate_limit('k', 1001, '1 minute')$$),
             ($$SELECT pgjobs.jobs_key_rate_limit('k', 5, '0 seconds')$$),
             ($$SELECT pgjobs.jobs_key_rate_limit('k', 5, '2 days')$$),
             ($$SELECT pgjobs.jobs_key_rate_limit('k', 5, '100 years')$$),
             ($$SELECT pgjobs.jobs_key_rate_limit('k', 5, NULL)$$),
             ($$SELECT pgjobs.jobs_key_rate_limit('pg_jobs.sql', 5, '1 minute')$$),
             ($$SELECT pgjobs.jobs_add('t', concurrency_key => '')$$),
             ($$SELECT pgjobs.jobs_add('t', concurrency_key => repeat('k', 1001))$$),
             ($$SELECT pgjobs.jobs_add_batch('[{"task": "ok", "concurrency_key": "k"}, {"task": "t", "concurrency_key": ""}]')$$),
             ($$SELECT pgjobs.jobs_add_batch('[{"task": "t", "concurrency_key": 42}]')$$)) AS s(statement);
SELECT regress.error_of($$INSERT INTO pgjobs.queue_key_limits (owner, queue, max_per_key, ordered, set_at, set_by)
                          VALUES (0, 'o2', 2, true, now(), 'postgres')$$) AS ordered_directly;
SELECT regress.error_of($$INSERT INTO pgjobs.queue_key_limits (owner, queue, set_at, set_by)
                          VALUES (0, 'none', now(), 'postgres')$$) AS no_limit_directly;
SELECT regress.fingerprint() = :'before' AS unchanged,
       (SELECT string_agg(l::text, ',' ORDER BY l.owner, l.queue) || (SELECT count(*) FROM pgjobs.queue_key_slots) FROM pgjobs.queue_key_limits l) = :'limits_before' AS limits_unchanged;
SELECT regress.as_role('regress_keyer', $$SELECT pgjobs.jobs_add('longest', concurrency_key => repeat('k', 1000)) IS NOT NULL$$) AS longest_key;

-- Access: each identity (and its proxy) reads its own limits, gates and slots only; a role
-- outside pgjobs_user may neither read them nor limit; members write the tables only through the
-- functions, and cannot lock a gate (a claim would pass over its keys).
SELECT role, regress.as_role(role, $$SELECT coalesce(string_agg(owner::regrole || ':' || queue || ':' || max_per_key, ',' ORDER BY queue), 'nothing') FROM pgjobs.queue_key_limits$$) AS sees,
       regress.as_role(role, $$SELECT count(*) FROM pgjobs.queue_key_gates$$) AS gates_seen,
       regress.as_role(role, $$SELECT count(*) FROM pgjobs.queue_key_slots$$) AS slots_seen,
       regress.as_role(role, $$SELECT count(*) FROM pgjobs.queue_key_tokens$$) AS tokens_seen,
       regress.as_role(role, $$SELECT claims FROM pgjobs.jobs_key_rate_limit('mine_rated', 2, '1 minute')$$) AS rate_limits,
       regress.as_role(role, $$SELECT pgjobs.jobs_unlimit('mine_rated')::text$$) AS rate_unlimits,
       regress.as_role(role, $$SELECT max_per_key FROM pgjobs.jobs_key_limit('mine', 2)$$) AS limits,
       regress.as_role(role, $$SELECT pgjobs.jobs_unlimit('mine')::text$$) AS unlimits,
       regress.as_role(role, $$SELECT max_per_key FROM pgjobs.jobs_key_limit('mine', 2, prefix => 'x:')$$) AS prefix_limits,
       regress.as_role(role, $$SELECT pgjobs.jobs_key_unlimit('mine', 'x:')::text$$) AS prefix_unlimits
FROM (VALUES ('regress_keyer'), ('regress_keyer_proxy'), ('regress_key_neighbour'), ('regress_key_stranger')) AS r(role);
SELECT regress.fingerprint() AS before \gset
SELECT string_agg(l::text, ',' ORDER BY l.owner, l.queue) || (SELECT string_agg(s::text, ',' ORDER BY s) FROM pgjobs.queue_key_slots s) AS limits_before FROM pgjobs.queue_key_limits l \gset
SELECT role, statement, regress.as_role(role, statement) AS result
FROM (VALUES ('regress_keyer'), ('regress_key_neighbour')) AS r(role),
     (VALUES ($$INSERT INTO pgjobs.queue_key_limits (owner, queue, max_per_key, set_at, set_by) VALUES (pgjobs.identity(), 'direct', 1, now(), current_user::regrole) RETURNING queue$$),
             ($$UPDATE pgjobs.queue_key_tokens SET taken_at = '-infinity' RETURNING token$$),
             ($$UPDATE pgjobs.queue_key_limits SET max_per_key = 1000 RETURNING queue$$),
             ($$DELETE FROM pgjobs.queue_key_limits RETURNING queue$$),
             ($$INSERT INTO pgjobs.queue_key_gates VALUES (pgjobs.identity(), 'q', 1024) RETURNING gate$$),
             ($$DELETE FROM pgjobs.queue_key_slots RETURNING slot$$),
             ($$SELECT gate FROM pgjobs.queue_key_gates FOR UPDATE$$),
             ($$SELECT slot FROM pgjobs.queue_key_slots FOR UPDATE$$)) AS s(statement)
ORDER BY role, statement;
SELECT regress.fingerprint() = :'before' AS unchanged,
       (SELECT string_agg(l::text, ',' ORDER BY l.owner, l.queue) || (SELECT string_agg(s::text, ',' ORDER BY s) FROM pgjobs.queue_key_slots s) FROM pgjobs.queue_key_limits l) = :'limits_before' AS limits_unchanged;

-- Lifted: gates, slots and tokens go with the limit, and the rest of q is claimed in order.
SELECT regress.as_role('regress_keyer', $$SELECT pgjobs.jobs_unlimit('q')::text$$) AS unlimited;
SELECT regress.as_role('regress_keyer', $$SELECT pgjobs.jobs_unlimit('k')::text$$) AS unlimited_k;
SELECT count(*) AS gates, (SELECT count(*) FROM pgjobs.queue_key_slots WHERE queue IN ('q', 'k')) AS slots,
       (SELECT count(*) FROM pgjobs.queue_key_tokens WHERE queue IN ('q', 'k')) AS tokens
FROM pgjobs.queue_key_gates WHERE queue IN ('q', 'k');
SELECT id AS b1 FROM pgjobs.jobs WHERE task = 'b1' AND queue = 'q' \gset
SELECT regress.make_due(:b1);
SELECT regress.as_role('regress_keyer', $$SELECT string_agg(task, ',' ORDER BY task) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_unlimit;

-- Key limits with a rate limit, and with a concurrency limit too (each combination is a form of
-- the claim of its own, src/api/queue.rs): every limit holds. kr: 1 per key, 2 claims an hour;
-- krs: 1 per key, 3 leased at once, 4 claims an hour. Five keys of two jobs each in both.
SELECT regress.as_role('regress_keyer', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add(q || k || n, queue => q, concurrency_key => k)
                          FROM unnest(ARRAY['kr', 'krs']) q, unnest(ARRAY['a', 'b', 'c', 'd', 'e']) k,
                               generate_series(1, 2) n) a$$) AS added;
SELECT regress.as_role('regress_keyer', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_key_limit(q, 1), pgjobs.jobs_rate_limit(q, r, '1 hour')
                          FROM (VALUES ('kr', 2), ('krs', 4)) v(q, r)) l$$) AS limited;
SELECT regress.as_role('regress_keyer', $$SELECT max_running FROM pgjobs.jobs_limit('krs', 3)$$) AS max_running;
-- kr: two jobs of two keys, then none (the rate); krs: three of three keys (the slots), then,
-- once they end, one more (the rate), then none.
SELECT regress.as_role('regress_keyer', $$SELECT string_agg(concurrency_key, ',' ORDER BY concurrency_key) FROM pgjobs.jobs_claim('w', ARRAY['kr'], 10) c JOIN pgjobs.jobs j USING (id)$$) AS kr_claimed;
SELECT regress.as_role('regress_keyer', $$
    SELECT count(pgjobs.jobs_complete(id, lease_token)) FROM pgjobs.jobs WHERE queue = 'kr' AND lease_token IS NOT NULL$$) AS kr_completed;
SELECT regress.as_role('regress_keyer', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['kr'], 10)$$) AS kr_over_rate;
SELECT regress.as_role('regress_keyer', $$SELECT count(DISTINCT j.concurrency_key) || ' keys, ' || count(*) || ' jobs' FROM pgjobs.jobs_claim('w', ARRAY['krs'], 10) c JOIN pgjobs.jobs j USING (id)$$) AS krs_claimed;
SELECT regress.as_role('regress_keyer', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['krs'], 10)$$) AS krs_at_slots;
SELECT regress.as_role('regress_keyer', $$
    SELECT count(pgjobs.jobs_complete(id, lease_token)) FROM pgjobs.jobs WHERE queue = 'krs' AND lease_token IS NOT NULL$$) AS krs_completed;
SELECT regress.as_role('regress_keyer', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['krs'], 10)$$) AS krs_to_rate;
SELECT regress.as_role('regress_keyer', $$
    SELECT count(pgjobs.jobs_complete(id, lease_token)) FROM pgjobs.jobs WHERE queue = 'krs' AND lease_token IS NOT NULL$$) AS krs_completed_again;
SELECT regress.as_role('regress_keyer', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['krs'], 10)$$) AS krs_over_rate;
SELECT regress.as_role('regress_keyer', $$SELECT count(*) FROM (SELECT pgjobs.jobs_unlimit(q) FROM unnest(ARRAY['kr', 'krs']) q) u$$) AS unlimited;

SELECT regress.as_role('regress_keyer', $$SELECT pgjobs.jobs_remove_proxy('regress_keyer_proxy')$$) AS proxy_removed;
TRUNCATE pgjobs.queue_key_limits, pgjobs.queue_key_gates, pgjobs.queue_key_slots, pgjobs.queue_key_tokens, pgjobs.queue_limits CASCADE;
SELECT regress.reset();
DROP ROLE regress_keyer, regress_keyer_proxy, regress_key_neighbour, regress_key_stranger;

-- The keys (concurrency and idempotency keys), and the queue names of the tables of a queue's
-- rules, that claims, adds and finishes probe indexes by compare bytewise, whatever the database's
-- collation: by its rules, each comparison in a btree descent cost a call of strcoll (8 % of a
-- claim of 10 keys, 2.5 % of an add of 100 keyed jobs, in a database of C.UTF-8).
SELECT c.relname, a.attname, l.collname
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_collation l ON l.oid = a.attcollation
WHERE c.relnamespace = 'pgjobs'::regnamespace AND c.relkind = 'r' AND a.attnum > 0
  AND (c.relname <> 'queue_minutes' AND c.relname LIKE 'queue\_%'
       AND a.attname IN ('queue', 'concurrency_key', 'prefix', 'dead_letter_queue')
       OR c.relname = 'jobs' AND a.attname = 'concurrency_key'
       OR c.relname = 'job_keys' AND a.attname = 'idempotency_key')
ORDER BY 1, 2;
