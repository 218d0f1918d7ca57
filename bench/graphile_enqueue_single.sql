-- graphile-worker: one job per transaction, through its SQL API.
SELECT id FROM graphile_worker.add_job('noop', '{}'::json);
