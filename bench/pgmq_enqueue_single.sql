-- pgmq: one message per transaction, by its own function.
SELECT pgmq.send('noop', '{"task": "noop"}');
