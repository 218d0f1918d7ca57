-- drain.sql for a queue whose jobs appear while it drains (jobs that wait for jobs: a step is
-- claimable only once its dependencies completed), so a claim that takes nothing is no sign of
-- the end, and no client can be given its share of the claims in advance. A worker whose claim
-- took nothing looks whether any job is left: if one is (waiting, or leased by another worker
-- whose completion will release more), it sleeps a millisecond, as one waiting to be woken would
-- (see drain_limited.sql), and claims again; if none is, it is done, and every later run of the
-- script skips to its end. bench.py starts done at 0 and gives each client more runs (-t) than it
-- can need; the skipped runs take microseconds.
\if :done
\else
SELECT count(*) AS claimed, array_agg(id) AS ids, array_agg(lease_token) AS tokens
FROM pgjobs.jobs_claim('w', ARRAY['default'], :batch)
\gset
\if :claimed > 0
SELECT pgjobs.jobs_complete(:ids::bigint[], :tokens::uuid[]);
\else
SELECT (NOT EXISTS (SELECT FROM pgjobs.jobs WHERE queue = 'default'))::int AS done
\gset
\if :done
\else
\sleep 1 ms
\endif
\endif
\endif
