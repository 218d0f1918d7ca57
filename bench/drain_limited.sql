-- drain.sql for a limited queue: a worker whose claim took nothing sleeps a millisecond, as one
-- that waits to be woken would (a lease's end in a full queue wakes it), rather than claiming
-- again at once and taking the CPU from the workers that hold the slots.
SELECT count(*) AS claimed, array_agg(id) AS ids, array_agg(lease_token) AS tokens
FROM pgjobs.jobs_claim('w', ARRAY['default'], :batch)
\gset
\if :claimed > 0
SELECT pgjobs.jobs_complete(:ids::bigint[], :tokens::uuid[]);
\else
\sleep 1 ms
\endif
