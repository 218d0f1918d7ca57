-- The statements of src/api/batch.rs. $1 is the calling role.

-- name: post
SELECT _batch_post($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15);

-- name: cancel
SELECT * FROM _batch_cancel($1, $2);

-- name: cancel_where
SELECT * FROM _batch_cancel_where($1, $2, $3, $4, $5, $6);

-- name: release
SELECT _batch_release_job($1, $2);

-- name: register
SELECT _batch_register($1, $2, $3, $4);

-- name: ready_signals
SELECT _batch_ready_signals($1, $2);

-- name: cancel_signal
SELECT _batch_cancel_signal_of($1, $2);

-- name: claim
SELECT * FROM _batch_claim($1, $2, $3);

-- name: started
SELECT _batch_started($1, $2, $3, $4);

-- name: heartbeat
SELECT * FROM _batch_heartbeat($1, $2, $3, $4, $5);

-- name: finish
SELECT _batch_finish($1, $2, $3, $4, $5, $6, $7, $8);

-- name: hand_back
SELECT _batch_hand_back($1, $2, $3);

-- name: fold_counts
SELECT _batch_tally_fold();
