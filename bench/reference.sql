-- The server's commit rate for the smallest useful write: one row updated per transaction.
\set id random(1, 10000)
UPDATE ref SET n = n + 1 WHERE id = :id;
