-- Hand-written SQL: claim-and-delete :batch jobs in one statement, autocommit. At most once: a
-- worker that dies after this commit loses its jobs.
WITH c AS (SELECT id FROM q ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED)
DELETE FROM q USING c WHERE q.id = c.id RETURNING q.*;
