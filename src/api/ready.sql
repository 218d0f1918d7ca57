-- Named statements of src/api/ready.rs.

-- name: installation_key
-- The installation's secret (sql/010_types.sql), which keys the ready signals.
SELECT k.key FROM installation_key k;
