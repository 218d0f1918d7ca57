-- Idempotency keys. skip: the first job with a key stands, also after it finished.
-- replace: posting again replaces the job still waiting; while one runs, the new work is a new
-- job that takes the key (the next add replaces it); once it has finished the key is free again.
-- debounce: as replace, due key_window after the last add.
-- throttle: one job per key per key_window.
SELECT regress.reset();

SELECT pgjobs.jobs_add('report', '{"v": 1}', key => 'daily:2026-11-29') AS first,
       pgjobs.jobs_add('report', '{"v": 2}', key => 'daily:2026-11-29') AS second;
SELECT id AS job_id, payload FROM pgjobs.jobs;
SELECT count(*) FROM pgjobs.jobs_claim('w') c, pgjobs.jobs_complete(c.id, c.lease_token);
SELECT pgjobs.jobs_add('report', '{"v": 3}', key => 'daily:2026-11-29') AS after_finish;
SELECT count(*) AS live FROM pgjobs.jobs;

-- replace, while waiting: same job, new work.
SELECT pgjobs.jobs_add('sync', '{"v": 1}', key => 'sync:42', on_conflict => 'replace') AS first;
SELECT pgjobs.jobs_add('sync', '{"v": 2}', key => 'sync:42', on_conflict => 'replace',
                       priority => 3, max_attempts => 8) AS replaced;
SELECT j.id, j.task, j.priority, j.max_attempts, j.payload, j.status
FROM pgjobs.jobs j WHERE j.idempotency_key = 'sync:42';

-- replace, while running: the running job is left alone, and the new work is a job of its own,
-- waiting, which takes the key; an add after it replaces that one's work.
CREATE TABLE regress.running AS SELECT * FROM pgjobs.jobs_claim('w');
SELECT pgjobs.jobs_add('sync', '{"v": 3}', key => 'sync:42', on_conflict => 'replace') AS while_running;
SELECT pgjobs.jobs_add('sync', '{"v": 3.5}', key => 'sync:42', on_conflict => 'replace') AS next_replaced;
SELECT j.id, j.payload, j.status FROM pgjobs.jobs j WHERE j.idempotency_key = 'sync:42' ORDER BY j.id;
SELECT job_id AS key_holder FROM pgjobs.job_keys WHERE idempotency_key = 'sync:42';

-- The running job's completion leaves the key to the next job; once that one has finished too,
-- replace adds a new job.
SELECT count(*) FROM regress.running r, pgjobs.jobs_complete(r.id, r.lease_token);
SELECT job_id AS key_holder FROM pgjobs.job_keys WHERE idempotency_key = 'sync:42';
SELECT count(*) FROM pgjobs.jobs_claim('w') c, pgjobs.jobs_complete(c.id, c.lease_token);
SELECT pgjobs.jobs_add('sync', '{"v": 4}', key => 'sync:42', on_conflict => 'replace') AS after_finish;
SELECT id AS job_id, payload FROM pgjobs.jobs ORDER BY job_id;

-- skip against a waiting replace-job keeps it as it is.
SELECT pgjobs.jobs_add('sync', '{"v": 5}', key => 'sync:42') AS skipped;
SELECT id AS job_id, payload FROM pgjobs.jobs ORDER BY job_id;

-- A batch with one key twice adds it once, and both positions get the same id.
SELECT * FROM pgjobs.jobs_add_batch('[{"task": "t", "key": "dup"}, {"task": "t", "key": "dup"}, {"task": "u"}]');
SELECT count(*) AS jobs_with_dup FROM pgjobs.jobs WHERE idempotency_key = 'dup';

DROP TABLE regress.running;

-- debounce: the job runs key_window after the last add. The first add is due then; each add
-- while it waits replaces its work and pushes it out again; an add while it runs is a new job,
-- due key_window later.
SELECT regress.reset();
SELECT pgjobs.jobs_add('reindex', '{"v": 1}', key => 'doc:7', on_conflict => 'debounce', key_window => '10 seconds') AS first;
SELECT run_at - now() BETWEEN interval '9 seconds' AND interval '10 seconds' AS due_in_10s, key_rule FROM pgjobs.jobs WHERE id = 1;
UPDATE pgjobs.jobs SET run_at = now() + interval '2 seconds' WHERE id = 1;
SELECT pgjobs.jobs_add('reindex', '{"v": 2}', key => 'doc:7', on_conflict => 'debounce', key_window => '10 seconds') AS debounced;
SELECT id, payload, run_at - now() BETWEEN interval '9 seconds' AND interval '10 seconds' AS due_in_10s_again FROM pgjobs.jobs;
UPDATE pgjobs.jobs SET run_at = now() WHERE id = 1;
SELECT id AS claimed FROM pgjobs.jobs_claim('w');
SELECT pgjobs.jobs_add('reindex', '{"v": 3}', key => 'doc:7', on_conflict => 'debounce', key_window => '10 seconds') AS while_running;
SELECT id, payload, status, run_at - now() BETWEEN interval '9 seconds' AND interval '10 seconds' AS due_in_10s FROM pgjobs.jobs ORDER BY id;

-- throttle: at most one job per key per key_window. The first runs at once; adds within the
-- window add nothing and return it, also once it has finished; after the window (moved here to
-- the past) the next add is a new job, which holds the key for a window of its own.
SELECT regress.reset();
SELECT pgjobs.jobs_add('digest', '{"v": 1}', key => 'digest:ana', on_conflict => 'throttle', key_window => '1 hour') AS first;
SELECT pgjobs.jobs_add('digest', '{"v": 2}', key => 'digest:ana', on_conflict => 'throttle', key_window => '1 hour') AS within_window;
SELECT id, payload, run_at <= now() AS due_now, key_rule FROM pgjobs.jobs;
SELECT free_at - now() BETWEEN interval '59 minutes' AND interval '1 hour' AS free_in_an_hour FROM pgjobs.job_keys WHERE idempotency_key = 'digest:ana';
SELECT count(*) FROM pgjobs.jobs_claim('w') c, pgjobs.jobs_complete(c.id, c.lease_token);
SELECT pgjobs.jobs_add('digest', '{"v": 3}', key => 'digest:ana', on_conflict => 'throttle', key_window => '1 hour') AS after_finish;
UPDATE pgjobs.job_keys SET free_at = now() - interval '1 second' WHERE idempotency_key = 'digest:ana';
SELECT pgjobs.jobs_add('digest', '{"v": 4}', key => 'digest:ana', on_conflict => 'throttle', key_window => '1 hour') AS after_window;
SELECT * FROM pgjobs.jobs_add_batch('[{"task": "digest", "key": "digest:ana", "on_conflict": "throttle", "key_window": "1 hour"},
                                      {"task": "digest", "key": "digest:bob", "on_conflict": "throttle", "key_window": "1 hour"}]');
SELECT id, payload FROM pgjobs.jobs ORDER BY id;
SELECT idempotency_key, job_id, free_at > now() AS free_later FROM pgjobs.job_keys ORDER BY idempotency_key;

-- Refused with 22023, nothing changed: a window without a rule that takes one, a rule without
-- its window or key, a window not positive or over a year, a run_at with debounce, an unknown rule.
SELECT regress.fingerprint() AS before \gset
SELECT statement, regress.error_of(statement) AS result
FROM (VALUES ($$SELECT pgjobs.jobs_add('t', key => 'k', key_window => '1 minute')$$),
             ($$SELECT pgjobs.jobs_add('t', key => 'k', on_conflict => 'replace', key_window => '1 minute')$$),
             ($$SELECT pgjobs.jobs_add('t', key => 'k', on_conflict => 'throttle')$$),
             ($$SELECT pgjobs.jobs_add('t', key => 'k', on_conflict => 'debounce', key_window => '0')$$),
             ($$SELECT pgjobs.jobs_add('t', key => 'k', on_conflict => 'debounce', key_window => '-1 second')$$),
             ($$SELECT pgjobs.jobs_add('t', key => 'k', on_conflict => 'throttle', key_window => '2 years')$$),
             ($$SELECT pgjobs.jobs_add('t', key => 'k', on_conflict => 'throttle', key_window => 'infinity')$$),
             ($$SELECT pgjobs.jobs_add('t', on_conflict => 'throttle', key_window => '1 minute')$$),
             ($$SELECT pgjobs.jobs_add('t', key => 'k', on_conflict => 'debounce', key_window => '1 minute', run_at => now())$$),
             ($$SELECT pgjobs.jobs_add('t', key => 'k', on_conflict => 'sometimes')$$),
             ($$SELECT count(*) FROM pgjobs.jobs_add_batch('[{"task": "t", "key": "k", "on_conflict": "throttle", "key_window": "0"}]')$$)) AS s(statement);
SELECT regress.fingerprint() = :'before' AS unchanged;
