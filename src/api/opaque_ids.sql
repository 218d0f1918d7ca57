-- The statements of opaque ids (src/api/opaque_ids.rs), run as the extension's owner.

-- name: key
-- The key of the jobs' opaque ids: the oldest, so that a restored dump's wins over the one its
-- CREATE EXTENSION made (sql/030_queue.sql).
SELECT k.key FROM opaque_id_key k ORDER BY k.made_at, k.key LIMIT 1;

-- name: listed(id bigint, owner oid)
-- Whether the job $id of the owner, live or finished, is listed.
SELECT EXISTS (SELECT FROM jobs j WHERE j.id = $id AND j.owner = $owner AND j.listed)
    OR EXISTS (SELECT FROM job_history h WHERE h.id = $id AND h.owner = $owner AND h.listed);

-- name: public_fields(id bigint, owner oid, opaque_id uuid)
-- The public fields of the job $id of the owner, live or finished, listed or not, under its
-- opaque id.
SELECT $opaque_id, j.name, j.description, j.link FROM jobs j
WHERE j.id = $id AND j.owner = $owner
UNION ALL
SELECT $opaque_id, h.name, h.description, h.link FROM job_history h
WHERE h.id = $id AND h.owner = $owner;
