-- The statements of the lease queue (src/api/queue.rs), one per name. They run with the search
-- path pinned to pgjobs, pg_catalog. Every transition names the state it expects (and, for a
-- worker, its lease token) in the WHERE clause of the statement that makes it, so two
-- transitions racing for one job serialise on its row lock and the loser finds its condition
-- false. Lease times use statement_timestamp(): a worker that heartbeats from a long transaction
-- still renews from the time of the call, not from when its transaction began.

-- name: add_one(owner oid, task text, payload jsonb, queue text, priority integer,
--               run_at timestamptz, max_attempts integer, backoff interval, max_backoff interval,
--               lease interval, concurrency_key text)
-- Adds one job without a key for $owner, its fields given (defaults filled in). A row of VALUES:
-- the set form below costs a quarter more for one job (its projection of sets and subquery, set up
-- on every call). Returns its id, who may claim it, its queue, whether it is ready now and its
-- place in the claim order (priority, run_at).
INSERT INTO jobs (id, owner, claimable_by, task, queue, priority, run_at, max_attempts, backoff,
                  max_backoff, lease, payload, due_at, concurrency_key)
VALUES (nextval('jobs_id_seq'::regclass), $owner,
        CASE WHEN _reserved_queue($queue) THEN _extension_claimant() ELSE $owner END,
        $task, $queue, $priority, coalesce($run_at, statement_timestamp()), $max_attempts,
        $backoff, $max_backoff, $lease, $payload, coalesce($run_at, statement_timestamp()),
        $concurrency_key)
RETURNING id, claimable_by, queue::text, run_at <= statement_timestamp(), priority, run_at;

-- name: add(owner oid, task text[], payload jsonb[], queue text[], priority integer[],
--           run_at timestamptz[], max_attempts integer[], backoff interval[],
--           max_backoff interval[], lease interval[], concurrency_key text[])
-- Adds jobs without keys for $owner; the other parameters are the columns of the batch, defaults
-- filled in. The arrays are unnested in the select list, in lockstep (they are of one length),
-- which streams their rows: unnest in FROM would first copy every row into a tuple store. Returns
-- each job's id (ids are drawn in the batch's order), who may claim it, its queue, whether it is
-- ready now and its place in the claim order (priority, run_at).
INSERT INTO jobs (id, owner, claimable_by, task, queue, priority, run_at, max_attempts, backoff,
                  max_backoff, lease, payload, due_at, concurrency_key)
SELECT nextval('jobs_id_seq'::regclass), $owner,
       CASE WHEN _reserved_queue(u.queue) THEN _extension_claimant() ELSE $owner END,
       u.task, u.queue, u.priority, coalesce(u.run_at, statement_timestamp()), u.max_attempts,
       u.backoff, u.max_backoff, u.lease, u.payload, coalesce(u.run_at, statement_timestamp()),
       u.concurrency_key
FROM (SELECT unnest($task::text[]) AS task, unnest($payload::jsonb[]) AS payload,
             unnest($queue::text[]) AS queue, unnest($priority::integer[]) AS priority,
             unnest($run_at::timestamptz[]) AS run_at,
             unnest($max_attempts::integer[]) AS max_attempts,
             unnest($backoff::interval[]) AS backoff,
             unnest($max_backoff::interval[]) AS max_backoff, unnest($lease::interval[]) AS lease,
             unnest($concurrency_key::text[]) AS concurrency_key) u
RETURNING id, claimable_by, queue::text, run_at <= statement_timestamp(), priority, run_at;

-- name: add_keyed(owner oid, task text[], payload jsonb[], queue text[], priority integer[],
--                 run_at timestamptz[], max_attempts integer[], backoff interval[],
--                 max_backoff interval[], lease interval[], key text[], on_conflict text[],
--                 key_window interval[], concurrency_key text[])
-- As add, for a batch where some jobs have keys ($key, with rules $on_conflict and windows
-- $key_window). One statement: the keys first, whose primary key decides which of two concurrent
-- adds gets a key, then the jobs whose keys were free (or that have none). A debounced job is due
-- its window from now, and keeps the rule replace; a throttled one keeps skip, and its key is free
-- again its window from now (free_expired_keys). Returns each job of the batch in its order: its
-- id, who may claim it, its queue, whether it is ready now and its place in the claim order
-- (priority, run_at), or nulls where its key was taken.
WITH given AS (
    SELECT u.*, nextval('jobs_id_seq'::regclass) AS id,
           coalesce(u.run_at, statement_timestamp()
                    + CASE WHEN u.on_conflict = 'debounce' THEN u.key_window ELSE '0' END) AS due_at
    FROM unnest($task::text[], $payload::jsonb[], $queue::text[], $priority::integer[],
                $run_at::timestamptz[], $max_attempts::integer[], $backoff::interval[],
                $max_backoff::interval[], $lease::interval[], $key::text[], $on_conflict::text[],
                $key_window::interval[], $concurrency_key::text[])
         WITH ORDINALITY AS u(task, payload, queue, priority, run_at, max_attempts, backoff,
                              max_backoff, lease, key, on_conflict, key_window, concurrency_key, ord)
), claimed AS (
    INSERT INTO job_keys (owner, idempotency_key, job_id, due_at, free_at)
    SELECT $owner, g.key, g.id, g.due_at,
           CASE WHEN g.on_conflict = 'throttle' THEN statement_timestamp() + g.key_window END
    FROM given g WHERE g.key IS NOT NULL ORDER BY g.ord
    ON CONFLICT DO NOTHING
    RETURNING job_id
), new_jobs AS (
    INSERT INTO jobs (id, owner, claimable_by, task, queue, priority, run_at, max_attempts,
                      backoff, max_backoff, lease, payload, idempotency_key, key_rule, due_at,
                      concurrency_key)
    SELECT g.id, $owner,
           CASE WHEN _reserved_queue(g.queue) THEN _extension_claimant() ELSE $owner END,
           g.task, g.queue, g.priority, g.due_at, g.max_attempts, g.backoff, g.max_backoff,
           g.lease, g.payload, g.key,
           CASE g.on_conflict WHEN 'debounce' THEN 'replace' WHEN 'throttle' THEN 'skip'
                              ELSE g.on_conflict END::key_rule,
           g.due_at, g.concurrency_key
    FROM given g
    WHERE g.key IS NULL OR g.id IN (SELECT c.job_id FROM claimed c)
    RETURNING jobs.id, jobs.claimable_by, jobs.queue::text, jobs.run_at <= statement_timestamp() AS ready,
              jobs.priority, jobs.run_at
)
SELECT n.id, n.claimable_by, n.queue, n.ready, n.priority, n.run_at
FROM given g LEFT JOIN new_jobs n ON n.id = g.id
ORDER BY g.ord;

-- name: add_keyed_one(owner oid, task text, payload jsonb, queue text, priority integer,
--                     run_at timestamptz, max_attempts integer, backoff interval,
--                     max_backoff interval, lease interval, key text, on_conflict text,
--                     key_window interval, concurrency_key text)
-- As add_keyed, for one job with a key (a batch_post, a jobs_add with a key): its values as
-- parameters, not arrays: add_keyed's unnest, ordering and join, set up on every call, cost
-- two fifths of a keyed add of one job. Returns the job as add_keyed does, or no row where its
-- key was taken.
WITH claimed AS (
    INSERT INTO job_keys (owner, idempotency_key, job_id, due_at, free_at)
    VALUES ($owner, $key, nextval('jobs_id_seq'::regclass),
            coalesce($run_at, statement_timestamp()
                     + CASE WHEN $on_conflict = 'debounce' THEN $key_window ELSE '0' END),
            CASE WHEN $on_conflict = 'throttle' THEN statement_timestamp() + $key_window END)
    ON CONFLICT DO NOTHING
    RETURNING job_id, due_at
)
INSERT INTO jobs (id, owner, claimable_by, task, queue, priority, run_at, max_attempts, backoff,
                  max_backoff, lease, payload, idempotency_key, key_rule, due_at, concurrency_key)
SELECT c.job_id, $owner,
       CASE WHEN _reserved_queue($queue) THEN _extension_claimant() ELSE $owner END,
       $task, $queue, $priority, c.due_at, $max_attempts, $backoff, $max_backoff, $lease,
       $payload, $key,
       CASE $on_conflict WHEN 'debounce' THEN 'replace' WHEN 'throttle' THEN 'skip'
                         ELSE $on_conflict END::key_rule,
       c.due_at, $concurrency_key
FROM claimed c
RETURNING id, claimable_by, queue::text, run_at <= statement_timestamp(), priority, run_at;

-- name: key_holders(owner oid, keys text[])
-- The jobs holding $owner's keys $keys. Run after an add found keys taken: the add could not see
-- a holder that committed while it waited on the key; this statement, with a new snapshot, can.
SELECT k.idempotency_key, k.job_id
FROM job_keys k
WHERE k.owner = $owner AND k.idempotency_key = ANY ($keys::text[]);

-- name: free_expired_keys(owner oid, keys text[])
-- $owner's throttled keys among $keys whose windows have passed: free for the add that follows.
DELETE FROM job_keys k
WHERE k.owner = $owner AND k.idempotency_key = ANY ($keys::text[])
  AND k.free_at <= statement_timestamp();

-- name: replace(holder bigint, owner oid, task text, payload jsonb, queue text, priority integer,
--               run_at timestamptz, max_attempts integer, backoff interval, max_backoff interval,
--               lease interval, key_window interval, concurrency_key text)
-- The `replace` and `debounce` rules: the job $holder of $owner (it holds the key), if still
-- waiting, takes the new work, due at $run_at, else $key_window (a debounce's window) from now,
-- else now, with the new $concurrency_key; settings left out keep their values.
UPDATE jobs j
SET task = $task, payload = $payload, queue = $queue, priority = $priority,
    concurrency_key = $concurrency_key,
    run_at = coalesce($run_at, statement_timestamp() + $key_window, statement_timestamp()),
    max_attempts = coalesce($max_attempts, j.max_attempts), backoff = coalesce($backoff, j.backoff),
    max_backoff = coalesce($max_backoff, j.max_backoff), lease = coalesce($lease, j.lease),
    last_update = statement_timestamp()
WHERE j.id = $holder AND j.status = 'created' AND j.owner = $owner
RETURNING j.id;

-- name: replace_taken(holder bigint, owner oid, key text, task text, payload jsonb, queue text,
--                     priority integer, run_at timestamptz, max_attempts integer,
--                     backoff interval, max_backoff interval, lease interval, on_conflict text,
--                     key_window interval, concurrency_key text)
-- The `replace` and `debounce` rules where job $holder of $owner, holding key $key, is not
-- waiting: it has started, or it has finished and its key was left (a skip key, or a replace key
-- whose hand-over below rolled back while the job finished). The new work (its fields, defaults
-- filled in; rule $on_conflict, window $key_window) becomes a job of its own, and takes the key
-- over, so that the next add replaces it while it waits (graphile-worker's behaviour; the work was
-- dropped before). A started holder runs on, and its finish leaves the key alone, since it no
-- longer names it; that finish passes over a key row this statement holds rather than wait for the
-- add's transaction (free_replaced_keys). Not for the extension's queues, whose jobs replace only
-- a waiting job. Returns the new job as add does; nothing where the key no longer names the
-- holder, or the holder waits again (the caller adds once more: the key is free, or has a new
-- holder).
WITH moved AS (
    UPDATE job_keys k
    SET job_id = nextval('jobs_id_seq'::regclass),
        due_at = coalesce($run_at, statement_timestamp() + coalesce($key_window, '0')), free_at = NULL
    WHERE k.owner = $owner AND k.idempotency_key = $key AND k.job_id = $holder
      AND NOT EXISTS (SELECT FROM jobs h WHERE h.id = $holder AND h.status = 'created')
      AND NOT _reserved_queue($queue)
    RETURNING k.job_id, k.due_at
)
INSERT INTO jobs (id, owner, claimable_by, task, queue, priority, run_at, max_attempts, backoff,
                  max_backoff, lease, payload, idempotency_key, key_rule, due_at, concurrency_key)
SELECT m.job_id, $owner, $owner, $task, $queue, $priority, m.due_at, $max_attempts, $backoff,
       $max_backoff, $lease, $payload, $key,
       CASE $on_conflict WHEN 'debounce' THEN 'replace' ELSE $on_conflict END::key_rule, m.due_at,
       $concurrency_key
FROM moved m
RETURNING id, claimable_by, queue::text, run_at <= statement_timestamp(), priority, run_at;

-- name: expired_leases
-- One scan of jobs (no index names locked_until, see sql/030_queue.sql): the expired leases to
-- requeue, those to finish (their last attempt used, or aborted), and the earliest lease left.
SELECT array_agg(j.id) FILTER (WHERE j.locked_until < statement_timestamp()
                                 AND j.status = 'started' AND j.attempt < j.max_attempts),
       array_agg(j.id) FILTER (WHERE j.locked_until < statement_timestamp()
                                 AND (j.status = 'aborted' OR j.attempt >= j.max_attempts)),
       min(j.locked_until) FILTER (WHERE j.locked_until >= statement_timestamp())
FROM jobs j
WHERE j.locked_until IS NOT NULL;

-- name: requeue_expired(ids bigint[])
-- The jobs $ids whose leases ran out, back to waiting with the lease's end in their log (log; a
-- job whose log can take no more, past jsonb's 256 MB, is requeued without), unless someone holds
-- their rows; how many, the ready signals of their queues, and the batch jobs among them.
WITH requeue AS (
    UPDATE jobs j
    SET status = 'created', lease_token = NULL, locked_until = NULL, progress = NULL,
        run_at = statement_timestamp()
-- log {
        , errors = j.errors || jsonb_build_object(
            'attempt', j.attempt, 'at', statement_timestamp(),
            'error', _lease_expired(j.locked_by))
-- } log
    WHERE j.ctid = ANY (ARRAY(
        SELECT e.ctid FROM jobs e
        WHERE e.id = ANY ($ids) AND e.status = 'started'
          AND e.locked_until < statement_timestamp() AND e.attempt < e.max_attempts
        FOR UPDATE SKIP LOCKED))
    RETURNING j.id, j.claimable_by, j.queue
)
SELECT count(*)::integer, array_agg(DISTINCT _ready_signal(r.claimable_by, r.queue)),
       array_agg(r.id) FILTER (WHERE _is_batch_queue(r.queue))
FROM requeue r;

-- name: notify_signals(signals text[])
SELECT pg_notify('pgjobs_ready', q) FROM unnest($signals::text[]) q;

-- name: finish_expired(ids bigint[])
-- The jobs $ids whose leases ran out on their last attempt (or while aborted), finished, unless
-- someone holds their rows; how many.
SELECT coalesce(_finish(array_agg(e.job_id), array_agg(e.lease_token), '{started,aborted}',
                        'failed', NULL, NULL, array_agg(_lease_expired(e.locked_by))), 0)
FROM (SELECT j.id AS job_id, j.lease_token, j.locked_by
      FROM jobs j
      WHERE j.id = ANY ($ids) AND j.status IN ('started', 'aborted')
        AND j.locked_until < statement_timestamp()
        AND (j.status = 'aborted' OR j.attempt >= j.max_attempts)
      FOR UPDATE SKIP LOCKED) e;

-- name: claim(claimant oid, queue text, n integer, lease interval, worker text,
--             after_priority integer, after_run_at timestamptz, after_id bigint)
-- Claims up to $n ready jobs claimable by $claimant in $queue for $worker, leased for $lease (or
-- each job's lease), of those past ($after_priority, $after_run_at, $after_id) in claim order
-- (src/api/heads.rs: where a claim may start): the first ones in the ready index from there,
-- locked as they are read, then updated by ctid, so that no plan can turn this into a scan of the
-- table. The ready index holds the leased jobs too: the status filter passes over them. A batch
-- job's progress marks it taken (see jobs_batch_untallied, sql/085_batch.sql); a plain job's stays
-- null, so its claim is HOT (but for a job whose failed attempt left progress, which the claim
-- clears: see progress).
-- Only for a queue neither paused nor limited (src/api/flow.rs: states; a limited one's claims are
-- claim_limited's). Returns each job and its place in the claim order (priority, run_at).
UPDATE jobs j
SET status = 'started', attempt = j.attempt + 1, lease_token = _lease_token(),
    locked_by = $worker, begin_time = statement_timestamp(), claimed_lease = coalesce($lease::interval, j.lease),
    locked_until = statement_timestamp() + coalesce($lease::interval, j.lease),
    progress = CASE WHEN j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue) THEN '{}'::jsonb END
WHERE j.ctid = ANY (ARRAY(
    SELECT c.ctid FROM jobs c
    WHERE c.status = 'created' AND c.claimable_by = $claimant AND hashtextextended(c.queue, 0) = hashtextextended($queue::text, 0)
      AND c.queue = $queue::text
      AND (c.priority, c.run_at, c.id) > ($after_priority::integer, $after_run_at::timestamptz, $after_id::bigint)
      AND c.run_at <= statement_timestamp()
    ORDER BY c.priority, c.run_at, c.id
    LIMIT $n
    FOR UPDATE SKIP LOCKED))
RETURNING j.id, j.attempt, j.lease_token, j.task::text, j.payload, j.locked_until, j.priority, j.run_at;

-- name: free_slots(claimant oid, queue text, n integer)
-- Up to $n of the slots of $claimant's $queue, which has a concurrency limit, that look free,
-- locked (SKIP LOCKED: taken by no other claim until this one's transaction ends). They only look
-- free: a slot another claim took and committed after this statement's snapshot is locked here
-- at its new version and passes the check against the old snapshot. claim_limited, with a
-- snapshot taken after these locks, checks again. (Which limits a queue has, and so which of
-- claim_limited's forms runs, its backend's cache says: src/api/flow.rs, states.)
SELECT ARRAY(SELECT s.slot FROM queue_slots s
             WHERE s.owner = $claimant AND s.queue = $queue::text
               AND NOT EXISTS (SELECT FROM jobs h WHERE h.id = s.job_id AND h.lease_token = s.lease_token)
             ORDER BY s.slot
             LIMIT $n
             FOR UPDATE SKIP LOCKED);

-- name: next_rate_token(claimant oid, queue text)
-- When the first of $claimant's $queue's rate tokens is free again, if none is free now (null
-- otherwise): a claim that found the rate spent notes that time, so that the queue's workers are
-- woken then (src/api/due.rs), as when a job due later comes due.
SELECT CASE WHEN bool_and(t.taken_at > statement_timestamp() - r.per) THEN min(t.taken_at) + min(r.per) END
FROM queue_rate_tokens t JOIN queue_rates r ON r.owner = t.owner AND r.queue = t.queue
WHERE t.owner = $claimant AND t.queue = $queue::text;

-- name: next_key_rate_token(claimant oid, queue text, key_max integer, key_ordered boolean,
--                           key_rate_claims integer, key_rate_per interval)
-- As next_rate_token, for the rate limits per key: the earliest time one of $claimant's $queue's
-- keys that has a job due now and every rate token taken in its window has a token free again
-- (null if no key waits so). Each key's limits are found by its prefixes (prefixes) or given
-- (every_key), as in key_candidates. A claim runs it only when it came back short. It walks the
-- keys that have jobs as key_candidates does (_key_after) and reads those keys' tokens only: the
-- queue's tokens are rows of every key claimed in its window (up to a day), and reading them all
-- made an idle worker's poll of a queue with 50,000 such keys take 70 ms.
WITH RECURSIVE keys(k) AS (
    SELECT n.k FROM _key_after($claimant, $queue::text, '') n
    UNION ALL
    SELECT n.k FROM keys s CROSS JOIN LATERAL _key_after($claimant, $queue::text, s.k) n
    WHERE s.k IS NOT NULL
)
SELECT min(w.free_at)
FROM keys s
-- prefixes {
CROSS JOIN LATERAL _key_limits($claimant, $queue::text, s.k) l
-- } prefixes
-- every_key {
CROSS JOIN _every_key_limits($claimant, $queue::text, $key_max, $key_ordered,
                             $key_rate_claims, $key_rate_per) l
-- } every_key
CROSS JOIN LATERAL (
    SELECT min(t.taken_at) + l.rate_per AS free_at FROM queue_key_tokens t
    WHERE t.owner = $claimant AND t.queue = $queue::text AND t.concurrency_key = s.k
      AND t.taken_at > statement_timestamp() - l.rate_per
    HAVING count(*) >= l.rate_claims) w
WHERE s.k IS NOT NULL AND l.rate_claims IS NOT NULL
  AND EXISTS (SELECT FROM jobs j
              WHERE j.claimable_by = $claimant AND hashtextextended(j.queue, 0) = hashtextextended($queue::text, 0)
                AND j.queue = $queue::text AND j.concurrency_key = s.k
                AND j.status = 'created' AND j.run_at <= statement_timestamp());

-- name: key_candidates(claimant oid, queue text, n integer, cursor text, key_max integer,
--                      key_ordered boolean, key_rate_claims integer, key_rate_per interval)
-- The concurrency keys of $claimant's key-limited $queue a claim of $n jobs looks at: up to $n + 2
-- keys with a job it may take (_key_head; two more, for keys whose jobs another claim takes
-- meanwhile), found one index probe per key (_key_after), the keys after $cursor (the last key
-- the previous claim looked at) first, then from the start up to $cursor (a round across the
-- keys, so that a key with a million jobs takes one turn in a claim as a key with one does), each
-- with its gate taken (SKIP LOCKED: a key whose gate another claim holds is passed over, and the
-- scan goes on, so that claims at once take different keys rather than the same first ones), in
-- that order.
-- Those keys only looked claimable: claim_limited, with a snapshot taken after the gates, checks
-- them again. Each key's limits are found by its prefixes (prefixes) or, where the queue's only
-- key limit is that of every key, given by the claim's backend (every_key: flow.rs, Limits).
WITH RECURSIVE after_cursor(k) AS (
    SELECT n.k FROM _key_after($claimant, $queue::text, $cursor) n
    UNION ALL
    SELECT n.k FROM after_cursor a CROSS JOIN LATERAL _key_after($claimant, $queue::text, a.k) n
    WHERE a.k IS NOT NULL
), up_to_cursor(k) AS (
    SELECT n.k FROM _key_after($claimant, $queue::text, '') n
    UNION ALL
    SELECT n.k FROM up_to_cursor u CROSS JOIN LATERAL _key_after($claimant, $queue::text, u.k) n
    WHERE u.k <= $cursor
), looked AS (
    -- The recursions are read lazily, so the probes stop at the LIMIT.
    SELECT c.k
    FROM (SELECT a.k FROM after_cursor a WHERE a.k IS NOT NULL
          UNION ALL
          SELECT u.k FROM up_to_cursor u WHERE u.k <= $cursor) c
    -- A job it may take, and then its gate, unless another claim holds it (the scan goes on past
    -- those keys). The gate's condition names the job found, so that it is evaluated for that job
    -- only: alone, it was planned to run first, and took the gates of keys with nothing to take.
    -- A key under no limit (it starts with no prefix of the queue's) has a null row of limits.
    WHERE EXISTS (SELECT FROM (SELECT) one
-- prefixes {
                  LEFT JOIN LATERAL _key_limits($claimant, $queue::text, c.k) l ON true
-- } prefixes
-- every_key {
                  CROSS JOIN _every_key_limits($claimant, $queue::text, $key_max, $key_ordered,
                                               $key_rate_claims, $key_rate_per) l
-- } every_key
                  CROSS JOIN LATERAL _key_head($claimant, $queue::text, c.k, l) h
                  WHERE EXISTS (SELECT FROM queue_key_gates t
                                WHERE t.owner = $claimant AND t.queue = $queue::text AND t.gate = _key_gate(c.k)
                                  AND h.tid IS NOT NULL
                                FOR UPDATE SKIP LOCKED))
    LIMIT $n + 2
)
SELECT coalesce(array_agg(l.k ORDER BY l.k <= $cursor, l.k), '{}') FROM looked l;

-- name: claim_limited(claimant oid, queue text, n integer, lease interval, worker text,
--                     after_priority integer, after_run_at timestamptz, after_id bigint,
--                     slots integer[], keys text[], key_max integer, key_ordered boolean,
--                     key_rate_claims integer, key_rate_per interval)
-- As claim, in a limited queue. With a concurrency limit, a job takes one of $slots (locked by
-- free_slots; null without one): those whose job no longer holds the lease they name, checked
-- under this statement's snapshot, which sees every claim of them that committed (they are locked,
-- so none commits now); each slot taken names its job and the job's new lease token, and is free
-- again once that job no longer holds it. With a rate limit, a job takes a token last taken at
-- least the limit's period ago (SKIP LOCKED, here: whether a token is free is in its own row,
-- which a claim that committed meanwhile is read at), and the token keeps this statement's time.
-- With a key limit, $keys are the keys whose gates key_candidates took: the jobs are the first of
-- each such key that may go (_key_head, under this statement's snapshot, which sees every claim of
-- those keys that committed), and, when fewer keys than $n were found, jobs without a key among
-- the first 100 ready in claim order (a walk that passes over the keyed ones, so only then); a job
-- with a key takes a free slot of its key (queue_key_slots) as above, and a token of its key free
-- in its window (queue_key_tokens) where keys have a rate limit. Null without one. Its parts
-- (slots, rates, keyed, unkeyed, and key_rates of keyed) are left out where the queue has no such
-- limit (CLAIM_LIMITED in src/api/queue.rs): each part is set up, and its data-modifying CTE run,
-- on every call, whether or not it has rows (the key rates' INSERT, 5 % of a claim of 10 keys).
-- A key's limits are found by its prefixes (prefixes), or, where the queue's only key limit is
-- that of every key, given as $key_max, $key_ordered, $key_rate_claims and $key_rate_per
-- (every_key), as key_candidates takes them.
WITH
-- slots {
free AS (
    SELECT s.ctid AS sid, row_number() OVER (ORDER BY s.slot) AS n FROM queue_slots s
    WHERE s.owner = $claimant AND s.queue = $queue::text AND s.slot = ANY ($slots::integer[])
      AND NOT EXISTS (SELECT FROM jobs h WHERE h.id = s.job_id AND h.lease_token = s.lease_token)
),
-- } slots
-- rates {
tokens AS (
    SELECT t.tid, row_number() OVER (ORDER BY t.taken_at, t.token) AS n FROM (
        SELECT t.ctid AS tid, t.taken_at, t.token FROM queue_rate_tokens t
        JOIN queue_rates r ON r.owner = t.owner AND r.queue = t.queue
        WHERE t.owner = $claimant AND t.queue = $queue::text AND t.taken_at <= statement_timestamp() - r.per
        ORDER BY t.taken_at
        LIMIT $n
        FOR UPDATE OF t SKIP LOCKED) t
),
-- } rates
room AS (
    SELECT least($n
-- slots {
                 , (SELECT count(*) FROM free)
-- } slots
-- rates {
                 , CASE WHEN EXISTS (SELECT FROM queue_rates r WHERE r.owner = $claimant AND r.queue = $queue::text)
                        THEN (SELECT count(*) FROM tokens) ELSE $n END
-- } rates
                 ) AS n
),
-- unkeyed {
in_order AS (
    SELECT c.ctid AS tid, c.priority, c.run_at, c.id FROM jobs c
    WHERE c.status = 'created' AND c.claimable_by = $claimant AND hashtextextended(c.queue, 0) = hashtextextended($queue::text, 0)
      AND c.queue = $queue::text
      AND (c.priority, c.run_at, c.id) > ($after_priority::integer, $after_run_at::timestamptz, $after_id::bigint)
      AND c.run_at <= statement_timestamp()
      AND NOT EXISTS (SELECT FROM queue_pauses p WHERE p.owner = $claimant AND p.queue = $queue::text)
    ORDER BY c.priority, c.run_at, c.id
    LIMIT (SELECT r.n FROM room r)
    FOR UPDATE SKIP LOCKED
),
-- } unkeyed
-- keyed {
by_key AS (
    SELECT c.ctid AS tid, c.priority, c.run_at, c.id FROM jobs c
    WHERE c.ctid = ANY (ARRAY(
            SELECT h.tid
            FROM unnest($keys::text[]) k(k)
-- prefixes {
            LEFT JOIN LATERAL _key_limits($claimant, $queue::text, k.k) l ON true
-- } prefixes
-- every_key {
            CROSS JOIN _every_key_limits($claimant, $queue::text, $key_max, $key_ordered,
                                         $key_rate_claims, $key_rate_per) l
-- } every_key
            CROSS JOIN LATERAL _key_head($claimant, $queue::text, k.k, l) h
            UNION ALL
            SELECT w.tid FROM (
                SELECT u.ctid AS tid, u.concurrency_key FROM jobs u
                WHERE cardinality($keys::text[]) < $n
                  AND u.status = 'created' AND u.claimable_by = $claimant
                  AND hashtextextended(u.queue, 0) = hashtextextended($queue::text, 0) AND u.queue = $queue::text
                  AND u.run_at <= statement_timestamp()
                ORDER BY u.priority, u.run_at, u.id
                LIMIT 100) w
            WHERE w.concurrency_key IS NULL))
      AND c.status = 'created' AND c.claimable_by = $claimant AND c.queue = $queue::text
      AND c.run_at <= statement_timestamp()
      AND NOT EXISTS (SELECT FROM queue_pauses p WHERE p.owner = $claimant AND p.queue = $queue::text)
    ORDER BY c.priority, c.run_at, c.id
    LIMIT (SELECT r.n FROM room r)
    FOR UPDATE SKIP LOCKED
),
-- } keyed
claimed AS (
    UPDATE jobs j
    SET status = 'started', attempt = j.attempt + 1, lease_token = _lease_token(),
        locked_by = $worker, begin_time = statement_timestamp(), claimed_lease = coalesce($lease::interval, j.lease),
        locked_until = statement_timestamp() + coalesce($lease::interval, j.lease), progress = NULL
    WHERE j.ctid = ANY (ARRAY(
        SELECT c.tid FROM (
-- unkeyed {
            SELECT * FROM in_order
-- } unkeyed
-- keyed {
            SELECT * FROM by_key
-- } keyed
            ) c
        ORDER BY c.priority, c.run_at, c.id
        LIMIT (SELECT r.n FROM room r)))
    RETURNING j.id, j.attempt, j.lease_token, j.task::text AS task, j.payload, j.locked_until,
              j.priority, j.run_at, j.concurrency_key
)
-- slots {
, taken AS (
    UPDATE queue_slots s SET job_id = c.id, lease_token = c.lease_token
    FROM (SELECT c.id, c.lease_token, row_number() OVER (ORDER BY c.id) AS n FROM claimed c) c
    JOIN free f ON f.n = c.n
    WHERE s.ctid = f.sid
)
-- } slots
-- rates {
, spent AS (
    UPDATE queue_rate_tokens t SET taken_at = statement_timestamp()
    FROM (SELECT row_number() OVER (ORDER BY c.id) AS n FROM claimed c) c
    JOIN tokens k ON k.n = c.n
    WHERE t.ctid = k.tid
)
-- } rates
-- keyed {
, keys_taken AS (
    -- One job per key (by_key): the first slot of its key that is free.
    INSERT INTO queue_key_slots AS s (owner, queue, concurrency_key, slot, job_id, lease_token)
    SELECT $claimant, $queue::text, c.concurrency_key,
           (SELECT min(n) FROM generate_series(1, l.max_per_key) n
            WHERE NOT EXISTS (
                SELECT FROM queue_key_slots h JOIN jobs r ON r.id = h.job_id AND r.lease_token = h.lease_token
                WHERE h.owner = $claimant AND h.queue = $queue::text AND h.concurrency_key = c.concurrency_key
                  AND h.slot = n)),
           c.id, c.lease_token
    FROM claimed c
-- prefixes {
    CROSS JOIN LATERAL _key_limits($claimant, $queue::text, c.concurrency_key) l
-- } prefixes
-- every_key {
    CROSS JOIN _every_key_limits($claimant, $queue::text, $key_max, $key_ordered, $key_rate_claims,
                                 $key_rate_per) l
-- } every_key
    WHERE c.concurrency_key IS NOT NULL AND l.max_per_key IS NOT NULL
    ON CONFLICT (owner, queue, concurrency_key, slot)
    DO UPDATE SET job_id = excluded.job_id, lease_token = excluded.lease_token
)
-- key_rates {
, key_tokens_spent AS (
    -- The first token of its key free in its window.
    INSERT INTO queue_key_tokens AS t (owner, queue, concurrency_key, token, taken_at)
    SELECT $claimant, $queue::text, c.concurrency_key,
           (SELECT min(n) FROM generate_series(1, l.rate_claims) n
            WHERE NOT EXISTS (
                SELECT FROM queue_key_tokens h
                WHERE h.owner = $claimant AND h.queue = $queue::text AND h.concurrency_key = c.concurrency_key
                  AND h.token = n AND h.taken_at > statement_timestamp() - l.rate_per)),
           statement_timestamp()
    FROM claimed c
-- prefixes {
    CROSS JOIN LATERAL _key_limits($claimant, $queue::text, c.concurrency_key) l
-- } prefixes
-- every_key {
    CROSS JOIN _every_key_limits($claimant, $queue::text, $key_max, $key_ordered, $key_rate_claims,
                                 $key_rate_per) l
-- } every_key
    WHERE c.concurrency_key IS NOT NULL AND l.rate_claims IS NOT NULL
    ON CONFLICT (owner, queue, concurrency_key, token) DO UPDATE SET taken_at = excluded.taken_at
)
-- } key_rates
-- } keyed
SELECT c.id, c.attempt, c.lease_token, c.task, c.payload, c.locked_until, c.priority, c.run_at FROM claimed c;

-- name: claim_queues(claimant oid, queues text[], n integer, lease interval, worker text)
-- As claim, from several $queues, each from its start: one index range per queue, read in index
-- order (`queue = ANY (queues)` would make the planner sort every ready job of those queues, which
-- with a million queued is seconds), then the first $n of them all. Only for queues neither paused
-- nor limited, as claim.
WITH candidates AS (
    SELECT c.* FROM unnest($queues::text[]) AS q(queue), LATERAL (
        SELECT j.ctid AS tid, j.priority, j.run_at, j.id FROM jobs j
        WHERE j.status = 'created' AND j.claimable_by = $claimant AND hashtextextended(j.queue, 0) = hashtextextended(q.queue, 0)
          AND j.queue = q.queue
          AND j.run_at <= statement_timestamp()
        ORDER BY j.priority, j.run_at, j.id
        LIMIT $n
        FOR UPDATE SKIP LOCKED) c
)
UPDATE jobs j
SET status = 'started', attempt = j.attempt + 1, lease_token = _lease_token(),
    locked_by = $worker, begin_time = statement_timestamp(), claimed_lease = coalesce($lease::interval, j.lease),
    locked_until = statement_timestamp() + coalesce($lease::interval, j.lease),
    progress = CASE WHEN j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue) THEN '{}'::jsonb END
WHERE j.ctid = ANY (ARRAY(SELECT c.tid FROM candidates c ORDER BY c.priority, c.run_at, c.id LIMIT $n))
RETURNING j.id, j.attempt, j.lease_token, j.task::text, j.payload, j.locked_until, j.priority, j.run_at;

-- name: finish(ids bigint[], tokens uuid[], statuses text[], outcome text, owner oid,
--              results jsonb[], errors text[])
-- Moves each given job ($ids, with lease token $tokens unless $tokens is null) out of jobs where
-- it is in one of the $statuses and owned by $owner (any owner when null), in one statement, and
-- into job_history unless its owner's rule for its queue (queue_history_rules, read by its primary
-- key) keeps no job that ended so: there a completion is the DELETE alone. A job ends as $outcome,
-- but a job aborted while leased finishes as aborted. $results and $errors are each job's result
-- and error: an error joins the job's log of errors and a failed job's result. A failed job's
-- queue may have a dead-letter queue (queue_dead_letters, sql/040_history.sql): a copy of the job
-- is added there. Returns every job finished, kept or not, in no order, with its status, whether
-- it is completed or failed (counted), who could claim it and its queue; whether it completed with
-- jobs waiting for it, whether it was itself waiting for dependencies, and whether it ended
-- otherwise with jobs waiting for it (src/api/dependencies.rs); its owner and key where an add may
-- replace it (the key to free: free_replaced_keys); and its copy's id, queue, priority and run_at
-- where it has one (nulls elsewhere). Completions run it without the copies (COMPLETE in
-- src/api/queue.rs): a data-modifying CTE is set up on every call, rows or not, and the copies'
-- were a quarter of a completion's work; and every finish runs it without the rules where no
-- identity has set one (history::any_rule): their probes, one a job, were 3 % of a claim and a
-- completion of 10. The ids are also a condition of their own (`j.id = ANY ($ids)`), which only
-- the primary key serves: with the statistics of an empty table (what VACUUM leaves under a long
-- snapshot) the join alone was planned as a read of the whole table (regress queue_probes).
WITH given AS (
    SELECT * FROM unnest($ids::bigint[], $tokens::uuid[], $results::jsonb[], $errors::text[]) AS g(job_id, token, result, error)
), j AS (
    DELETE FROM jobs j USING given g
    WHERE j.id = ANY ($ids) AND j.id = g.job_id AND j.status = ANY ($statuses::job_status[])
      AND ($tokens::uuid[] IS NULL OR j.lease_token = g.token) AND ($owner::oid IS NULL OR j.owner = $owner)
    RETURNING j.id, j.owner, j.claimable_by, j.task, j.queue, j.priority, j.run_at, j.max_attempts,
              j.backoff, j.max_backoff, j.lease, j.payload, j.idempotency_key, j.key_rule,
              j.concurrency_key, j.due_at, j.start_time, j.begin_time, j.name, j.description, j.link,
              j.listed, j.attempt, j.locked_by, j.depends_on, j.waited_on, g.result, g.error,
              CASE WHEN j.status = 'aborted' THEN 'aborted' ELSE $outcome::job_status END AS final,
              CASE WHEN g.error IS NULL THEN j.errors
                   ELSE j.errors || jsonb_build_object('attempt', j.attempt,
                                                       'at', statement_timestamp(), 'error', g.error) END
                  AS errors_now
), kept AS (
    INSERT INTO job_history (
        id, owner, status, task, queue, priority, payload, result, errors, attempts,
        max_attempts, idempotency_key, key_rule, locked_by, due_at, start_time, begin_time,
        end_time, name, description, link, listed, backoff, max_backoff, lease, concurrency_key,
        depends_on)
    SELECT j.id, j.owner, j.final, j.task, j.queue, j.priority, j.payload,
           CASE WHEN j.final = 'failed' AND j.error IS NOT NULL
                THEN coalesce(j.result, '{}') || jsonb_build_object('error', j.error) ELSE j.result END,
           j.errors_now, j.attempt, j.max_attempts, j.idempotency_key, j.key_rule, j.locked_by,
           j.due_at, j.start_time, j.begin_time, statement_timestamp(), j.name, j.description,
           j.link, j.listed,
           -- What jobs_retry gives a failed or aborted job back.
           CASE WHEN j.final <> 'completed' THEN j.backoff END,
           CASE WHEN j.final <> 'completed' THEN j.max_backoff END,
           CASE WHEN j.final <> 'completed' THEN j.lease END,
           j.concurrency_key, j.depends_on
    FROM j
-- rules {
    WHERE NOT EXISTS (
        SELECT FROM queue_history_rules r
        WHERE r.owner = j.owner AND r.queue = j.queue
          AND (r.keep = 'none' OR (r.keep = 'failures' AND j.final = 'completed')))
-- } rules
-- copies {
), dead_letters AS (
    -- Ids drawn here, once, so that each copy is returned beside the job it copies.
    SELECT j.id AS failed, nextval('jobs_id_seq'::regclass) AS id, d.dead_letter_queue AS queue
    FROM j JOIN queue_dead_letters d ON d.owner = j.owner AND d.queue = j.queue
    WHERE $outcome::job_status = 'failed' AND j.final = 'failed'
), copied AS (
    INSERT INTO jobs (id, owner, claimable_by, task, queue, priority, run_at, max_attempts, backoff,
                      max_backoff, lease, payload, errors, due_at, name, description, link, listed,
                      concurrency_key)
    SELECT d.id, j.owner, j.claimable_by, j.task, d.queue, j.priority, statement_timestamp(),
           j.max_attempts, j.backoff, j.max_backoff, j.lease, j.payload, j.errors_now,
           statement_timestamp(), j.name, j.description, j.link, j.listed, j.concurrency_key
    FROM dead_letters d JOIN j ON j.id = d.failed
-- } copies
)
SELECT j.id, j.final, j.final = 'completed', j.final = 'failed', j.claimable_by, j.queue::text,
       j.final = 'completed' AND j.waited_on, j.run_at = 'infinity',
       j.final <> 'completed' AND j.waited_on,
       j.owner, CASE WHEN j.key_rule = 'replace' THEN j.idempotency_key END
-- copies {
       , d.id, d.queue::text, j.priority, CASE WHEN d.id IS NOT NULL THEN statement_timestamp() END
-- } copies
FROM j
-- copies {
LEFT JOIN dead_letters d ON d.failed = j.id
-- } copies
;

-- name: free_replaced_keys(owners oid[], keys text[], ids bigint[])
-- The keys of finished jobs whose rule is replace: job $ids[i] of $owners[i] held key $keys[i]. A
-- key row locked by an add is being handed to a new job (replace_taken): passed over, so that no
-- finish (the launcher's rescue among them) ever waits for an add's transaction. Run after finish
-- in its transaction, only where a job had such a key: most completions set up no statement for
-- keys.
DELETE FROM job_keys k
WHERE k.ctid = ANY (ARRAY(
    SELECT f.ctid
    FROM unnest($owners::oid[], $keys::text[], $ids::bigint[]) AS g(owner, idempotency_key, job_id)
    JOIN job_keys f ON f.owner = g.owner AND f.idempotency_key = g.idempotency_key AND f.job_id = g.job_id
    FOR UPDATE OF f SKIP LOCKED));

-- name: retry(ids bigint[], tokens uuid[], errors text[], owner oid)
-- Failed attempts of jobs $ids (with lease tokens $tokens and errors $errors, of $owner or any
-- when null) with attempts left: back to waiting, due after the backoff. Returns the jobs retried,
-- with who may claim them, their queues and their places in the claim order (priority, run_at),
-- and their owners. The ids probe the primary key, as in finish.
WITH given AS (
    SELECT * FROM unnest($ids::bigint[], $tokens::uuid[], $errors::text[]) AS g(job_id, token, error)
)
UPDATE jobs j
SET status = 'created', lease_token = NULL, locked_until = NULL,
    run_at = statement_timestamp() + make_interval(secs => retry_delay_seconds(
        j.attempt, extract(epoch FROM j.backoff)::float8, extract(epoch FROM j.max_backoff)::float8)),
    errors = j.errors || jsonb_build_object('attempt', j.attempt, 'at', statement_timestamp(), 'error', g.error)
FROM given g
WHERE j.id = ANY ($ids) AND j.id = g.job_id AND j.lease_token = g.token
  AND j.status = 'started' AND j.attempt < j.max_attempts AND ($owner::oid IS NULL OR j.owner = $owner)
RETURNING j.id, j.claimable_by, j.queue::text, j.priority, j.run_at, j.owner;

-- name: release(ids bigint[], tokens uuid[], owner oid)
-- Gives leased jobs $ids (with lease tokens $tokens, of $owner or any when null) back unworked, as
-- a worker that stops does: waiting again and due now, the attempt not counted, nothing logged.
-- The jobs the extension runs (SQL and batch jobs) have hand-backs of their own. Returns the jobs
-- given back, with their queues to wake. The ids probe the primary key, as in finish.
WITH given AS (
    SELECT * FROM unnest($ids::bigint[], $tokens::uuid[]) AS g(job_id, token)
)
UPDATE jobs j
SET status = 'created', lease_token = NULL, locked_until = NULL, claimed_lease = NULL,
    attempt = j.attempt - 1, run_at = statement_timestamp(), progress = NULL
FROM given g
WHERE j.id = ANY ($ids) AND j.id = g.job_id AND j.lease_token = g.token AND j.status = 'started'
  AND j.claimable_by <> _extension_claimant() AND ($owner::oid IS NULL OR j.owner = $owner)
RETURNING j.id, j.claimable_by, j.queue::text;

-- name: snooze(id bigint, token uuid, owner oid, delay interval)
-- Leased job $id (lease token $token, of $owner or any when null) back to waiting until $delay
-- from now, as a release gives it back but later: the attempt not counted, nothing logged. Not the
-- extension's own jobs (SQL and batch jobs). Returns the job, who may claim it, its queue and its
-- place in the claim order (priority, run_at).
UPDATE jobs j
SET status = 'created', lease_token = NULL, locked_until = NULL, claimed_lease = NULL,
    attempt = j.attempt - 1, run_at = statement_timestamp() + $delay, progress = NULL
WHERE j.id = $id AND j.lease_token = $token AND j.status = 'started'
  AND j.claimable_by <> _extension_claimant() AND ($owner::oid IS NULL OR j.owner = $owner)
RETURNING j.id, j.claimable_by, j.queue::text, j.priority, j.run_at;

-- name: progress(id bigint, token uuid, owner oid, lease interval, progress jsonb)
-- As heartbeat, and the attempt's $progress kept. Not the extension's own jobs, whose progress
-- marks a batch job taken. progress is named by a batch index's predicate, so this update is not
-- HOT, as a heartbeat's is: a call for a person to read, not for every second.
UPDATE jobs j
SET locked_until = CASE WHEN j.status = 'aborted' THEN j.locked_until
                        ELSE statement_timestamp() + coalesce($lease::interval, j.claimed_lease, j.lease) END,
    progress = $progress
WHERE j.id = $id AND j.lease_token = $token AND j.status IN ('started', 'aborted')
  AND j.claimable_by <> _extension_claimant() AND ($owner::oid IS NULL OR j.owner = $owner)
RETURNING j.status::text, j.locked_until;

-- name: heartbeat(id bigint, token uuid, owner oid, lease interval)
-- Renews the lease of job $id held by lease token $token (of $owner, any when null) for $lease (or
-- the lease it was claimed with). An aborted job's lease is not renewed: its worker is told to
-- stop, and one that goes on heartbeating instead loses the job when the lease runs out (the
-- rescue ends it).
UPDATE jobs j
SET locked_until = CASE WHEN j.status = 'aborted' THEN j.locked_until
                        ELSE statement_timestamp() + coalesce($lease::interval, j.claimed_lease, j.lease) END
WHERE j.id = $id AND j.lease_token = $token AND j.status IN ('started', 'aborted')
  AND ($owner::oid IS NULL OR j.owner = $owner)
RETURNING j.status::text, j.locked_until;

-- name: live_job(id bigint, owner oid)
-- Job $id if it is waiting or leased and $owner (any when null) may see it.
SELECT j.status::text, j.lease_token, j.attempt, j.locked_by
FROM jobs j
WHERE j.id = $id AND ($owner::oid IS NULL OR j.owner = $owner);

-- name: lock_live_job(id bigint, owner oid)
-- As live_job (and whether it is a batch job, and whether a compute job's), locked: an abort
-- decides from the locked row, so a failure, a rescue or a completion committing meanwhile is
-- waited for and then seen (a requeued job is aborted at once, a finished one reported as it
-- ended), never mistaken for a job that does not exist.
SELECT j.status::text, j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue),
       j.claimable_by = _extension_claimant() AND j.queue = 'pg_jobs.compute'
FROM jobs j
WHERE j.id = $id AND ($owner::oid IS NULL OR j.owner = $owner)
FOR UPDATE;

-- name: result(id bigint, owner oid)
-- Job $id, live or finished, if $owner (any when null) may see it: its status (waiting, for a job
-- waiting for dependencies, blocked when one of them failed or was aborted), its result, the error
-- of its last failed attempt (or why it is blocked), its attempts, its progress and when it
-- finished.
SELECT s.word, NULL::jsonb, coalesce(s.blocked_by, j.errors -> -1 ->> 'error'), j.attempt,
       j.progress, NULL::timestamptz
FROM jobs j
CROSS JOIN LATERAL _live_status(j.id, j.status, j.run_at) s
WHERE j.id = $id AND ($owner::oid IS NULL OR j.owner = $owner)
UNION ALL
SELECT h.status::text, h.result, h.errors -> -1 ->> 'error', h.attempts, NULL, h.end_time
FROM job_history h
WHERE h.id = $id AND ($owner::oid IS NULL OR h.owner = $owner)
LIMIT 1;

-- name: finished_job(id bigint, owner oid)
-- Job $id if it has finished and $owner (any when null) may see it.
SELECT h.status, h.status::text, h.attempts
FROM job_history h
WHERE h.id = $id AND ($owner::oid IS NULL OR h.owner = $owner);

-- name: abort_leased(id bigint)
-- A leased job's abort: its worker learns it at its next heartbeat; a SQL job is stopped as soon
-- as the abort commits (its statement is cancelled and its transaction rolls back), and if it
-- has not stopped within pg_jobs.cancel_grace, the launcher ends its process.
WITH aborted AS (
    UPDATE jobs j SET status = 'aborted' WHERE j.id = $id
    RETURNING j.id, j.status
), running AS (
    UPDATE job_runs r SET deadline = least(r.deadline, statement_timestamp() + _cancel_grace())
    FROM aborted a
    WHERE r.job_id = a.id AND r.status = 'running'
    RETURNING _cancel_executor_at_commit(r.pid)
)
SELECT a.status FROM aborted a;

-- name: set_history_rule(owner oid, queue text, keep text)
-- The rule of $owner's $queue: which of its finished jobs job_history keeps ($keep).
INSERT INTO queue_history_rules (owner, queue, keep) VALUES ($owner, $queue, $keep::history_keep)
ON CONFLICT (owner, queue) DO UPDATE SET keep = excluded.keep;
