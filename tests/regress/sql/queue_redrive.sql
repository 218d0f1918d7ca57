-- Second chances, as member roles. jobs_retry brings failed and aborted jobs back from
-- job_history with the same id, payload and settings, their errors kept and their attempts fresh,
-- and gives a `replace` key back unless another job took it; jobs_retry_where does it by queue,
-- task, month and error text, oldest first, max_jobs at a time. A queue's dead-letter queue
-- (jobs_dead_letter) gets a copy of each job that fails its last attempt, by a worker's report or
-- by its lease running out, and not of an aborted one. Completed, live and other identities' jobs
-- are never brought back; bad input is refused with 22023 and changes nothing; who reads the
-- rules.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.queue_dead_letters, pgjobs.queue_history_rules, pgjobs.proxies;
CREATE ROLE regress_redriver IN ROLE pgjobs_user;
CREATE ROLE regress_redriver_proxy IN ROLE pgjobs_user;
CREATE ROLE regress_bystander IN ROLE pgjobs_user;
CREATE ROLE regress_outsider;  -- not a member of pgjobs_user
GRANT regress_redriver_proxy TO regress_redriver;
SELECT regress.as_role('regress_redriver', $$SELECT pgjobs.jobs_add_proxy('regress_redriver_proxy')$$) AS proxy_added;

-- Job 1 fails its only attempt; job 2 (key k2, rule replace) too; job 3 is aborted while it
-- waits; job 4 completes; job 5 waits. The bystander's job 6 fails in a queue of the same name.
SET ROLE regress_redriver;
SELECT pgjobs.jobs_add('mail', '{"to": "ana"}', 'q', priority => -3, max_attempts => 1,
                       backoff => '7 seconds', max_backoff => '70 seconds', lease => '10 minutes') AS job_1;
SELECT pgjobs.jobs_add('mail', '{"to": "bob"}', 'q', max_attempts => 1, key => 'k2', on_conflict => 'replace') AS job_2;
SELECT pgjobs.jobs_add('report', '{}', 'q') AS job_3;
SELECT pgjobs.jobs_add('mail', '{"to": "cy"}', 'q') AS job_4;
SELECT string_agg(id::text, ',' ORDER BY id) AS claimed FROM pgjobs.jobs_claim('w', ARRAY['q'], 2);
SELECT pgjobs.jobs_fail(1, regress.token(1), 'smtp timeout');
SELECT pgjobs.jobs_fail(2, regress.token(2), 'smtp refused');
SELECT pgjobs.jobs_abort(3);
SELECT id AS claimed FROM pgjobs.jobs_claim('w', ARRAY['q']);
SELECT pgjobs.jobs_complete(4, regress.token(4));
SELECT pgjobs.jobs_add('mail', '{"to": "dee"}', 'q') AS job_5;
RESET ROLE;
SELECT regress.as_role('regress_bystander', $$SELECT pgjobs.jobs_add('mail', queue => 'q', max_attempts => 1)::text$$) AS job_6;
SELECT regress.as_role('regress_bystander', $$SELECT id::text FROM pgjobs.jobs_claim('w', ARRAY['q'])$$) AS claimed;
SELECT regress.as_role('regress_bystander', $$SELECT pgjobs.jobs_fail(6, pgjobs.jobs.lease_token, 'bystander broke') FROM pgjobs.jobs WHERE id = 6$$) AS failed;
-- History keeps what a retry needs of the failed and aborted, nothing of the completed.
SELECT id, status, attempts, backoff, max_backoff, lease FROM pgjobs.job_history ORDER BY id;

-- Retried by the proxy, for its root: 1, 2 and 3 come back (4 completed, 5 waits, 6 and 99 are
-- not the redriver's), with the same ids, due now, attempts fresh, errors kept, settings as added.
SELECT regress.as_role('regress_redriver_proxy', $$
    SELECT string_agg(r::text, ',' ORDER BY r) FROM pgjobs.jobs_retry(ARRAY[1, 2, 3, 4, 5, 6, 99, 1]) r$$) AS retried;
SELECT id, task, queue, status, attempt, payload, priority, max_attempts, backoff, max_backoff, lease,
       run_at <= now() AS due_now, jsonb_array_length(errors) AS errors, errors -> -1 ->> 'error' AS last_error,
       idempotency_key, key_rule
FROM pgjobs.jobs ORDER BY id;
SELECT id, status FROM pgjobs.job_history ORDER BY id;
-- Job 2 holds its key again: an add with k2 replaces its work instead of adding a job.
SELECT regress.as_role('regress_redriver', $$
    SELECT pgjobs.jobs_add('mail', '{"to": "bob again"}', 'q', key => 'k2', on_conflict => 'replace')::text$$) AS k2_add;
SELECT payload FROM pgjobs.jobs WHERE id = 2;
-- Retried again: nothing, they are live.
SELECT regress.as_role('regress_redriver', $$SELECT count(*) FROM pgjobs.jobs_retry(ARRAY[1, 2, 3])$$) AS retried_again;
-- Claimed again as a first attempt; failing it ends the job, which was given one attempt.
SELECT regress.as_role('regress_redriver', $$SELECT string_agg(id || ':' || attempt, ',' ORDER BY id) FROM pgjobs.jobs_claim('w', ARRAY['q'], 10)$$) AS claimed;
SELECT regress.as_role('regress_redriver', $$SELECT pgjobs.jobs_fail(1, regress.token(1), 'smtp timeout again')$$) AS failed_again;
SELECT id, status, attempts, jsonb_array_length(errors) AS errors FROM pgjobs.job_history WHERE id = 1;

-- A replace key taken meanwhile: job 2 fails, another job takes k2, and the retry leaves job 2
-- in history.
SELECT regress.as_role('regress_redriver', $$SELECT pgjobs.jobs_fail(2, regress.token(2), 'smtp refused again')$$) AS failed_2;
SELECT regress.as_role('regress_redriver', $$SELECT pgjobs.jobs_add('mail', queue => 'q', key => 'k2', on_conflict => 'replace')::text$$) AS k2_taken_by;
SELECT regress.as_role('regress_redriver', $$SELECT count(*) FROM pgjobs.jobs_retry(ARRAY[2])$$) AS retried_2;
SELECT status FROM pgjobs.job_history WHERE id = 2;

-- By filter: the redriver's failed jobs of q whose last error says "timeout" (job 1, not 2),
-- then the failed mails of q due this month, one at a time (max_jobs 1: the oldest first),
-- passing over job 2, whose key another job holds (a loop of calls until one brings back none
-- would stop at it otherwise).
SELECT regress.as_role('regress_redriver', $$
    SELECT string_agg(r::text, ',') FROM pgjobs.jobs_retry_where('q', error => 'timeout') r$$) AS by_error;
SELECT regress.as_role('regress_redriver', $$SELECT pgjobs.jobs_fail(1, regress.token(1), 'x')
    FROM pgjobs.jobs_claim('w', ARRAY['q'], 1) c WHERE c.id = 1$$) AS failed_1;
SELECT regress.as_role('regress_redriver', $$SELECT pgjobs.jobs_add('mail', '{"to": "hal"}', 'q', max_attempts => 1)::text$$) AS hal;
SELECT regress.as_role('regress_redriver', $$SELECT pgjobs.jobs_fail(c.id, c.lease_token, 'y')
    FROM pgjobs.jobs_claim('w', ARRAY['q'], 10) c WHERE c.payload ->> 'to' = 'hal'$$) AS hal_failed;
SELECT regress.as_role('regress_redriver', $$
    SELECT string_agg(r::text, ',') FROM pgjobs.jobs_retry_where('q', task => 'mail', month => now()::date, max_jobs => 1) r$$) AS oldest_mail;
SELECT regress.as_role('regress_redriver', $$
    SELECT string_agg(r::text, ',') FROM pgjobs.jobs_retry_where('q', task => 'mail', month => now()::date, max_jobs => 1) r$$) AS next_mail;
SELECT regress.as_role('regress_redriver', $$
    SELECT coalesce(string_agg(r::text, ','), 'none') FROM pgjobs.jobs_retry_where('q', month => (now() - interval '2 months')::date) r$$) AS other_month;
SELECT regress.as_role('regress_redriver', $$
    SELECT coalesce(string_agg(r::text, ','), 'none') FROM pgjobs.jobs_retry_where('q', task => 'report') r$$) AS reports;
SELECT regress.as_role('regress_bystander', $$
    SELECT string_agg(r::text, ',') FROM pgjobs.jobs_retry_where('q') r$$) AS bystanders_own;
SELECT id, owner::regrole, status FROM pgjobs.job_history ORDER BY id;

-- A replace key that still names its failed job (as a hand-over that rolled back while the job
-- finished leaves it; written here by hand) is the job's own: retry_where chooses the job and the
-- retry brings it back with its key.
SELECT regress.as_role('regress_redriver', $$SELECT pgjobs.jobs_add('mail', queue => 'q2', max_attempts => 1, key => 'k9', on_conflict => 'replace')::text$$) AS job_k9;
SELECT regress.as_role('regress_redriver', $$SELECT pgjobs.jobs_fail(c.id, c.lease_token, 'z') FROM pgjobs.jobs_claim('w', ARRAY['q2']) c$$) AS k9_failed;
INSERT INTO pgjobs.job_keys (owner, idempotency_key, job_id, due_at)
SELECT owner, idempotency_key, id, due_at FROM pgjobs.job_history WHERE idempotency_key = 'k9';
SELECT regress.as_role('regress_redriver', $$SELECT string_agg(r::text, ',') FROM pgjobs.jobs_retry_where('q2') r$$) AS k9_retried;
SELECT j.status, k.job_id = j.id AS holds_its_key
FROM pgjobs.jobs j JOIN pgjobs.job_keys k ON k.idempotency_key = j.idempotency_key WHERE j.idempotency_key = 'k9';

-- Dead letters: the redriver's q sends its failures to q.dead. A job failing its last attempt
-- is failed in history and copied there, due now: task, payload, priority, settings and errors,
-- attempts fresh; the copy's workers are those of q.dead. A failure with attempts left is
-- retried in q, not copied; an abort is not copied; a lease running out on the last attempt is.
SELECT regress.as_role('regress_redriver', $$SELECT pgjobs.jobs_dead_letter('q', 'q.dead')$$) AS dead_letter_set;
SELECT owner::regrole, queue, dead_letter_queue, set_by, set_at IS NOT NULL AS dated FROM pgjobs.queue_dead_letters;
SELECT regress.reset();
SET ROLE regress_redriver;
SELECT pgjobs.jobs_add('mail', '{"to": "eve"}', 'q', priority => 2, max_attempts => 2, backoff => '0 seconds', lease => '5 minutes') AS job_1;
SELECT pgjobs.jobs_add('mail', '{"to": "fay"}', 'q', max_attempts => 1) AS job_2;
SELECT pgjobs.jobs_add('mail', '{"to": "gus"}', 'q', max_attempts => 1) AS job_3;
SELECT string_agg(id::text, ',' ORDER BY id) AS claimed FROM pgjobs.jobs_claim('w', ARRAY['q'], 3);
SELECT pgjobs.jobs_fail(1, regress.token(1), 'first try');
SELECT pgjobs.jobs_abort(2);
SELECT pgjobs.jobs_fail(2, regress.token(2), 'aborted, then failed');
RESET ROLE;
SELECT regress.expire_lease(3);
SELECT pgjobs._rescue_expired() AS rescued;
SET ROLE regress_redriver;
SELECT id AS claimed_again FROM pgjobs.jobs_claim('w', ARRAY['q']);
SELECT pgjobs.jobs_fail(1, regress.token(1), 'second try');
SELECT id, queue, status, attempt, payload, priority, max_attempts, backoff, lease, run_at <= now() AS due_now,
       (SELECT string_agg(e ->> 'error', ' / ') FROM jsonb_array_elements(errors) e) AS errors
FROM pgjobs.jobs ORDER BY id;
SELECT id, queue, status FROM pgjobs.job_history ORDER BY id;
SELECT string_agg(task || ' for ' || (payload ->> 'to'), ',' ORDER BY id) AS dead_letters_claimed
FROM pgjobs.jobs_claim('dead-letter worker', ARRAY['q.dead'], 10);
SELECT queue, dead_letter_queue FROM pgjobs.jobs_queues ORDER BY queue;
RESET ROLE;
SELECT counter, total FROM pgjobs._metrics_counters() WHERE counter = 'dead_lettered';
-- Removed (null): the next failure is not copied. The bystander's q has no dead-letter queue.
SELECT regress.as_role('regress_redriver', $$SELECT pgjobs.jobs_dead_letter('q', NULL)$$) AS dead_letter_removed;
SELECT count(*) AS dead_letter_rules FROM pgjobs.queue_dead_letters;

-- Refused with 22023 (nulls 22004), nothing changed, also for an administrator: too many or no
-- ids, a null id, the extension's queues, a queue its own dead-letter queue, empty names, a
-- max_jobs out of range, a month that is not finite.
SELECT regress.as_role('regress_redriver', $$SELECT pgjobs.jobs_dead_letter('kept', 'kept.dead')$$) AS kept_rule;
SELECT regress.fingerprint() AS before \gset
SELECT string_agg(d::text, ',') AS rules_before FROM pgjobs.queue_dead_letters d \gset
SELECT statement, regress.as_role('regress_redriver', 'SELECT regress.error_of(' || quote_literal(statement) || ')') AS result
FROM (VALUES ($$SELECT pgjobs.jobs_retry(NULL)$$),
             ($$SELECT pgjobs.jobs_retry('{}')$$),
             ($$SELECT pgjobs.jobs_retry(ARRAY[1, NULL])$$),
             ($$SELECT pgjobs.jobs_retry(array(SELECT generate_series(1, 1001)::bigint))$$),
             ($$SELECT pgjobs.jobs_retry_where(NULL)$$),
             ($$SELECT pgjobs.jobs_retry_where('')$$),
             ($$SELECT pgjobs.jobs_retry_where('pg_jobs.sql')$$),
             ($$SELECT pgjobs.jobs_retry_where('q', max_jobs => 0)$$),
             ($$SELECT pgjobs.jobs_retry_where('q', max_jobs => 10001)$$),
             ($$SELECT pgjobs.jobs_retry_where('q', max_jobs => NULL)$$),
             ($$SELECT pgjobs.jobs_retry_where('q', month => 'infinity')$$),
             ($$SELECT pgjobs.jobs_retry_where('q', month => '-infinity')$$),
             ($$SELECT pgjobs.jobs_dead_letter(NULL, 'x')$$),
             ($$SELECT pgjobs.jobs_dead_letter('', 'x')$$),
             ($$SELECT pgjobs.jobs_dead_letter('kept', '')$$),
             ($$SELECT pgjobs.jobs_dead_letter('kept', 'kept')$$),
             ($$SELECT pgjobs.jobs_dead_letter('pg_jobs.batch:anyone', 'x')$$),
             ($$SELECT pgjobs.jobs_dead_letter('kept', 'pg_jobs.sql')$$)) AS s(statement);
SELECT regress.error_of($$SELECT pgjobs.jobs_dead_letter('kept', 'pg_jobs.sql')$$) AS as_superuser;
-- Past the function, the table's checks refuse the same.
SELECT regress.error_of($$INSERT INTO pgjobs.queue_dead_letters VALUES (10, 'a', 'a', now(), 'postgres')$$) AS to_itself;
SELECT regress.error_of($$INSERT INTO pgjobs.queue_dead_letters VALUES (10, 'a', 'pg_jobs.sql', now(), 'postgres')$$) AS to_reserved;
SELECT regress.fingerprint() = :'before' AS jobs_unchanged,
       (SELECT string_agg(d::text, ',') FROM pgjobs.queue_dead_letters d) = :'rules_before' AS rules_unchanged;

-- Who reads the rules and calls the functions: the redriver and its proxy see the rules, the
-- bystander nothing; one not in pgjobs_user may do nothing. The bystander's retry of the
-- redriver's failed job 3 brings back nothing (as for a job that does not exist); the proxy's
-- brings it back.
SELECT role, regress.as_role(role, $$SELECT coalesce(string_agg(queue || '->' || dead_letter_queue, ','), 'nothing') FROM pgjobs.queue_dead_letters$$) AS sees,
       regress.as_role(role, $$SELECT pgjobs.jobs_dead_letter('mine', 'mine.dead')$$) AS sets
FROM (VALUES ('regress_redriver'), ('regress_redriver_proxy'), ('regress_bystander'), ('regress_outsider')) AS r(role);
SELECT owner::regrole, queue, dead_letter_queue, set_by FROM pgjobs.queue_dead_letters ORDER BY owner::regrole::text, queue;
SELECT role, regress.as_role(role, $$SELECT count(*) FROM pgjobs.jobs_retry(ARRAY[3])$$) AS retries
FROM (VALUES ('regress_bystander'), ('regress_outsider'), ('regress_redriver_proxy')) AS r(role);
SELECT id, status FROM pgjobs.jobs WHERE id = 3;
-- A member cannot write the rules past the function.
SELECT regress.as_role('regress_bystander', $$INSERT INTO pgjobs.queue_dead_letters VALUES (10, 'a', 'b', now(), 'postgres')$$) AS written;

TRUNCATE pgjobs.queue_dead_letters, pgjobs.proxies;
SELECT regress.reset();
DROP ROLE regress_redriver, regress_redriver_proxy, regress_bystander, regress_outsider;
