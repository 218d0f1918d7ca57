-- Named statements of src/api/keyed.rs.

-- name: installation_key
-- The installation's secret (sql/010_types.sql), which keys what no member can compute.
SELECT k.key FROM installation_key k;
