-- The statements of opaque ids (src/api/opaque_ids.rs), run as the extension's owner.

-- name: key
-- The key of the jobs' opaque ids: the oldest, so that a restored dump's wins over the one its
-- CREATE EXTENSION made (sql/030_queue.sql).
SELECT k.key FROM opaque_id_key k ORDER BY k.made_at, k.key LIMIT 1;

-- name: listed
-- Whether job $1 of owner $2, live or finished, is listed.
SELECT EXISTS (SELECT FROM jobs j WHERE j.id = $1 AND j.owner = $2 AND j.listed)
    OR EXISTS (SELECT FROM job_history h WHERE h.id = $1 AND h.owner = $2 AND h.listed);

-- name: public_fields
-- The public fields of job $1 of owner $2, live or finished, listed or not, under its opaque id $3.
SELECT $3, j.name, j.description, j.link FROM jobs j WHERE j.id = $1 AND j.owner = $2
UNION ALL
SELECT $3, h.name, h.description, h.link FROM job_history h WHERE h.id = $1 AND h.owner = $2;
