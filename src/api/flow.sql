-- The statements of src/api/flow.rs: what an identity says about when its queues' jobs may be
-- claimed (sql/030_queue.sql: queue_pauses, queue_limits and queue_slots, queue_rates and
-- queue_rate_tokens, queue_key_limits and its gates, slots and tokens).

-- name: pause(owner oid, queue text, paused_by oid)
-- Pauses the owner's queue for role $paused_by, unless it is paused already: the pause in force.
INSERT INTO queue_pauses AS p (owner, queue, paused_at, paused_by)
VALUES ($owner, $queue, statement_timestamp(), $paused_by::regrole)
ON CONFLICT (owner, queue) DO UPDATE SET queue = p.queue
RETURNING p.paused_at, p.paused_by;

-- name: resume(owner oid, queue text)
-- Resumes the owner's queue and wakes its idle workers (at commit, as an add does): a row if it
-- was paused.
WITH resumed AS (
    DELETE FROM queue_pauses p WHERE p.owner = $owner AND p.queue = $queue
    RETURNING p.owner, p.queue
)
SELECT pg_notify('pgjobs_ready', _ready_signal(r.owner, r.queue)) FROM resumed r;

-- name: slots_held(owner oid, queue text)
-- Whether a claim in progress holds one of the owner's queue's slots (locked by its statement
-- until its transaction ends, which its worker decides): a change of the limit would wait for it.
SELECT (SELECT count(*) FROM queue_slots s WHERE s.owner = $owner AND s.queue = $queue)
       > (SELECT count(*) FROM (SELECT FROM queue_slots s
                                WHERE s.owner = $owner AND s.queue = $queue
                                FOR UPDATE SKIP LOCKED) s);

-- name: limit(owner oid, queue text, max_running integer, set_by oid)
-- The owner's queue limited to $max_running jobs leased at once, for role $set_by: the limit, and
-- its slots made anew, the first ones held by the queue's jobs leased now, in the order they were
-- claimed (their slots are taken as a claim takes them). The limit in force.
WITH limited AS (
    INSERT INTO queue_limits AS l (owner, queue, max_running, set_at, set_by)
    VALUES ($owner, $queue, $max_running, statement_timestamp(), $set_by::regrole)
    ON CONFLICT (owner, queue) DO UPDATE
    SET max_running = excluded.max_running, set_at = excluded.set_at, set_by = excluded.set_by
    RETURNING l.max_running, l.set_at, l.set_by
), leased AS (
    SELECT j.id, j.lease_token, row_number() OVER (ORDER BY j.begin_time, j.id) AS slot
    FROM jobs j
    WHERE j.claimable_by = $owner AND hashtextextended(j.queue, 0) = hashtextextended($queue, 0)
      AND j.queue = $queue
      AND j.lease_token IS NOT NULL
), made AS (
    INSERT INTO queue_slots AS s (owner, queue, slot, job_id, lease_token)
    SELECT $owner, $queue, n, l.id, l.lease_token
    FROM generate_series(1, $max_running) n LEFT JOIN leased l ON l.slot = n
    ON CONFLICT (owner, queue, slot) DO UPDATE SET job_id = excluded.job_id, lease_token = excluded.lease_token
), dropped AS (
    DELETE FROM queue_slots s WHERE s.owner = $owner AND s.queue = $queue AND s.slot > $max_running
)
SELECT l.max_running, l.set_at, l.set_by FROM limited l;

-- name: rate_limit(owner oid, queue text, claims integer, per interval, set_by oid)
-- The owner's queue limited to $claims claims in any window of $per, for role $set_by: the limit,
-- and its tokens made anew, all free (a new limit starts its window afresh). The limit in force.
WITH limited AS (
    INSERT INTO queue_rates AS r (owner, queue, claims, per, set_at, set_by)
    VALUES ($owner, $queue, $claims, $per, statement_timestamp(), $set_by::regrole)
    ON CONFLICT (owner, queue) DO UPDATE
    SET claims = excluded.claims, per = excluded.per, set_at = excluded.set_at, set_by = excluded.set_by
    RETURNING r.claims, r.per, r.set_at, r.set_by
), made AS (
    INSERT INTO queue_rate_tokens AS t (owner, queue, token)
    SELECT $owner, $queue, n FROM generate_series(1, $claims) n
    ON CONFLICT (owner, queue, token) DO UPDATE SET taken_at = '-infinity'
), dropped AS (
    DELETE FROM queue_rate_tokens t
    WHERE t.owner = $owner AND t.queue = $queue AND t.token > $claims
)
SELECT r.claims, r.per, r.set_at, r.set_by FROM limited r;

-- name: tokens_held(owner oid, queue text)
-- Whether a claim in progress holds one of the owner's queue's rate tokens (as slots_held).
SELECT (SELECT count(*) FROM queue_rate_tokens t WHERE t.owner = $owner AND t.queue = $queue)
       > (SELECT count(*) FROM (SELECT FROM queue_rate_tokens t
                                WHERE t.owner = $owner AND t.queue = $queue
                                FOR UPDATE SKIP LOCKED) t);

-- name: key_limit(owner oid, queue text, max_per_key integer, ordered boolean, prefix text,
--                 set_by oid)
-- The owner's queue limited to $max_per_key jobs of each concurrency key of $prefix leased at
-- once (in order when $ordered), for role $set_by (its rate limit per key, if any, kept): the
-- limit, the queue's gates, and its slots made anew from the queue's keyed jobs leased now, in
-- the order they were claimed. The limit in force.
WITH limited AS (
    INSERT INTO queue_key_limits AS l (owner, queue, prefix, max_per_key, ordered, set_at, set_by)
    VALUES ($owner, $queue, $prefix, $max_per_key, $ordered, statement_timestamp(),
            $set_by::regrole)
    ON CONFLICT (owner, queue, prefix) DO UPDATE
    SET max_per_key = excluded.max_per_key, ordered = excluded.ordered, set_at = excluded.set_at,
        set_by = excluded.set_by
    RETURNING l.max_per_key, l.ordered, l.set_at, l.set_by
), gates AS (
    INSERT INTO queue_key_gates (owner, queue, gate)
    SELECT $owner, $queue, g FROM _key_gates() g
    ON CONFLICT DO NOTHING
), dropped AS (
    DELETE FROM queue_key_slots s WHERE s.owner = $owner AND s.queue = $queue
), leased AS (
    SELECT j.concurrency_key, j.id, j.lease_token,
           row_number() OVER (PARTITION BY j.concurrency_key ORDER BY j.begin_time, j.id) AS slot
    FROM jobs j
    WHERE j.claimable_by = $owner AND hashtextextended(j.queue, 0) = hashtextextended($queue, 0)
      AND j.queue = $queue
      AND j.concurrency_key IS NOT NULL
      AND j.lease_token IS NOT NULL
), made AS (
    INSERT INTO queue_key_slots (owner, queue, concurrency_key, slot, job_id, lease_token)
    SELECT $owner, $queue, l.concurrency_key, l.slot, l.id, l.lease_token FROM leased l
    ON CONFLICT (owner, queue, concurrency_key, slot)
    DO UPDATE SET job_id = excluded.job_id, lease_token = excluded.lease_token
)
SELECT l.max_per_key, l.ordered, l.set_at, l.set_by FROM limited l;

-- name: key_rate_limit(owner oid, queue text, claims integer, per interval, prefix text,
--                      set_by oid)
-- The owner's queue limited to $claims claims of each concurrency key of $prefix in any window of
-- $per, for role $set_by (its limit of jobs leased per key, if any, kept): the limit, the queue's
-- gates, and the tokens of the keys of the prefix dropped (their windows start afresh). The limit
-- in force.
WITH limited AS (
    INSERT INTO queue_key_limits AS l (owner, queue, prefix, rate_claims, rate_per, set_at, set_by)
    VALUES ($owner, $queue, $prefix, $claims, $per, statement_timestamp(), $set_by::regrole)
    ON CONFLICT (owner, queue, prefix) DO UPDATE
    SET rate_claims = excluded.rate_claims, rate_per = excluded.rate_per, set_at = excluded.set_at,
        set_by = excluded.set_by
    RETURNING l.rate_claims, l.rate_per, l.set_at, l.set_by
), gates AS (
    INSERT INTO queue_key_gates (owner, queue, gate)
    SELECT $owner, $queue, g FROM _key_gates() g
    ON CONFLICT DO NOTHING
), dropped AS (
    DELETE FROM queue_key_tokens t
    WHERE t.owner = $owner AND t.queue = $queue AND starts_with(t.concurrency_key, $prefix)
)
SELECT l.rate_claims, l.rate_per, l.set_at, l.set_by FROM limited l;

-- name: gates_held(owner oid, queue text)
-- Whether a claim in progress holds one of the owner's queue's key gates (as slots_held).
SELECT (SELECT count(*) FROM queue_key_gates g WHERE g.owner = $owner AND g.queue = $queue)
       > (SELECT count(*) FROM (SELECT FROM queue_key_gates g
                                WHERE g.owner = $owner AND g.queue = $queue
                                FOR UPDATE SKIP LOCKED) g);

-- name: free_key_slots
-- The key slots no job holds and (tokens) the key tokens out of their window, of the gates no
-- claim holds (SKIP LOCKED: a claim takes slots and tokens only under their keys' gates): a key's
-- are made by claims, and keys are unbounded in number (an order's id), so the free ones go once
-- their claims have ended. Only the gates of keys with something to remove are locked: a round
-- with nothing to remove writes nothing (it locked every gate of every key limit, each round).
-- The slots are those of jobs leased lately, and are read each round; the tokens are every key's
-- claimed in its window (a day at most), read one by one with their limits: the launcher removes
-- them once a minute (flow.rs: KEY_SLOTS), where each round read 50,000 in 110 ms.
WITH free_slots AS (
    SELECT s.ctid AS sid, s.owner, s.queue, _key_gate(s.concurrency_key) AS gate
    FROM queue_key_slots s
    WHERE NOT EXISTS (SELECT FROM jobs h WHERE h.id = s.job_id AND h.lease_token = s.lease_token)
),
-- tokens {
spent_tokens AS (
    -- Out of its key's window, or of a key no longer rate-limited.
    SELECT t.ctid AS tid, t.owner, t.queue, _key_gate(t.concurrency_key) AS gate
    FROM queue_key_tokens t LEFT JOIN LATERAL _key_limits(t.owner, t.queue, t.concurrency_key) l ON true
    WHERE t.taken_at <= statement_timestamp() - coalesce(l.rate_per, '0')
),
-- } tokens
gates AS (
    SELECT g.owner, g.queue, g.gate FROM queue_key_gates g
    WHERE (g.owner, g.queue, g.gate) IN (SELECT f.owner, f.queue, f.gate FROM free_slots f
-- tokens {
                                         UNION SELECT t.owner, t.queue, t.gate FROM spent_tokens t
-- } tokens
                                         )
    FOR UPDATE SKIP LOCKED
)
-- tokens {
, tokens AS (
    DELETE FROM queue_key_tokens t USING spent_tokens k, gates g
    WHERE t.ctid = k.tid AND g.owner = k.owner AND g.queue = k.queue AND g.gate = k.gate
)
-- } tokens
-- Free still: a claim that took the slot meanwhile held its gate, which is passed over.
DELETE FROM queue_key_slots s USING free_slots f, gates g
WHERE s.ctid = f.sid AND g.owner = f.owner AND g.queue = f.queue AND g.gate = f.gate;

-- name: unlimit(owner oid, queue text)
-- Removes the owner's queue's concurrency, rate and key limits (of every prefix), their slots,
-- tokens and gates with them, and wakes its idle workers (at commit): a row if it had any.
WITH unlimited AS (
    DELETE FROM queue_limits l WHERE l.owner = $owner AND l.queue = $queue
    RETURNING l.owner, l.queue
), unrated AS (
    DELETE FROM queue_rates r WHERE r.owner = $owner AND r.queue = $queue
    RETURNING r.owner, r.queue
), unkeyed AS (
    DELETE FROM queue_key_limits k WHERE k.owner = $owner AND k.queue = $queue
    RETURNING k.owner, k.queue
), key_slots AS (
    DELETE FROM queue_key_slots s WHERE s.owner = $owner AND s.queue = $queue
), key_tokens AS (
    DELETE FROM queue_key_tokens t WHERE t.owner = $owner AND t.queue = $queue
), key_gates AS (
    DELETE FROM queue_key_gates g WHERE g.owner = $owner AND g.queue = $queue
)
SELECT pg_notify('pgjobs_ready', _ready_signal(u.owner, u.queue))
FROM (SELECT * FROM unlimited UNION SELECT * FROM unrated UNION SELECT * FROM unkeyed) u;

-- name: key_unlimit(owner oid, queue text, prefix text)
-- Removes the owner's queue's key limits of $prefix and, with the queue's last key limit, its
-- key gates, slots and tokens; wakes its idle workers (at commit): a row if it had such a limit.
WITH removed AS (
    DELETE FROM queue_key_limits k
    WHERE k.owner = $owner AND k.queue = $queue AND k.prefix = $prefix
    RETURNING k.owner, k.queue
), last AS (
    SELECT r.owner, r.queue FROM removed r
    WHERE NOT EXISTS (SELECT FROM queue_key_limits k
                      WHERE k.owner = $owner AND k.queue = $queue AND k.prefix <> $prefix)
), gates AS (
    DELETE FROM queue_key_gates g USING last l WHERE g.owner = l.owner AND g.queue = l.queue
), slots AS (
    DELETE FROM queue_key_slots s USING last l WHERE s.owner = l.owner AND s.queue = l.queue
), tokens AS (
    DELETE FROM queue_key_tokens t USING last l WHERE t.owner = l.owner AND t.queue = l.queue
)
SELECT pg_notify('pgjobs_ready', _ready_signal(r.owner, r.queue)) FROM removed r;

-- name: flow_of(claimant oid, queues text[])
-- Whether each of the claimant's queues is paused, and whether it has a concurrency limit, a rate
-- limit, key limits, and key limits of which one has a rate; and where its only key limit is that
-- of the empty prefix (every key's), that limit; in the order given (flow.rs: states).
SELECT EXISTS (SELECT FROM queue_pauses p WHERE p.owner = $claimant AND p.queue = q.queue),
       EXISTS (SELECT FROM queue_limits l WHERE l.owner = $claimant AND l.queue = q.queue),
       EXISTS (SELECT FROM queue_rates r WHERE r.owner = $claimant AND r.queue = q.queue),
       k.n > 0, k.rated, k.n = 1 AND k.prefix = '', k.max_per_key, k.ordered, k.rate_claims,
       k.rate_per
FROM unnest($queues::text[]) WITH ORDINALITY AS q(queue, n)
CROSS JOIN LATERAL (
    SELECT count(*) AS n, bool_or(k.rate_claims IS NOT NULL) AS rated, min(k.prefix) AS prefix,
           min(k.max_per_key) AS max_per_key, bool_or(k.ordered) AS ordered,
           min(k.rate_claims) AS rate_claims, min(k.rate_per) AS rate_per
    FROM queue_key_limits k WHERE k.owner = $claimant AND k.queue = q.queue) k
ORDER BY q.n;
