-- A rate limit (jobs_rate_limit): claims take at most `claims` of a queue's jobs in any window of
-- `per`, alone or among other queues; a job over the limit waits (it
-- is never failed) and is claimed once a token's window has passed; a rate limit and a
-- concurrency limit on one queue both hold; jobs_unlimit lifts both. As non-superuser members: a
-- limit is the identity's (set by a proxy); another identity's queue of the same name is another
-- queue; bad input changes nothing; who may read and write the limits and tokens. (A window is
-- made to pass by moving the tokens' times back, as a superuser.)
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.queue_rates, pgjobs.queue_rate_tokens, pgjobs.queue_limits, pgjobs.queue_slots, pgjobs.proxies;

CREATE ROLE regress_rater;
CREATE ROLE regress_rater_proxy;
CREATE ROLE regress_rate_neighbour;
CREATE ROLE regress_rate_stranger;  -- not a member of pgjobs_user
GRANT pgjobs_user TO regress_rater, regress_rater_proxy, regress_rate_neighbour;
GRANT regress_rater_proxy TO regress_rater;
SELECT regress.as_role('regress_rater', $$SELECT pgjobs.jobs_add_proxy('regress_rater_proxy')$$) AS proxy_added;
-- Moves every token's time back two hours: the window of each has passed.
CREATE FUNCTION pg_temp.window_passes() RETURNS void
LANGUAGE sql AS $$ UPDATE pgjobs.queue_rate_tokens SET taken_at = taken_at - interval '2 hours' $$;

SELECT regress.as_role('regress_rater', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add('t' || n, queue => 'q') FROM generate_series(1, 10) n) a$$) AS added;
SELECT regress.as_role('regress_rater', $$SELECT count(pgjobs.jobs_add('other', queue => 'q_other'))$$) AS added_other;
SELECT regress.as_role('regress_rate_neighbour', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add('n' || n, queue => 'q') FROM generate_series(1, 4) n) a$$) AS added_neighbours;

-- 3 claims an hour, set by the proxy for its root.
SELECT regress.as_role('regress_rater_proxy', $$
    SELECT claims || ' per ' || per || ' by ' || set_by || ', at the statement''s time: ' || (set_at = statement_timestamp())
    FROM pgjobs.jobs_rate_limit('q', 3, '1 hour')$$) AS limited;
SELECT owner::regrole, queue, claims, per, set_by FROM pgjobs.queue_rates;
SELECT token, taken_at FROM pgjobs.queue_rate_tokens ORDER BY token;
-- Two claims take 3 jobs, then nothing, though none is leased any more; q_other and the
-- neighbour's q are not limited.
SELECT regress.as_role('regress_rater', $$SELECT string_agg(id::text, ',' ORDER BY id) FROM pgjobs.jobs_claim('w', ARRAY['q'], 2)$$) AS claimed;
SELECT regress.as_role('regress_rater', $$SELECT string_agg(id::text, ',' ORDER BY id) FROM pgjobs.jobs_claim('w', ARRAY['q'], 2)$$) AS claimed_more;
SELECT regress.as_role('regress_rater', $$
    SELECT count(pgjobs.jobs_complete(id, lease_token)) FROM pgjobs.jobs WHERE queue = 'q' AND lease_token IS NOT NULL$$) AS completed;
SELECT regress.as_role('regress_rater', $$SELECT coalesce(string_agg(id::text, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_over_rate;
SELECT metric, queue, value FROM pgjobs.metrics WHERE metric = 'jobs_held_back';
SELECT regress.as_role('regress_rater', $$SELECT string_agg(task, ',') FROM pgjobs.jobs_claim('w', ARRAY['q', 'q_other'], 10)$$) AS claimed_from_both;
SELECT regress.as_role('regress_rate_neighbour', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS neighbour_claimed;
SELECT count(*) FILTER (WHERE taken_at = '-infinity') AS free_tokens, count(*) AS tokens FROM pgjobs.queue_rate_tokens;
-- The window passes: three more, and then none; the jobs over the limit wait, never failed.
SELECT pg_temp.window_passes();
SELECT regress.as_role('regress_rater', $$SELECT string_agg(id::text, ',' ORDER BY id) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_window;
SELECT regress.as_role('regress_rater', $$SELECT coalesce(string_agg(id::text, ','), 'none') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_over_rate_again;
SELECT status, count(*) FROM pgjobs.jobs WHERE owner = 'regress_rater'::regrole AND queue = 'q' GROUP BY status ORDER BY status;
-- With a concurrency limit of 2 as well, each limit holds: 2 leased at once, 3 an hour.
SELECT regress.as_role('regress_rater', $$
    SELECT count(pgjobs.jobs_complete(id, lease_token)) FROM pgjobs.jobs WHERE queue = 'q' AND lease_token IS NOT NULL$$) AS completed;
SELECT regress.as_role('regress_rater', $$SELECT max_running FROM pgjobs.jobs_limit('q', 2)$$) AS max_running;
SELECT pg_temp.window_passes();
SELECT regress.as_role('regress_rater', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_under_both;
SELECT regress.as_role('regress_rater', $$
    SELECT count(pgjobs.jobs_complete(id, lease_token)) FROM pgjobs.jobs WHERE queue = 'q' AND lease_token IS NOT NULL$$) AS completed;
SELECT regress.as_role('regress_rater', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_under_both_again;
SELECT string_agg(queue || ': ' || coalesce(max_running::text, '-') || ', ' || rate_claims || ' per ' || rate_per, '; ')
FROM pgjobs.jobs_queues WHERE rate_claims IS NOT NULL;
-- Set again, the window starts afresh (every token free); lifted, both limits go.
SELECT regress.as_role('regress_rater', $$SELECT claims FROM pgjobs.jobs_rate_limit('q', 1, '1 minute')$$) AS set_again;
SELECT count(*) FILTER (WHERE taken_at = '-infinity') AS free_tokens, count(*) AS tokens FROM pgjobs.queue_rate_tokens;
SELECT regress.as_role('regress_rater', $$SELECT pgjobs.jobs_unlimit('q')::text$$) AS unlimited;
SELECT regress.as_role('regress_rater', $$SELECT pgjobs.jobs_unlimit('q')::text$$) AS unlimited_again;
SELECT (SELECT count(*) FROM pgjobs.queue_rates) AS rates, (SELECT count(*) FROM pgjobs.queue_rate_tokens) AS tokens,
       (SELECT count(*) FROM pgjobs.queue_limits) AS limits;
SELECT regress.as_role('regress_rater', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_unlimit;

-- Bad input is refused with 22023 and changes nothing: a count outside 1 to 1000 or none, a
-- window of nothing, below it or over a day, or none, a null, empty or extension's queue.
SELECT regress.as_role('regress_rater', $$SELECT claims FROM pgjobs.jobs_rate_limit('kept', 5, '1 second')$$) AS kept;
SELECT regress.fingerprint() AS before \gset
SELECT string_agg(r::text, ',' ORDER BY r.owner, r.queue) || (SELECT count(*) FROM pgjobs.queue_rate_tokens) AS rates_before FROM pgjobs.queue_rates r \gset
SELECT statement, regress.as_role('regress_rater', 'SELECT regress.error_of(' || quote_literal(statement) || ')') AS result
FROM (VALUES ($$SELECT pgjobs.jobs_rate_limit('kept', 0, '1 minute')$$),
             ($$SELECT pgjobs.jobs_rate_limit('kept', -3, '1 minute')$$),
             ($$SELECT pgjobs.jobs_rate_limit('kept', 1001, '1 minute')$$),
             ($$SELECT pgjobs.jobs_rate_limit('kept', NULL, '1 minute')$$),
             ($$SELECT pgjobs.jobs_rate_limit('kept', 5, '0 seconds')$$),
             ($$SELECT pgjobs.jobs_rate_limit('kept', 5, '-1 minute')$$),
             ($$SELECT pgjobs.jobs_rate_limit('kept', 5, '25 hours')$$),
             ($$SELECT pgjobs.jobs_rate_limit('kept', 5, '1 month')$$),
             ($$SELECT pgjobs.jobs_rate_limit('kept', 5, NULL)$$),
             ($$SELECT pgjobs.jobs_rate_limit(NULL, 5, '1 minute')$$),
             ($$SELECT pgjobs.jobs_rate_limit('', 5, '1 minute')$$),
             ($$SELECT pgjobs.jobs_rate_limit('pg_jobs.sql', 5, '1 minute')$$)) AS s(statement);
SELECT regress.error_of($$INSERT INTO pgjobs.queue_rates VALUES (0, 'direct', 5, '0 seconds', now(), 'postgres')$$) AS written_directly;
SELECT regress.fingerprint() = :'before' AS unchanged,
       (SELECT string_agg(r::text, ',' ORDER BY r.owner, r.queue) || (SELECT count(*) FROM pgjobs.queue_rate_tokens) FROM pgjobs.queue_rates r) = :'rates_before' AS rates_unchanged;

-- Access: each identity (and its proxy) reads its own rate limits and tokens only; a role outside
-- pgjobs_user may neither read them nor limit; members write the tables only through the functions.
SELECT role, regress.as_role(role, $$SELECT coalesce(string_agg(owner::regrole || ':' || queue || ':' || claims, ',' ORDER BY queue), 'nothing') FROM pgjobs.queue_rates$$) AS sees,
       regress.as_role(role, $$SELECT count(*) FROM pgjobs.queue_rate_tokens$$) AS tokens_seen,
       regress.as_role(role, $$SELECT claims FROM pgjobs.jobs_rate_limit('mine', 2, '1 minute')$$) AS limits,
       regress.as_role(role, $$SELECT pgjobs.jobs_unlimit('mine')::text$$) AS unlimits
FROM (VALUES ('regress_rater'), ('regress_rater_proxy'), ('regress_rate_neighbour'), ('regress_rate_stranger')) AS r(role);
SELECT string_agg(r::text, ',' ORDER BY r.owner, r.queue) || (SELECT string_agg(t::text, ',' ORDER BY t.token) FROM pgjobs.queue_rate_tokens t) AS rates_before FROM pgjobs.queue_rates r \gset
SELECT role, statement, regress.as_role(role, statement) AS result
FROM (VALUES ('regress_rater'), ('regress_rate_neighbour')) AS r(role),
     (VALUES ($$INSERT INTO pgjobs.queue_rates VALUES (pgjobs.identity(), 'direct', 1, '1 minute', now(), current_user::regrole) RETURNING queue$$),
             ($$UPDATE pgjobs.queue_rates SET claims = 1000 RETURNING queue$$),
             ($$DELETE FROM pgjobs.queue_rates RETURNING queue$$),
             ($$UPDATE pgjobs.queue_rate_tokens SET taken_at = '-infinity' RETURNING token$$),
             ($$DELETE FROM pgjobs.queue_rate_tokens RETURNING token$$),
             ($$SELECT token FROM pgjobs.queue_rate_tokens FOR UPDATE$$)) AS s(statement)
ORDER BY role, statement;
SELECT (SELECT string_agg(r::text, ',' ORDER BY r.owner, r.queue) || (SELECT string_agg(t::text, ',' ORDER BY t.token) FROM pgjobs.queue_rate_tokens t) FROM pgjobs.queue_rates r) = :'rates_before' AS rates_unchanged;

SELECT regress.as_role('regress_rater', $$SELECT pgjobs.jobs_remove_proxy('regress_rater_proxy')$$) AS proxy_removed;
TRUNCATE pgjobs.queue_rates, pgjobs.queue_rate_tokens, pgjobs.queue_limits, pgjobs.queue_slots;
SELECT regress.reset();
DROP ROLE regress_rater, regress_rater_proxy, regress_rate_neighbour, regress_rate_stranger;
