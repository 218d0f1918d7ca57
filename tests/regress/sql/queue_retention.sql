-- History as a choice per queue: an identity's rule for a queue of its own (jobs_queue_history)
-- says which finished jobs job_history keeps: all (the default), failures (failed and aborted),
-- none. Every outcome in every rule, as non-superuser members; another identity's rule for a queue
-- of the same name does not apply; the extension's queues keep everything; what a reader of a
-- queue without history sees; bad input changes nothing; who may read and write the rules.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.queue_history_rules, pgjobs.proxies;

CREATE ROLE regress_keeper;
CREATE ROLE regress_keeper_proxy;
CREATE ROLE regress_neighbour;
CREATE ROLE regress_stranger;  -- not a member of pgjobs_user
GRANT pgjobs_user TO regress_keeper, regress_keeper_proxy, regress_neighbour;
GRANT regress_keeper_proxy TO regress_keeper;
SELECT regress.as_role('regress_keeper', $$SELECT pgjobs.jobs_add_proxy('regress_keeper_proxy')$$) AS proxy_added;

-- Every job the outcomes below add, to find it afterwards in jobs, in job_history or nowhere.
CREATE TABLE regress.retention_added (id bigint PRIMARY KEY, role text, queue text, task text);
GRANT INSERT ON regress.retention_added TO PUBLIC;

-- Each way a job can end (and two ways it goes back to waiting), in one queue, as the caller.
-- The job whose lease runs out on its last attempt is left claimed; its rescue comes later.
CREATE FUNCTION regress.retention_outcomes(q text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c record;
    job bigint;
    add_ text := 'INSERT INTO regress.retention_added VALUES ($1, current_user, $2, $3)';
BEGIN
    job := pgjobs.jobs_add('completed', queue => q);
    EXECUTE add_ USING job, q, 'completed';
    SELECT * INTO c FROM pgjobs.jobs_claim('w', ARRAY[q]);
    PERFORM pgjobs.jobs_complete(c.id, c.lease_token, '{"ok": true}');

    job := pgjobs.jobs_add('failed', queue => q, max_attempts => 1);
    EXECUTE add_ USING job, q, 'failed on its last attempt';
    SELECT * INTO c FROM pgjobs.jobs_claim('w', ARRAY[q]);
    PERFORM pgjobs.jobs_fail(c.id, c.lease_token, 'boom');

    job := pgjobs.jobs_add('retried', queue => q, max_attempts => 2, backoff => '1 hour');
    EXECUTE add_ USING job, q, 'failed, to be retried';
    SELECT * INTO c FROM pgjobs.jobs_claim('w', ARRAY[q]);
    PERFORM pgjobs.jobs_fail(c.id, c.lease_token, 'once');

    job := pgjobs.jobs_add('aborted', queue => q);
    EXECUTE add_ USING job, q, 'aborted while waiting';
    PERFORM pgjobs.jobs_abort(job);

    job := pgjobs.jobs_add('aborted', queue => q);
    EXECUTE add_ USING job, q, 'aborted while leased, reported';
    SELECT * INTO c FROM pgjobs.jobs_claim('w', ARRAY[q]);
    PERFORM pgjobs.jobs_abort(c.id);
    PERFORM pgjobs.jobs_fail(c.id, c.lease_token, 'stopped');

    job := pgjobs.jobs_add('aborted', queue => q);
    EXECUTE add_ USING job, q, 'aborted while leased, released';
    SELECT * INTO c FROM pgjobs.jobs_claim('w', ARRAY[q]);
    PERFORM pgjobs.jobs_abort(c.id);
    PERFORM pgjobs.jobs_release(ARRAY[c.id], ARRAY[c.lease_token]);

    job := pgjobs.jobs_add('rescued', queue => q, max_attempts => 1);
    EXECUTE add_ USING job, q, 'lease ran out on its last attempt';
    PERFORM pgjobs.jobs_claim('w', ARRAY[q]);

    job := pgjobs.jobs_add('released', queue => q);
    EXECUTE add_ USING job, q, 'released';
    SELECT * INTO c FROM pgjobs.jobs_claim('w', ARRAY[q]);
    PERFORM pgjobs.jobs_release(ARRAY[c.id], ARRAY[c.lease_token]);
END
$$;

-- Where each job is: waiting or leased in jobs, finished in job_history, or in neither.
CREATE VIEW regress.retention_found AS
SELECT a.id, a.role, a.queue, a.task,
       coalesce('jobs: ' || j.status, 'job_history: ' || h.status, 'nowhere') AS found
FROM regress.retention_added a
LEFT JOIN pgjobs.jobs j ON j.id = a.id
LEFT JOIN pgjobs.job_history h ON h.id = a.id;

-- The keeper's rules: failures for q_failures (set by its proxy, for its root), none for q_none;
-- q_all has no rule. The neighbour keeps nothing of its own q_all and has no rule for q_none.
SELECT regress.as_role('regress_keeper_proxy', $$SELECT pgjobs.jobs_queue_history('q_failures', 'failures')$$) AS failures_set;
SELECT regress.as_role('regress_keeper', $$SELECT pgjobs.jobs_queue_history('q_none', 'all')$$) AS all_set;
SELECT regress.as_role('regress_keeper', $$SELECT pgjobs.jobs_queue_history('q_none', 'none')$$) AS none_set;
SELECT regress.as_role('regress_neighbour', $$SELECT pgjobs.jobs_queue_history('q_all', 'none')$$) AS neighbours_none_set;
SELECT owner::regrole, queue, keep FROM pgjobs.queue_history_rules ORDER BY owner::regrole::text, queue;

SELECT role, queue, regress.as_role(role, format('SELECT regress.retention_outcomes(%L)', queue)) AS outcomes
FROM (VALUES ('regress_keeper', 'q_all'), ('regress_keeper', 'q_failures'), ('regress_keeper', 'q_none'),
             ('regress_neighbour', 'q_all'), ('regress_neighbour', 'q_none')) AS r(role, queue);
-- The leases of the jobs on their last attempt run out: the rescue fails them.
SELECT count(*) AS expired FROM (SELECT regress.expire_lease(id) FROM regress.retention_added WHERE task = 'lease ran out on its last attempt') e;
SELECT pgjobs._rescue_expired() AS rescued;

SELECT role, queue, task, found FROM regress.retention_found ORDER BY role, queue, id;

-- A finished job is counted as finished whether it is kept or not.
SELECT count(*) FILTER (WHERE found = 'nowhere') AS in_neither_table,
       count(*) FILTER (WHERE found LIKE 'job_history:%') AS kept
FROM regress.retention_found;

-- A rule applies from the next finish on: q_switched keeps none, then all again.
SELECT step, regress.as_role('regress_keeper', format($$SELECT pgjobs.jobs_queue_history('q_switched', %L)$$, keep)) AS rule_set,
       regress.as_role('regress_keeper', format($$
           SELECT count(pgjobs.jobs_complete(c.id, c.lease_token))
           FROM pgjobs.jobs_add(%L, queue => 'q_switched') a, LATERAL pgjobs.jobs_claim('w', ARRAY['q_switched']) c$$, step)) AS completed
FROM (VALUES (1, 'while none', 'none'), (2, 'after all again', 'all')) AS s(n, step, keep) ORDER BY n;
SELECT h.task, h.status FROM pgjobs.job_history h WHERE h.queue = 'q_switched';
SELECT count(*) AS left_in_jobs FROM pgjobs.jobs WHERE queue = 'q_switched';

-- What a reader sees of a job finished in a queue that keeps none: nothing, as for a job that
-- never existed. job_list and jobs_find have no row; a late report, an abort and a heartbeat say
-- it does not exist (P0002) rather than that it finished.
SELECT regress.as_role('regress_keeper', $$SELECT pgjobs.jobs_queue_history('q_gone', 'none')$$) AS none_set;
SELECT regress.as_role('regress_keeper', $$
    SELECT c.id || ' ' || c.lease_token FROM pgjobs.jobs_add('gone', queue => 'q_gone', key => 'k:gone') a,
         LATERAL pgjobs.jobs_claim('w', ARRAY['q_gone']) c$$) AS claimed \gset
SELECT split_part(:'claimed', ' ', 1) AS gone, split_part(:'claimed', ' ', 2) AS gone_token \gset
SELECT regress.as_role('regress_keeper', format('SELECT pgjobs.jobs_complete(%s, %L)', :'gone', :'gone_token')) AS completed;
SELECT statement, regress.as_role('regress_keeper', format(statement, :'gone', :'gone_token')) AS result
FROM (VALUES ('SELECT count(*) FROM pgjobs.job_list WHERE id = %s'),
             ('SELECT count(*) FROM pgjobs.jobs_find(queue => ''q_gone'') WHERE id = %s'),
             ('SELECT pgjobs.jobs_complete(%s, %L)'),
             ('SELECT pgjobs.jobs_fail(%s, %L, ''late'')'),
             ('SELECT lease_state FROM pgjobs.jobs_heartbeat(%s, %L)'),
             ('SELECT pgjobs.jobs_abort(%s)')) AS s(statement);
-- Its skip key stays taken, pointing at it, until its month of history is dropped: adding the
-- key again adds nothing and returns the finished job's id.
SELECT owner::regrole, idempotency_key, job_id = :gone AS the_finished_job FROM pgjobs.job_keys;
SELECT regress.as_role('regress_keeper', $$SELECT pgjobs.jobs_add('again', queue => 'q_gone', key => 'k:gone')$$) = :'gone' AS same_id;
SELECT count(*) AS added FROM pgjobs.jobs WHERE task = 'again';

-- Bad input is refused with 22023 and changes nothing, the rules included.
SELECT regress.fingerprint() AS before \gset
SELECT string_agg(r::text, ',' ORDER BY r.owner, r.queue) AS rules_before FROM pgjobs.queue_history_rules r \gset
SELECT statement, regress.as_role('regress_keeper', 'SELECT regress.error_of(' || quote_literal(statement) || ')') AS result
FROM (VALUES ($$SELECT pgjobs.jobs_queue_history('q_all', 'some')$$),
             ($$SELECT pgjobs.jobs_queue_history('q_all', 'None')$$),
             ($$SELECT pgjobs.jobs_queue_history('q_all', '')$$),
             ($$SELECT pgjobs.jobs_queue_history('q_all', NULL)$$),
             ($$SELECT pgjobs.jobs_queue_history(NULL, 'none')$$),
             ($$SELECT pgjobs.jobs_queue_history('', 'none')$$),
             ($$SELECT pgjobs.jobs_queue_history('pg_jobs.sql', 'none')$$),
             ($$SELECT pgjobs.jobs_queue_history('pg_jobs.batch:anyone', 'failures')$$),
             ($$SELECT pgjobs.jobs_queue_history('pg_jobs.compute', 'all')$$)) AS s(statement);
-- An administrator is refused the extension's queues too, and a rule written past the function
-- for one fails the table's check.
SELECT regress.error_of($$SELECT pgjobs.jobs_queue_history('pg_jobs.sql', 'none')$$) AS as_superuser;
SELECT regress.error_of($$INSERT INTO pgjobs.queue_history_rules VALUES (0, 'pg_jobs.sql', 'none')$$) AS written_directly;
SELECT regress.fingerprint() = :'before' AS unchanged,
       (SELECT string_agg(r::text, ',' ORDER BY r.owner, r.queue) FROM pgjobs.queue_history_rules r) = :'rules_before' AS rules_unchanged;

-- Access: each identity (and its proxy) reads its own rules only; a role outside pgjobs_user
-- may neither read them nor set one; members write the table only through the function.
SELECT role, regress.as_role(role, $$SELECT coalesce(string_agg(owner::regrole || ':' || queue || ':' || keep, ',' ORDER BY queue), 'nothing') FROM pgjobs.queue_history_rules$$) AS sees,
       regress.as_role(role, $$SELECT pgjobs.jobs_queue_history('mine', 'failures')$$) AS sets
FROM (VALUES ('regress_keeper'), ('regress_keeper_proxy'), ('regress_neighbour'), ('regress_stranger')) AS r(role);
SELECT owner::regrole, queue, keep FROM pgjobs.queue_history_rules ORDER BY owner::regrole::text, queue;
SELECT regress.fingerprint() AS before \gset
SELECT string_agg(r::text, ',' ORDER BY r.owner, r.queue) AS rules_before FROM pgjobs.queue_history_rules r \gset
SELECT role, statement, regress.as_role(role, statement) AS result
FROM (VALUES ('regress_keeper'), ('regress_neighbour')) AS r(role),
     (VALUES ($$INSERT INTO pgjobs.queue_history_rules VALUES (pgjobs.identity(), 'direct', 'none') RETURNING queue$$),
             ($$UPDATE pgjobs.queue_history_rules SET keep = 'all' RETURNING queue$$),
             ($$DELETE FROM pgjobs.queue_history_rules RETURNING queue$$)) AS s(statement)
ORDER BY role, statement;
SELECT regress.fingerprint() = :'before' AS unchanged,
       (SELECT string_agg(r::text, ',' ORDER BY r.owner, r.queue) FROM pgjobs.queue_history_rules r) = :'rules_before' AS rules_unchanged;

SELECT regress.as_role('regress_keeper', $$SELECT pgjobs.jobs_remove_proxy('regress_keeper_proxy')$$) AS proxy_removed;
DROP VIEW regress.retention_found;
DROP TABLE regress.retention_added;
DROP FUNCTION regress.retention_outcomes(text);
TRUNCATE pgjobs.queue_history_rules;
SELECT regress.reset();
DROP ROLE regress_keeper, regress_keeper_proxy, regress_neighbour, regress_stranger;
