-- pgmq: 100 messages per transaction. :msgs is the text of a jsonb[] of the same 100 no-op jobs as
-- pg_jobs' batch, a parameter that the server parses on every call.
SELECT count(*) FROM pgmq.send_batch('noop', :msgs::jsonb[]);
