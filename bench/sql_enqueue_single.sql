-- Hand-written SQL: one job per transaction into a plain table.
INSERT INTO q (payload) VALUES ('{"task": "noop"}');
