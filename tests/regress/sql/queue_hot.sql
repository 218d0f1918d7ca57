-- A claim and a heartbeat are HOT updates: PostgreSQL writes one new version of the job's row on
-- its page and no index entry. That holds while no index of pgjobs.jobs names a column they
-- change (in its keys, expressions or predicate) and each page keeps room for the new versions
-- of all its rows (the table's fillfactor), so a claim of a page's every row stays HOT.
SELECT regress.reset();

-- Each index of jobs with each column it names, in its keys, expressions or predicate.
CREATE TEMP VIEW regress_indexed AS
SELECT i.indexrelid::regclass AS index, a.attname, a.attnum
FROM pg_index i
JOIN pg_attribute a ON a.attrelid = i.indrelid
WHERE i.indrelid = 'pgjobs.jobs'::regclass AND a.attnum > 0
  AND (a.attnum = ANY (i.indkey)
       OR pg_get_expr(i.indexprs, i.indrelid) ~ ('\m' || a.attname || '\M')
       OR pg_get_expr(i.indpred, i.indrelid) ~ ('\m' || a.attname || '\M'));

-- No index names a lease column.
SELECT index, attname AS lease_column
FROM regress_indexed
WHERE attname IN ('status', 'attempt', 'begin_time', 'lease_token', 'locked_by', 'locked_until',
                  'claimed_lease');

-- The columns no claim changes come first, those of fixed width and never null before the first
-- of variable width (so that PostgreSQL reads each at a cached offset, in a claim's HOT check of
-- the indexed ones and in its reads), and the lease columns last (so that a claim's WAL record
-- carries little more than them): the columns in their order, by kind.
SELECT string_agg(a.attname || CASE WHEN a.attlen < 0 THEN ' (variable)'
                                    WHEN NOT a.attnotnull THEN ' (nullable)' ELSE '' END,
                  ', ' ORDER BY a.attnum) AS columns
FROM pg_attribute a
WHERE a.attrelid = 'pgjobs.jobs'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
-- No column an index names, of fixed width and never null, stands after one of variable width.
SELECT a.attname AS indexed_past_a_variable_width_column
FROM pg_attribute a
WHERE a.attrelid = 'pgjobs.jobs'::regclass AND a.attnum > 0 AND a.attlen > 0 AND a.attnotnull
  AND a.attnum > (SELECT min(v.attnum) FROM pg_attribute v
                  WHERE v.attrelid = a.attrelid AND v.attnum > 0 AND v.attlen < 0)
  AND a.attnum IN (SELECT x.attnum FROM regress_indexed x);
DROP VIEW regress_indexed;

-- A member's 200 jobs (several pages), claimed 100 at a time, then renewed, then completed, each
-- in a transaction of its own: every update is HOT. The counts are this backend's of the table,
-- not yet reported (so they may include an earlier transaction's): each transaction reads them
-- at its start (\gset into start_*) and shows what it added at its end (regress_hot_counts).
CREATE ROLE regress_hot IN ROLE pgjobs_user;
SET ROLE regress_hot;
CREATE TEMP VIEW regress_hot_counts AS
SELECT pg_stat_get_xact_tuples_updated('pgjobs.jobs'::regclass) AS updated,
       pg_stat_get_xact_tuples_hot_updated('pgjobs.jobs'::regclass) AS hot_updated,
       pg_stat_get_xact_tuples_deleted('pgjobs.jobs'::regclass) AS deleted;
SELECT count(*) AS added
FROM pgjobs.jobs_add_batch((SELECT jsonb_agg(jsonb_build_object('task', 'hot', 'payload', jsonb_build_object('n', n)))
                            FROM generate_series(1, 200) n));
BEGIN;
SELECT * FROM regress_hot_counts \gset start_
CREATE TEMP TABLE claimed AS SELECT * FROM pgjobs.jobs_claim('hot', n => 100);
INSERT INTO claimed SELECT * FROM pgjobs.jobs_claim('hot', n => 100);
SELECT updated - :start_updated AS updated, hot_updated - :start_hot_updated AS hot_updated FROM regress_hot_counts;
COMMIT;
BEGIN;
SELECT * FROM regress_hot_counts \gset start_
SELECT count(*) AS heartbeats FROM claimed c, pgjobs.jobs_heartbeat(c.id, c.lease_token, '1 hour') h
WHERE h.lease_state = 'held';
SELECT updated - :start_updated AS updated, hot_updated - :start_hot_updated AS hot_updated FROM regress_hot_counts;
COMMIT;
-- A completion deletes the row (and keeps it in job_history).
BEGIN;
SELECT * FROM regress_hot_counts \gset start_
SELECT pgjobs.jobs_complete(array_agg(id), array_agg(lease_token)) FROM claimed;
SELECT updated - :start_updated AS updated, deleted - :start_deleted AS deleted FROM regress_hot_counts;
COMMIT;
DROP TABLE claimed;
DROP VIEW regress_hot_counts;
RESET ROLE;
SELECT count(*) AS completed FROM pgjobs.job_history WHERE task = 'hot' AND status = 'completed';
DROP ROLE regress_hot;
