-- Types, the role of pg_jobs' users, and small helpers every domain uses. Loaded first.

CREATE TYPE job_status AS ENUM ('created', 'started', 'completed', 'failed', 'aborted');
COMMENT ON TYPE job_status IS
    'created: waiting (queued, or waiting for its next attempt); started: claimed and leased; '
    'completed, failed, aborted: finished, in job_history.';

CREATE TYPE key_rule AS ENUM ('skip', 'replace');
COMMENT ON TYPE key_rule IS
    'What adding a job with a key already in use does. skip: nothing, the first job stands, '
    'finished or not; replace: the job still waiting takes the new work, one already started is '
    'left alone, and once it has finished the key is free again. A job added by debounce keeps '
    'replace, one added by throttle skip (its key is free again by time: job_keys.free_at).';

-- The rules of single columns are domains, not CHECK constraints: PostgreSQL parses a table's
-- CHECK constraints from their stored text again at every statement that writes the table (the
-- eight of `jobs` were an eighth of the work of a jobs_add), while a domain's are parsed once per
-- session and checked only where a value is assigned to the column. (Not for job_status: a
-- domain over an enum takes no `status = 'created'` without a cast; its rules are functions, see
-- core/src/status.rs.)
CREATE DOMAIN nonempty_text AS text CHECK (VALUE <> '');
CREATE DOMAIN positive_integer AS integer CHECK (VALUE >= 1);
CREATE DOMAIN nonnegative_integer AS integer CHECK (VALUE >= 0);
CREATE DOMAIN nonnegative_smallint AS smallint CHECK (VALUE >= 0);
CREATE DOMAIN nonnegative_bigint AS bigint CHECK (VALUE >= 0);
-- NaN is above Infinity in PostgreSQL's order of float8, so it is outside too.
CREATE DOMAIN nonnegative_finite_float AS double precision CHECK (VALUE >= 0 AND VALUE < 'Infinity');
CREATE DOMAIN nonnegative_interval AS interval CHECK (VALUE >= '0');
CREATE DOMAIN positive_interval AS interval CHECK (VALUE > '0');

-- What one job to add is; jobs_add's parameters, and the keys of jobs_add_batch's objects.
CREATE TYPE job_spec AS (
    task         text,
    payload      jsonb,
    queue        text,
    priority     integer,
    run_at       timestamptz,
    max_attempts integer,
    backoff      interval,
    max_backoff  interval,
    lease        interval,
    key          text,
    on_conflict  text,
    key_window   interval,
    concurrency_key text
);

-- Who may use pg_jobs. A role is cluster-wide: CREATE EXTENSION makes it if it is missing, and
-- DROP EXTENSION leaves it. Grant it to the roles that add, claim or schedule jobs.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'pgjobs_user') THEN
        CREATE ROLE pgjobs_user NOLOGIN;
    END IF;
END
$$;
GRANT USAGE ON SCHEMA @extschema@ TO pgjobs_user;

-- The claimant of the extension's own queues (src/api/queue.rs): no role has oid 0.
CREATE FUNCTION _extension_claimant() RETURNS oid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 0;
-- Called as the caller by the batch views and the policy of jobs (the agents' and pg_monitor's
-- grants: sql/085_batch.sql, sql/089_metrics.sql).
GRANT EXECUTE ON FUNCTION _extension_claimant TO pgjobs_user;

CREATE FUNCTION _invalid(message text, hint text DEFAULT NULL) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', '_invalid';
GRANT EXECUTE ON FUNCTION _invalid TO pgjobs_user;

-- The checks of src/api/refusals.rs: a count of rows to take or skip, refused when negative; a
-- date a caller gives, refused when it is not finite (and, in a WHERE clause without a column,
-- checked once even where no row is read).
CREATE FUNCTION _row_count(n integer, name text) RETURNS integer
LANGUAGE c IMMUTABLE STRICT AS 'MODULE_PATHNAME', '_row_count';
GRANT EXECUTE ON FUNCTION _row_count TO pgjobs_user;

CREATE FUNCTION _finite_date(d date, name text) RETURNS boolean
LANGUAGE c IMMUTABLE AS 'MODULE_PATHNAME', '_finite_date';
GRANT EXECUTE ON FUNCTION _finite_date TO pgjobs_user;

-- Months are UTC months: a job's month in job_history is the UTC month of its due_at.
CREATE FUNCTION _utc_month(t timestamptz) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (date_trunc('month', t, 'UTC') AT TIME ZONE 'UTC')::date;
GRANT EXECUTE ON FUNCTION _utc_month TO pgjobs_user;

CREATE FUNCTION _utc_midnight(d date) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN d::timestamp AT TIME ZONE 'UTC';
GRANT EXECUTE ON FUNCTION _utc_midnight TO pgjobs_user;

-- A secret made at installation that no member can read: it keys what members must not be able
-- to compute, the payloads of the ready signals (sql/030_queue.sql) and the advisory lock keys.
CREATE TABLE installation_key (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    key       bytea NOT NULL
);
INSERT INTO installation_key (key) VALUES (uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));

-- The trigger of every table that backends cache (src/api/cached.rs): this one's key is read
-- once a backend.
CREATE FUNCTION _cached_table_changed() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', '_cached_table_changed';
CREATE TRIGGER installation_key_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON installation_key
    FOR EACH STATEMENT EXECUTE FUNCTION _cached_table_changed();

-- Every advisory lock the extension takes, by what it serializes. Any role may take any advisory
-- lock, so a key a member can compute is a lock a member can hold while the extension waits on
-- it (the keys were once (-2, 0), (-3, job), (job, slice), (-1, group), hashes of public names).
-- A key is now a hash of its class and object keyed by installation_key: no member can compute
-- one. The classes are listed here and nowhere else.
CREATE TYPE lock_class AS ENUM (
    'compute_fold',   -- one fold of compute reports at a time
    'compute_group',  -- the fetches of a group with limits, one at a time
    'compute_job',    -- a job's fetches: shared, or alone when money is counted exactly
    'compute_copies', -- the fetches of one job's slices by one identity, one at a time
    'compute_slice',  -- the results of a slice's copies, decided one at a time
    'compute_origins', -- a group's origins: checked against contacts shared, changed alone
    'routine_round',  -- one round of a routine schedule at a time
    'batch_post'      -- a poster's posts (held shared, by sixteenths of its commands), tried alone by the scheduler
);

-- A lock's key (src/api/keyed.rs). Parallel restricted: a backend's first call reads
-- installation_key through SPI, which a parallel worker should not.
CREATE FUNCTION _lock_key(class lock_class, object text) RETURNS bigint
LANGUAGE c STABLE STRICT PARALLEL RESTRICTED AS 'MODULE_PATHNAME', '_lock_key';

-- Shows a secret column through a view without letting a member's predicate reach the column
-- itself. A security_barrier view still takes in a leakproof condition (uuid comparisons are
-- leakproof) and runs it on every row of the table, as an index condition even, before the
-- view's own filter: EXPLAIN ANALYZE then counts the rows of other owners in the probed range.
-- Around this function, which is neither inlined (PL/pgSQL) nor leakproof, the condition has no
-- index to use and no statistics: it joins the view's own filter on the rows the scan reads
-- anyway, and the count of rows removed is the same whatever the range holds. That holds for a
-- view over one table; a view that joins would let the condition filter the other table alone
-- (compute_groups_jobs_by_job is a function's rows for that reason).
CREATE FUNCTION _fence(value anyelement) RETURNS anyelement
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', '_fence';
-- Called by the views members query, so with the member's rights.
GRANT EXECUTE ON FUNCTION _fence(anyelement) TO pgjobs_user;
