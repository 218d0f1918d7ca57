-- Idempotency keys. skip: the first job with a key stands, also after it finished.
-- replace: posting again replaces the job still waiting; a running one is left alone; once it
-- has finished the key is free again.
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

-- replace, while running: left alone.
CREATE TABLE regress.running AS SELECT * FROM pgjobs.jobs_claim('w');
SELECT pgjobs.jobs_add('sync', '{"v": 3}', key => 'sync:42', on_conflict => 'replace') AS while_running;
SELECT j.payload, j.status FROM pgjobs.jobs j WHERE j.id = 4;

-- replace, after it finished: a new job.
SELECT count(*) FROM regress.running r, pgjobs.jobs_complete(r.id, r.lease_token);
SELECT pgjobs.jobs_add('sync', '{"v": 4}', key => 'sync:42', on_conflict => 'replace') AS after_finish;
SELECT id AS job_id, payload FROM pgjobs.jobs ORDER BY job_id;

-- skip against a waiting replace-job keeps it as it is.
SELECT pgjobs.jobs_add('sync', '{"v": 5}', key => 'sync:42') AS skipped;
SELECT id AS job_id, payload FROM pgjobs.jobs ORDER BY job_id;

-- A batch with one key twice adds it once, and both positions get the same id.
SELECT * FROM pgjobs.jobs_add_batch('[{"task": "t", "key": "dup"}, {"task": "t", "key": "dup"}, {"task": "u"}]');
SELECT count(*) AS jobs_with_dup FROM pgjobs.jobs WHERE idempotency_key = 'dup';

DROP TABLE regress.running;
