-- The statements of src/api/history.rs: the months of job_history, one partition
-- job_history_YYYYMM per UTC month (sql/040_history.sql).

-- name: prepare_months
-- Last month to twelve ahead, without waiting for a reader of job_history.
SELECT jobs_history_prepare(12, wait => false);

-- name: partitions
-- Every partition of job_history, each with its month (null for the catch-all one).
SELECT c.oid::regclass::text, c.oid,
       CASE WHEN c.relname ~ '^job_history_[0-9]{6}$' THEN to_date(right(c.relname, 6), 'YYYYMM') END
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'job_history'::regclass
ORDER BY c.relname;

-- name: months_before
-- The months whose whole month is before the day $1, oldest first: partition and month.
SELECT c.oid::regclass::text, m.month
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid,
     LATERAL (SELECT to_date(right(c.relname, 6), 'YYYYMM') AS month) m
WHERE i.inhparent = 'job_history'::regclass AND c.relname ~ '^job_history_[0-9]{6}$'
  AND m.month + interval '1 month' <= $1
ORDER BY m.month;

-- name: missing_months
-- The months from last month to $1 months ahead without a partition: each one's partition's
-- name, and the first instant of the month and of the next.
SELECT 'job_history_' || to_char(g.month, 'YYYYMM'), _utc_midnight(g.month::date),
       _utc_midnight((g.month + interval '1 month')::date)
FROM generate_series(_utc_month(now()) - interval '1 month',
                     _utc_month(now()) + make_interval(months => $1),
                     interval '1 month') AS g(month)
WHERE to_regclass('job_history_' || to_char(g.month, 'YYYYMM')) IS NULL
ORDER BY g.month;

-- name: made
-- The partition $1 if it exists now (another call may have made it meanwhile).
SELECT to_regclass($1)::oid;

-- name: wait_for_finishes
-- Jobs finishing now wait until the month is attached: an insert routed to the catch-all
-- partition before the attach would fail its new constraint after it (23514).
LOCK TABLE job_history IN SHARE ROW EXCLUSIVE MODE;

-- name: take_without_waiting
LOCK TABLE job_history IN SHARE ROW EXCLUSIVE MODE NOWAIT;

-- name: take_catch_all_without_waiting
-- The attach locks job_history_other alone (readers wait for it; it waits for them).
LOCK TABLE job_history_other IN ACCESS EXCLUSIVE MODE NOWAIT;

-- name: month_statements
-- The statements that make month $1 (from $2 to $3): its table, the jobs of the month moved
-- into it from the catch-all partition, and its attach.
SELECT format('CREATE TABLE %I (LIKE job_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', $1),
       format('WITH moved AS (DELETE FROM job_history_other WHERE due_at >= %L AND due_at < %L RETURNING *) '
              'INSERT INTO %I SELECT * FROM moved', $2, $3, $1),
       format('ALTER TABLE job_history ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', $1, $2, $3);

-- name: month_is_past
-- Whether the day $1 is before the current month, and how it is written.
SELECT $1 <= _utc_month(now()), to_char($1, 'YYYY-MM-DD');

-- name: forget_keys_of_month
-- Keys of finished skip-jobs are remembered as long as their month ($1) is.
DELETE FROM job_keys k
WHERE _utc_month(k.due_at) = $1
  AND NOT EXISTS (SELECT FROM jobs j WHERE j.id = k.job_id);
