-- The application table the example workers write to, one row per job they did. No unique
-- constraint on job_id on purpose: exactly-once comes from completing the job in the same
-- transaction as this insert, and scripts/example_tests.sh counts the rows to show it. (A real
-- application would add the constraint as well.)
CREATE TABLE IF NOT EXISTS example_effects (
    job_id  bigint NOT NULL,
    n       integer,
    worker  text NOT NULL,
    done_at timestamptz NOT NULL DEFAULT now()
);

-- Services the application depends on that are down: a job whose payload says it needs one
-- ("needs") fails while its name is here (the workflow examples' failing step).
CREATE TABLE IF NOT EXISTS example_outages (
    service text PRIMARY KEY
);
