-- One worker's loop: claim up to :batch jobs, then complete them, in two round trips and two
-- commits, as a real worker does (it would run the jobs in between).
-- \gset stores each column as text, so the arrays travel as their text form ('{1,2}') and are
-- cast back; an empty claim aggregates to NULL, which \gset would store as '' (not an array).
SELECT count(*) AS claimed, array_agg(id) AS ids, array_agg(lease_token) AS tokens
FROM pgjobs.jobs_claim('w', ARRAY['default'], :batch)
\gset
\if :claimed > 0
SELECT pgjobs.jobs_complete(:ids::bigint[], :tokens::uuid[]);
\endif
