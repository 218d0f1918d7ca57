-- The statements of src/api/sql_jobs.rs. $1 is the calling role.

-- name: add_sql
SELECT _add_sql($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);
