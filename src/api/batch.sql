-- The statements of src/api/batch.rs: the poster's side of batch jobs, and their counts.

-- name: missing(ids bigint[], owner oid)
-- The first of the jobs $ids that is no batch job of the owner (of anyone when null).
-- Each id probes the primary key alone, in a subquery kept apart (OFFSET 0) with the queue tested
-- outside it, as held does (batch_agent.sql): a condition on the queue implies the ready index's
-- predicate, and with the statistics of an empty table the planner read the whole ready index
-- for the ids (regress batch_agent).
SELECT i FROM unnest($ids::bigint[]) i
WHERE NOT EXISTS (SELECT FROM (SELECT j.queue, j.owner FROM jobs j WHERE j.id = i OFFSET 0) j
                  WHERE _is_batch_queue(j.queue) AND j.owner = coalesce($owner, j.owner))
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
-- The id probes the primary key alone, the queue tested outside, as in missing.
SELECT w.id
FROM (SELECT j.id, j.queue FROM jobs j
      WHERE j.id = $job AND j.status = 'created' AND j.owner = coalesce($owner, j.owner)
        AND EXISTS (SELECT FROM job_dependencies b WHERE b.job_id = j.id)
      OFFSET 0
      FOR UPDATE) w
WHERE _is_batch_queue(w.queue);

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

-- name: tally_added(owner oid, label text, computer text, run_at timestamptz)
-- As tally_one, for a job a post of the owner just added that waits for nothing, from what the
-- post gave (its label and computer, src/api/batch_post.rs): due and free to run at $run_at, or
-- when the statement began, as the add made it (add_keyed_one, rule replace). Reading the job back
-- (its wide row and its payload's fields) was two thirds of tally_one.
INSERT INTO batch_tally (owner, due_minute, label, computer, run_minute, n, first_due)
SELECT $owner, date_trunc('minute', t.at, 'UTC'), $label, $computer, date_trunc('minute', t.at, 'UTC'),
       1, t.at
FROM (SELECT coalesce($run_at::timestamptz, statement_timestamp())) AS t(at);

-- name: tally_added_many(owner oid, labels text[], computers text[], run_ats timestamptz[])
-- As tally_added, for several jobs (in lockstep: each one's label, computer and run_at), counted
-- by key as tally counts them.
INSERT INTO batch_tally (owner, due_minute, label, computer, run_minute, n, first_due)
SELECT $owner, date_trunc('minute', t.at, 'UTC'), a.label, a.computer, date_trunc('minute', t.at, 'UTC'),
       count(*), min(t.at)
FROM unnest($labels::text[], $computers::text[], $run_ats::timestamptz[]) AS a(label, computer, run_at)
CROSS JOIN LATERAL (SELECT coalesce(a.run_at, statement_timestamp())) AS t(at)
GROUP BY 2, 3, 4, 5;

-- name: tally_one(id bigint, sign integer, as_created boolean)
-- As tally, for the one job $id (a post, a replace, a cancel): no grouping, whose set-up on every
-- call cost more than the rest of the statement.
INSERT INTO batch_tally (owner, due_minute, label, computer, run_minute, n, first_due)
SELECT j.owner, date_trunc('minute', j.due_at, 'UTC'), _batch_label(j.payload),
       j.payload ->> 'computer', date_trunc('minute', j.run_at, 'UTC'), $sign,
       CASE WHEN $sign > 0 THEN j.due_at END
FROM (SELECT * FROM jobs j WHERE j.id = $id OFFSET 0) j  -- by its primary key, as in tally
WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
  AND ($as_created OR (j.status = 'created' AND j.run_at < 'infinity'));
