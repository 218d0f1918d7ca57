-- Adding jobs: defaults from the settings, explicit policy, batches, and the job exists only
-- if the adding transaction commits.
SELECT regress.reset();

SELECT pgjobs.jobs_add('plain');
SELECT pgjobs.jobs_add('explicit', '{"a": 1}', queue => 'mail', priority => 5,
                       max_attempts => 7, backoff => '2 seconds', max_backoff => '1 minute',
                       lease => '30 seconds');
SET pg_jobs.max_attempts = 9;
SET pg_jobs.lease = '5min';
SELECT pgjobs.jobs_add('from_settings');
RESET pg_jobs.max_attempts;
RESET pg_jobs.lease;

SELECT id, owner::regrole, task, queue, priority, max_attempts, backoff, max_backoff, lease,
       due_at = start_time AS due_now, status, attempt, payload, lease_token IS NULL AS unleased,
       run_at = due_at AS runs_when_due
FROM pgjobs.jobs ORDER BY id;

-- A batch keeps the order it was given in.
SELECT * FROM pgjobs.jobs_add_batch('[
    {"task": "b1", "payload": {"n": 1}},
    {"task": "b2", "payload": {"n": 2}, "queue": "other", "priority": -3},
    {"task": "b3", "run_at": "2099-01-01T00:00:00Z"}
]');
SELECT id, task, queue, priority, payload, run_at > now() + interval '50 years' AS far
FROM pgjobs.job_list WHERE task LIKE 'b%' ORDER BY id;

-- Every field of a batch's jobs as given: payloads of every JSON type kept byte for byte (read
-- from the argument where it lies, src/api/job_specs.rs), a null field as left out, numbers
-- of any spelling that are integers.
SELECT '[{"task": "p1", "payload": {"deep": {"list": [1, 2.5, "three", null, true]}, "unicode": "\u00e9\u4e2d"}},
             {"task": "p2", "payload": [1, {"a": "b"}], "priority": 1e1, "max_attempts": 3},
             {"task": "p3", "payload": "just a string", "queue": null, "lease": "90 seconds"},
             {"task": "p4", "payload": 12.50},
             {"task": "p5", "payload": null, "backoff": "1 second", "max_backoff": "2 seconds"},
             {"task": "p6", "payload": false, "run_at": "2099-01-01T00:00:00Z", "concurrency_key": "c"}]' AS batch \gset
SELECT count(*) AS added FROM pgjobs.jobs_add_batch(:'batch');
SELECT j.task, j.payload = coalesce(nullif(e.job -> 'payload', 'null'), '{}') AS payload_as_given, j.payload,
       j.queue, j.priority, j.max_attempts, j.lease, j.backoff, j.max_backoff,
       j.run_at > now() + interval '50 years' AS far, j.concurrency_key
FROM jsonb_array_elements(:'batch') AS e(job)
JOIN pgjobs.jobs j ON j.task = e.job ->> 'task'
ORDER BY j.task;

-- Rolled back: no job.
BEGIN;
SELECT pgjobs.jobs_add('rolled_back');
ROLLBACK;
SELECT count(*) AS rolled_back_jobs FROM pgjobs.job_list WHERE task = 'rolled_back';

-- Each job has a public opaque id, distinct from the others, that names it back.
SELECT count(DISTINCT pgjobs._job_opaque_id(id, owner)) = count(*) AS opaque_ids_distinct,
       bool_and((SELECT count(*) FROM pgjobs.jobs_public_lookup(pgjobs._job_opaque_id(id, owner))) = 1) AS each_found
FROM pgjobs.jobs;
