-- The statements of src/api/batch_post.rs: posting batch jobs.

-- name: posts(posts jsonb, fields text[])
-- batch_post_many's $posts (an array) in their order: whether each is an object; its fields as
-- batch_post's arguments, a field left out or null taking batch_post's default; its "after"; and
-- the first of its keys that is none of $fields (looked for only where the post less $fields
-- keeps a key: a set-returning call for each post's keys was a fifth of reading the posts).
SELECT jsonb_typeof(e.post) = 'object', p.command, coalesce(p.args, '{}'),
       coalesce(p.computer, 'ANY'), coalesce(p.kind, 'batch'), p.routine, p.cwd,
       coalesce(p.shell, false), coalesce(p.depends_on, '{}'), p.run_at,
       coalesce(p.max_attempts, 1), coalesce(p.priority, 0), p.revision, coalesce(p.env, '{}'),
       coalesce(p.extra, '{}'), coalesce(p.after, '{}'),
       CASE WHEN o.post - $fields::text[] <> '{}'
            THEN (SELECT min(k) FROM jsonb_object_keys(o.post - $fields::text[]) k) END
FROM jsonb_array_elements($posts) WITH ORDINALITY AS e(post, n)
CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(e.post) = 'object' THEN e.post END) AS o(post)
LEFT JOIN LATERAL jsonb_to_record(o.post)
    AS p(command text, args text[], computer text, kind text, routine text, cwd text,
         shell boolean, depends_on text[], run_at timestamptz, max_attempts integer,
         priority integer, revision jsonb, env jsonb, extra jsonb, after bigint[]) ON true
ORDER BY e.n;

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
-- The owner's live ones of posts' dependencies, locked FOR KEY SHARE: the lock a finish's
-- DELETE waits for, and a heartbeat's update does not. One finishing now waits for the posts to
-- commit and then releases their jobs, or has finished before the lock and is read from
-- job_history by the next statement.
SELECT FROM jobs j WHERE j.id = ANY ($dependencies) AND j.owner = $owner
ORDER BY j.id FOR KEY SHARE OF j;

-- name: waiting_for(dependencies bigint[], owner oid)
-- Of posts' dependencies, those to wait for: the owner's live ones, and the owner's finished
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

-- name: shorten_lock_waits
SELECT current_setting('lock_timeout'), set_config('lock_timeout', '1ms', true);

-- name: restore_lock_waits(lock_timeout text)
SELECT set_config('lock_timeout', $lock_timeout, true);

-- name: waiting_job(owner oid, hash text)
-- The waiting job of the owner with the command hash (its key), locked as a replace's update
-- locks it; found through its key's row (a batch job's key is held as long as the job is live),
-- one probe of each primary key, where an index on jobs would be chosen by statistics that may
-- not have seen the jobs yet (src/api/batch_post.rs).
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

-- name: add_waits(jobs bigint[], on_jobs bigint[], owner oid)
-- Each job $jobs[i], of the owner, waits for the job $on_jobs[i]; a job is not due while it
-- waits for any.
WITH added AS (
    INSERT INTO job_dependencies (on_job, job_id, owner)
    SELECT DISTINCT w.on_job, w.job, $owner FROM unnest($jobs::bigint[], $on_jobs::bigint[]) AS w(job, on_job)
)
UPDATE jobs j SET run_at = 'infinity' WHERE j.id = ANY ($jobs::bigint[]);
