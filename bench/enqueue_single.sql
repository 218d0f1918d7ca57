-- One job per transaction, as an application adds work one request at a time.
SELECT pgjobs.jobs_add('noop');
