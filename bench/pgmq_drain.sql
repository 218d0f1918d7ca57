-- pgmq: one worker's loop, as drain.sql is pg_jobs': read up to :batch messages with a visibility
-- timeout of 30 s, then delete them (:archive = 0) or move them to the queue's archive table
-- (:archive = 1), in two round trips and two commits. (See drain.sql for \gset and the NULL.)
SELECT count(*) AS claimed, array_agg(msg_id) AS ids FROM pgmq.read('noop', 30, :batch)
\gset
\if :claimed > 0
\if :archive
SELECT count(*) FROM pgmq.archive('noop', :ids::bigint[]);
\else
SELECT count(*) FROM pgmq.delete('noop', :ids::bigint[]);
\endif
\endif
