-- The statements of src/api/batch.rs: the poster's side of batch jobs, and their counts.

-- name: missing(ids bigint[], owner oid)
-- The first of the jobs $ids that is no batch job of the owner (of anyone when null).
SELECT i FROM unnest($ids::bigint[]) i
WHERE NOT EXISTS (SELECT FROM jobs j WHERE j.id = i AND _is_batch_queue(j.queue)
                                       AND j.owner = coalesce($owner, j.owner))
  AND NOT EXISTS (SELECT FROM job_history h WHERE h.id = i AND _is_batch_queue(h.queue)
                                              AND h.owner = coalesce($owner, h.owner))
LIMIT 1;

-- name: abort(job bigint)
SELECT jobs_abort($job)::text;

-- name: tell_agent(job bigint)
-- Which job is not said: anyone may LISTEN. The agent of that computer asks about its jobs with a
-- heartbeat when its signal comes.
SELECT pg_notify('pgjobs_batch_cancel', _batch_cancel_signal(j.locked_by))
FROM jobs j WHERE j.id = $job;

-- name: status(job bigint)
SELECT b.status FROM batch_jobs b WHERE b.id = $job;

-- name: check_selection(month date, by text, statuses text[])
-- batch_cancel_where's month, grouping ($by) and statuses, checked as batch_find's are.
SELECT _finite_date($month, 'month'), _batch_check_reading(coalesce($by, 'time'), $statuses, 0, 0);

-- name: selected(month date, statuses text[], search text, by text, group_key text, owner oid)
-- The active jobs of the owner (anyone's when null) that batch_find selects ($month, $statuses,
-- $search), or one group of batch_groups (grouped by $by, the group of $group_key), in order.
SELECT coalesce(array_agg(b.id ORDER BY b.id), '{}')
FROM _batch_selection($month, $statuses, $search) b
WHERE b.ended_at IS NULL AND b.status <> 'CANCEL'
  AND b.owner::oid = coalesce($owner, b.owner::oid)
  AND ($by IS NULL
       OR _batch_group_key($by, b.due_at, b.routine, b.command, b.status, b.target, b.computer)
          = $group_key);

-- name: lock_waiting(job bigint, owner oid)
-- The job of the owner (anyone's when null) if it is a batch job waiting for dependencies, locked.
SELECT j.id FROM jobs j
WHERE j.id = $job AND _is_batch_queue(j.queue) AND j.status = 'created'
  AND j.owner = coalesce($owner, j.owner)
  AND EXISTS (SELECT FROM job_dependencies b WHERE b.job_id = j.id)
FOR UPDATE;

-- name: lock_tally
-- The table lock waits for every transaction that has written a delta; one that has changed jobs
-- but not yet written its delta is not seen by the count, and its delta then applies to it.
LOCK TABLE batch_tally IN EXCLUSIVE MODE;

-- name: count_tally
-- The tallied jobs counted afresh.
WITH cleared AS (DELETE FROM batch_tally)
INSERT INTO batch_tally (owner, due_minute, label, computer, run_minute, n, first_due)
SELECT j.owner, date_trunc('minute', j.due_at, 'UTC'), _batch_label(j.payload),
       j.payload ->> 'computer', date_trunc('minute', j.run_at, 'UTC'), count(*), min(j.due_at)
FROM jobs j
WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
  AND j.status = 'created' AND j.run_at < 'infinity'
GROUP BY 1, 2, 3, 4, 5;

-- name: fold_counts
SELECT _batch_tally_fold();

-- name: computer_known(computer text)
SELECT EXISTS (SELECT FROM batch_computers c WHERE c.computer = $computer);

-- name: job_of_hash(owner oid, hash text)
-- The latest job of the owner with the command hash (its key), live or finished.
SELECT x.id FROM (
    SELECT j.id FROM jobs j WHERE j.owner = $owner AND j.idempotency_key = $hash
    UNION ALL
    SELECT h.id FROM job_history h WHERE h.owner = $owner AND h.idempotency_key = $hash
) x ORDER BY x.id DESC LIMIT 1;

-- name: lock_dependencies(dependencies bigint[], owner oid)
-- The owner's live ones of a post's dependencies, locked FOR KEY SHARE: the lock a finish's
-- DELETE waits for, and a heartbeat's update does not. One finishing now waits for this post to
-- commit and then releases this job, or has finished before the lock and is read from
-- job_history by the next statement.
SELECT FROM jobs j WHERE j.id = ANY ($dependencies) AND j.owner = $owner
ORDER BY j.id FOR KEY SHARE OF j;

-- name: waiting_for(dependencies bigint[], owner oid)
-- Of a post's dependencies, those to wait for: the owner's live ones, and the owner's finished
-- ones that did not complete (a wait on a failed or cancelled job is what blocks); and the first
-- that is not the owner's at all.
SELECT coalesce((SELECT array_agg(x.id) FROM (
                    SELECT j.id FROM jobs j WHERE j.id = ANY ($dependencies) AND j.owner = $owner
                    UNION ALL
                    SELECT h.id FROM job_history h
                    WHERE h.id = ANY ($dependencies) AND h.owner = $owner
                      AND h.status <> 'completed') x), '{}'),
       (SELECT d FROM unnest($dependencies::bigint[]) d
        WHERE NOT EXISTS (SELECT FROM jobs j WHERE j.id = d AND j.owner = $owner)
          AND NOT EXISTS (SELECT FROM job_history h WHERE h.id = d AND h.owner = $owner)
        LIMIT 1);

-- name: spec(kind text, computer text, routine text, command text, args text[], cwd text,
--            shell boolean, env jsonb, poster oid, revision jsonb, extra jsonb,
--            depends_on bigint[], run_at timestamptz)
-- A post's command as its job's spec, the spec's hash (the job's key), the poster's advisory
-- lock for commands of that hash's first digit, and the job's payload.
SELECT x.spec, x.hash, _lock_key('batch_post', $poster::text || '/' || left(x.hash, 1)),
       x.spec || jsonb_build_object('revision', $revision, 'extra', coalesce($extra, '{}'),
                                    'depends_on', to_jsonb($depends_on::bigint[]),
                                    'run_at', $run_at)
FROM (SELECT s.spec, encode(sha256(convert_to(s.spec::text, 'UTF8')), 'hex') AS hash
      FROM (SELECT jsonb_build_object('kind', $kind, 'computer', $computer,
                                      'routine', $routine, 'command', $command,
                                      'args', to_jsonb($args::text[]), 'cwd', $cwd,
                                      'shell', coalesce($shell, false),
                                      'env', $env) AS spec) s) x;

-- name: try_turn(lock_key bigint)
SELECT CASE WHEN pg_try_advisory_lock($lock_key) THEN pg_advisory_unlock($lock_key)
            ELSE false END;

-- name: shorten_lock_waits
SELECT current_setting('lock_timeout'), set_config('lock_timeout', '1ms', true);

-- name: restore_lock_waits(lock_timeout text)
SELECT set_config('lock_timeout', $lock_timeout, true);

-- name: take_turn(lock_key bigint)
SELECT pg_advisory_xact_lock_shared($lock_key);

-- name: waiting_job(owner oid, hash text)
-- The waiting job of the owner with the command hash (its key), locked as a replace's update
-- locks it; found through its key's row (a batch job's key is held as long as the job is live),
-- one probe of each primary key, where an index on jobs would be chosen by statistics that may
-- not have seen the jobs yet (src/api/batch.rs).
SELECT j.id FROM job_keys k JOIN jobs j ON j.id = k.job_id
WHERE k.owner = $owner AND k.idempotency_key = $hash
  AND j.owner = $owner AND j.idempotency_key = $hash
  AND j.status = 'created'
FOR NO KEY UPDATE OF j;

-- name: waiting_job_nowait(owner oid, hash text)
SELECT j.id FROM job_keys k JOIN jobs j ON j.id = k.job_id
WHERE k.owner = $owner AND k.idempotency_key = $hash
  AND j.owner = $owner AND j.idempotency_key = $hash
  AND j.status = 'created'
FOR NO KEY UPDATE OF j NOWAIT;

-- name: made_now(job bigint)
-- Whether the job is one this post added: its id the one the add drew (a key taken gives the
-- holder's, drawn earlier); if so its key must be freed when it finishes, as a replace's is.
UPDATE jobs j SET key_rule = 'replace'
WHERE j.id = $job AND $job = currval('jobs_id_seq'::regclass)
RETURNING j.id;

-- name: still_waiting(job bigint)
SELECT EXISTS (SELECT FROM jobs j WHERE j.id = $job AND j.status = 'created');

-- name: clear_waits(job bigint)
DELETE FROM job_dependencies b WHERE b.job_id = $job;

-- name: add_waits(job bigint, owner oid, dependencies bigint[])
-- The job, of the owner, waits for the jobs of its dependencies, and is not due while it has any.
WITH added AS (
    INSERT INTO job_dependencies (on_job, job_id, owner)
    SELECT DISTINCT d, $job, $owner FROM unnest($dependencies::bigint[]) d
)
UPDATE jobs j SET run_at = 'infinity' WHERE j.id = $job;

-- name: tally(ids bigint[], sign integer, as_created boolean)
-- Adds ($sign = 1) or subtracts (-1) what the jobs $ids count in batch_tally as they are now;
-- $as_created: as they were before a claim took them (a claim changes neither their times nor
-- their payload).
INSERT INTO batch_tally (owner, due_minute, label, computer, run_minute, n, first_due)
SELECT j.owner, date_trunc('minute', j.due_at, 'UTC'), _batch_label(j.payload),
       j.payload ->> 'computer', date_trunc('minute', j.run_at, 'UTC'), $sign * count(*),
       CASE WHEN $sign > 0 THEN min(j.due_at) END
FROM unnest($ids::bigint[]) AS i(id),
     -- Not flattened (OFFSET 0): each job by its primary key (see TALLY in batch.rs).
     LATERAL (SELECT * FROM jobs j WHERE j.id = i.id OFFSET 0) j
WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
  AND ($as_created OR (j.status = 'created' AND j.run_at < 'infinity'))
GROUP BY 1, 2, 3, 4, 5;
