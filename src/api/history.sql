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

-- name: months_before(before date)
-- The months whose whole month is before the day $before, oldest first: partition and month.
SELECT c.oid::regclass::text, m.month
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid,
     LATERAL (SELECT to_date(right(c.relname, 6), 'YYYYMM') AS month) m
WHERE i.inhparent = 'job_history'::regclass AND c.relname ~ '^job_history_[0-9]{6}$'
  AND m.month + interval '1 month' <= $before
ORDER BY m.month;

-- name: missing_months(months_ahead integer)
-- The months from last month to $months_ahead months ahead without a partition: each one's
-- partition's name, and the first instant of the month and of the next.
SELECT 'job_history_' || to_char(g.month, 'YYYYMM'), _utc_midnight(g.month::date),
       _utc_midnight((g.month + interval '1 month')::date)
FROM generate_series(_utc_month(now()) - interval '1 month',
                     _utc_month(now()) + make_interval(months => $months_ahead),
                     interval '1 month') AS g(month)
WHERE to_regclass('job_history_' || to_char(g.month, 'YYYYMM')) IS NULL
ORDER BY g.month;

-- name: made(partition text)
-- The partition $partition if it exists now (another call may have made it meanwhile).
SELECT to_regclass($partition)::oid;

-- name: wait_for_finishes
-- Jobs finishing now wait until the month is attached: an insert routed to the catch-all
-- partition before the attach would fail its new constraint after it (23514).
LOCK TABLE job_history IN SHARE ROW EXCLUSIVE MODE;

-- name: take_without_waiting
LOCK TABLE job_history IN SHARE ROW EXCLUSIVE MODE NOWAIT;

-- name: take_catch_all_without_waiting
-- The attach locks job_history_other alone (readers wait for it; it waits for them).
LOCK TABLE job_history_other IN ACCESS EXCLUSIVE MODE NOWAIT;

-- name: month_statements(partition text, month_start timestamptz,
--                         next_month_start timestamptz)
-- The statements that make the partition $partition of the month from $month_start to
-- $next_month_start: its table, the jobs of the month moved into it from the catch-all
-- partition, and its attach.
SELECT format('CREATE TABLE %I (LIKE job_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
              $partition),
       format('WITH moved AS (DELETE FROM job_history_other WHERE due_at >= %L AND due_at < %L RETURNING *) '
              'INSERT INTO %I SELECT * FROM moved', $month_start, $next_month_start, $partition),
       format('ALTER TABLE job_history ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
              $partition, $month_start, $next_month_start);

-- name: month_is_past(before date)
-- Whether the day $before is before the current month, and how it is written.
SELECT $before <= _utc_month(now()), to_char($before, 'YYYY-MM-DD');

-- name: forget_keys_of_month(month date)
-- Keys of finished skip-jobs are remembered as long as their month is: the month's keys, a range
-- of job_keys_due_at (a month named by _utc_month(due_at) was a read of every key).
DELETE FROM job_keys k
WHERE k.due_at >= _utc_midnight($month) AND k.due_at < _utc_midnight(($month + interval '1 month')::date)
  AND NOT EXISTS (SELECT FROM jobs j WHERE j.id = k.job_id);

-- name: any_rule
-- Whether any identity has set a rule for what job_history keeps of its queue (any_rule).
SELECT EXISTS (SELECT FROM queue_history_rules);
