-- Hand-written SQL: 100 jobs per transaction, from the same JSON parameter as pg_jobs' batch.
INSERT INTO q (payload) SELECT e FROM jsonb_array_elements(:jobs::jsonb) e;
