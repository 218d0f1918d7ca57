-- 100 jobs per transaction. :jobs is a parameter, not a literal, so that the server parses the
-- JSON on every call as it would for an application, instead of once when pgbench prepares.
SELECT count(*) FROM pgjobs.jobs_add_batch(:jobs::jsonb);
