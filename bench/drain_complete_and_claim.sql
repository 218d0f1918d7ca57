-- One worker's loop, one round trip per job: complete the job claimed last time and claim the
-- next in one call (and one commit). pgbench keeps each client's variables from one run of the
-- script to the next; bench.py starts them as ids = tokens = '{}' (nothing to complete yet) and
-- claims = the claims each client makes, and runs the script claims + 1 times: the last run
-- only completes. An empty claim aggregates to NULL, hence the coalesce (see drain.sql).
\if :claims > 0
SELECT count(*) AS claimed, coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(lease_token), '{}') AS tokens
FROM pgjobs.jobs_complete_and_claim(:ids::bigint[], :tokens::uuid[], NULL, 'w', ARRAY['default'], 1)
\gset
\else
SELECT pgjobs.jobs_complete(:ids::bigint[], :tokens::uuid[]);
\endif
\set claims :claims - 1
