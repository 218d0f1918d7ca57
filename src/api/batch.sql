-- The statements of src/api/batch.rs. $1 is the calling role.

-- name: post
SELECT _batch_post($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15);

-- name: cancel
SELECT * FROM _batch_cancel($1, $2);

-- name: cancel_where
SELECT * FROM _batch_cancel_where($1, $2, $3, $4, $5, $6);

-- name: release
SELECT _batch_release_job($1, $2);

-- name: fold_counts
SELECT _batch_tally_fold();
