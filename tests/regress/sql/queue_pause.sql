-- A paused queue (jobs_pause): claims take nothing from it, alone or among other queues, and
-- jobs_complete_and_claim claims nothing from it, while everything else goes on: adds queue,
-- leased jobs are renewed and finish, a failed job goes back to waiting; after jobs_resume claims
-- take its jobs again. As non-superuser members: a pause is the identity's (set by a proxy, lifted
-- by its root), another identity's queue of the same name is another queue; who paused and when
-- is kept and shown; bad input changes nothing; who may read and write the pauses.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.queue_pauses, pgjobs.proxies;

CREATE ROLE regress_pauser;
CREATE ROLE regress_pauser_proxy;
CREATE ROLE regress_neighbour;
CREATE ROLE regress_stranger;  -- not a member of pgjobs_user
GRANT pgjobs_user TO regress_pauser, regress_pauser_proxy, regress_neighbour;
GRANT regress_pauser_proxy TO regress_pauser;
SELECT regress.as_role('regress_pauser', $$SELECT pgjobs.jobs_add_proxy('regress_pauser_proxy')$$) AS proxy_added;

-- The pauser's queue q: two jobs leased before the pause (one to finish, one to fail with a
-- retry left), two waiting; q_other beside it. The neighbour has a queue q of its own.
SELECT regress.as_role('regress_pauser', $$
    SELECT count(*) FROM (SELECT pgjobs.jobs_add('t' || n, queue => 'q', max_attempts => 2, backoff => '0 seconds')
                          FROM generate_series(1, 4) n) a$$) AS added;
SELECT regress.as_role('regress_pauser', $$SELECT pgjobs.jobs_add('other', queue => 'q_other')::text$$) AS added_other;
SELECT regress.as_role('regress_neighbour', $$SELECT pgjobs.jobs_add('neighbours', queue => 'q')::text$$) AS added_neighbours;
SELECT regress.as_role('regress_pauser', $$SELECT string_agg(id::text, ',' ORDER BY id) FROM pgjobs.jobs_claim('w', ARRAY['q'], 2)$$) AS leased;

-- Paused by the proxy, for its root: the pause says when and who.
SELECT regress.as_role('regress_pauser_proxy', $$
    SELECT paused_by::text || ', at the statement''s time: ' || (paused_at = statement_timestamp()) FROM pgjobs.jobs_pause('q')$$) AS paused;
SELECT owner::regrole, queue, paused_by, paused_at IS NOT NULL AS dated FROM pgjobs.queue_pauses;
SELECT paused_at AS first_paused_at FROM pgjobs.queue_pauses \gset

-- Claims take nothing from q: alone, first among others (q_other's job is taken), or after a
-- completion in one call.
SELECT regress.as_role('regress_pauser', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_from_q;
SELECT regress.as_role('regress_pauser', $$SELECT string_agg(task, ',') FROM pgjobs.jobs_claim('w', ARRAY['q', 'q_other'], 10)$$) AS claimed_from_both;
-- The leased jobs go on: a heartbeat renews one, a completion with a claim from q finishes it
-- and claims nothing, a failure with a retry left sends the other back to waiting.
SELECT regress.as_role('regress_pauser', format($$SELECT lease_state FROM pgjobs.jobs_heartbeat(1, %L)$$, regress.token(1))) AS heartbeat;
SELECT regress.as_role('regress_pauser', format($$SELECT count(*) FROM pgjobs.jobs_complete_and_claim(ARRAY[1::bigint], ARRAY[%L::uuid], NULL, 'w', ARRAY['q'], 10)$$, regress.token(1))) AS completed_and_claimed;
SELECT regress.as_role('regress_pauser', format($$SELECT pgjobs.jobs_fail(2, %L, 'once')$$, regress.token(2))) AS failed;
-- Adds still queue.
SELECT regress.as_role('regress_pauser', $$SELECT pgjobs.jobs_add('added while paused', queue => 'q')::text$$) AS added_while_paused;
SELECT regress.as_role('regress_pauser', $$SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_from_q;
SELECT id, task, status, attempt FROM pgjobs.jobs WHERE queue = 'q' ORDER BY id;
SELECT status, count(*) FROM pgjobs.job_history GROUP BY status;
-- jobs_queues shows each of the identity's queues with its pause, as the caller reads it.
SELECT role, regress.as_role(role, $$
    SELECT string_agg(format('%s: ready %s, scheduled %s, running %s, paused by %s, keeps %s', queue, ready, scheduled,
                             running, coalesce(paused_by::text, '-'), keeps), '; ' ORDER BY queue)
    FROM pgjobs.jobs_queues$$) AS queues
FROM (VALUES ('regress_pauser'), ('regress_pauser_proxy'), ('regress_neighbour'), ('regress_stranger')) AS r(role);

-- Another identity's q is not paused, and its resume of q resumes nothing of the pauser's.
SELECT regress.as_role('regress_neighbour', $$SELECT string_agg(task, ',') FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS neighbour_claimed;
SELECT regress.as_role('regress_neighbour', $$SELECT pgjobs.jobs_resume('q')::text$$) AS neighbour_resumed;
SELECT count(*) AS pauses FROM pgjobs.queue_pauses;

-- Pausing again keeps the first pause: its time and who set it.
SELECT regress.as_role('regress_pauser', $$SELECT paused_by::text FROM pgjobs.jobs_pause('q')$$) AS paused_again_by;
SELECT paused_at = :'first_paused_at' AS first_time_kept, paused_by FROM pgjobs.queue_pauses;

-- Resumed by the root: its jobs are claimed again, the retried one too; a second resume says it
-- was not paused.
SELECT regress.as_role('regress_pauser', $$SELECT pgjobs.jobs_resume('q')::text$$) AS resumed;
SELECT regress.as_role('regress_pauser', $$SELECT pgjobs.jobs_resume('q')::text$$) AS resumed_again;
SELECT regress.as_role('regress_pauser', $$SELECT string_agg(task, ',' ORDER BY id) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed_after_resume;
SELECT count(*) AS pauses FROM pgjobs.queue_pauses;

-- Bad input is refused with 22023 and changes nothing: a null, empty or extension's queue, also
-- for an administrator; a pause written past the function for one fails the table's check.
SELECT regress.as_role('regress_pauser', $$SELECT paused_by::text FROM pgjobs.jobs_pause('kept')$$) AS paused_kept;
SELECT regress.fingerprint() AS before \gset
SELECT string_agg(p::text, ',' ORDER BY p.owner, p.queue) AS pauses_before FROM pgjobs.queue_pauses p \gset
SELECT statement, regress.as_role('regress_pauser', 'SELECT regress.error_of(' || quote_literal(statement) || ')') AS result
FROM (VALUES ($$SELECT pgjobs.jobs_pause(NULL)$$),
             ($$SELECT pgjobs.jobs_pause('')$$),
             ($$SELECT pgjobs.jobs_pause('pg_jobs.sql')$$),
             ($$SELECT pgjobs.jobs_pause('pg_jobs.batch:anyone')$$),
             ($$SELECT pgjobs.jobs_resume(NULL)$$),
             ($$SELECT pgjobs.jobs_resume('')$$),
             ($$SELECT pgjobs.jobs_resume('pg_jobs.compute')$$)) AS s(statement);
SELECT regress.error_of($$SELECT pgjobs.jobs_pause('pg_jobs.sql')$$) AS as_superuser;
SELECT regress.error_of($$INSERT INTO pgjobs.queue_pauses VALUES (0, 'pg_jobs.sql', now(), 'postgres')$$) AS written_directly;
SELECT regress.fingerprint() = :'before' AS unchanged,
       (SELECT string_agg(p::text, ',' ORDER BY p.owner, p.queue) FROM pgjobs.queue_pauses p) = :'pauses_before' AS pauses_unchanged;

-- Access: each identity (and its proxy) reads its own pauses only; a role outside pgjobs_user may
-- neither read them nor pause; members write the table only through the functions.
SELECT role, regress.as_role(role, $$SELECT coalesce(string_agg(owner::regrole || ':' || queue || ':' || paused_by, ',' ORDER BY queue), 'nothing') FROM pgjobs.queue_pauses$$) AS sees,
       regress.as_role(role, $$SELECT paused_by::text FROM pgjobs.jobs_pause('mine')$$) AS pauses,
       regress.as_role(role, $$SELECT pgjobs.jobs_resume('mine')::text$$) AS resumes
FROM (VALUES ('regress_pauser'), ('regress_pauser_proxy'), ('regress_neighbour'), ('regress_stranger')) AS r(role);
SELECT regress.fingerprint() AS before \gset
SELECT string_agg(p::text, ',' ORDER BY p.owner, p.queue) AS pauses_before FROM pgjobs.queue_pauses p \gset
SELECT role, statement, regress.as_role(role, statement) AS result
FROM (VALUES ('regress_pauser'), ('regress_neighbour')) AS r(role),
     (VALUES ($$INSERT INTO pgjobs.queue_pauses VALUES (pgjobs.identity(), 'direct', now(), current_user::regrole) RETURNING queue$$),
             ($$UPDATE pgjobs.queue_pauses SET paused_at = now() RETURNING queue$$),
             ($$DELETE FROM pgjobs.queue_pauses RETURNING queue$$)) AS s(statement)
ORDER BY role, statement;
SELECT regress.fingerprint() = :'before' AS unchanged,
       (SELECT string_agg(p::text, ',' ORDER BY p.owner, p.queue) FROM pgjobs.queue_pauses p) = :'pauses_before' AS pauses_unchanged;

SELECT regress.as_role('regress_pauser', $$SELECT pgjobs.jobs_remove_proxy('regress_pauser_proxy')$$) AS proxy_removed;
TRUNCATE pgjobs.queue_pauses;
SELECT regress.reset();
DROP ROLE regress_pauser, regress_pauser_proxy, regress_neighbour, regress_stranger;
