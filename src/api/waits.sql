-- The statements of src/api/waits.rs.

-- name: jobs(ids bigint[], owner oid)
-- The jobs $ids of $owner (any owner's when null), in the order given: each one's id and, as
-- jobs_result answers, its status (null: no job of the owner's has that id), its result, the
-- error of its last failed attempt, its attempts, and when it finished (null: not yet). The ids
-- are a condition of their own on jobs, which only its primary key serves (see finish in
-- queue.sql).
SELECT g.id, coalesce(s.word, h.status::text), h.result,
       coalesce(s.blocked_by, coalesce(j.errors, h.errors) -> -1 ->> 'error'),
       coalesce(j.attempt, h.attempts), h.end_time
FROM unnest($ids::bigint[]) WITH ORDINALITY AS g(id, n)
LEFT JOIN jobs j ON j.id = ANY ($ids) AND j.id = g.id AND ($owner::oid IS NULL OR j.owner = $owner)
LEFT JOIN LATERAL _live_status(j.id, j.status, j.run_at) s ON true
LEFT JOIN job_history h ON h.id = g.id AND ($owner::oid IS NULL OR h.owner = $owner)
ORDER BY g.n;
