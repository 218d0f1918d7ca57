-- graphile-worker: 100 jobs per transaction. :specs is the text of a job_spec[] of 100 no-op jobs,
-- a parameter (as pg_jobs' JSON is) that the server parses on every call.
SELECT count(*) FROM graphile_worker.add_jobs(:specs::graphile_worker.job_spec[]);
