-- The statements of src/api/routines.rs. $1 is the calling role.

-- name: create
SELECT _routines_create($1, $2, $3);

-- name: put
SELECT _routines_put($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12);

-- name: remove
SELECT _routines_remove($1, $2, $3);

-- name: import
SELECT _routines_import($1, $2, $3);

-- name: export
SELECT _routines_export($1, $2);

-- name: drop
SELECT _routines_drop($1, $2);

-- name: grant
SELECT _routines_grant($1, $2, $3, true);

-- name: revoke
SELECT _routines_grant($1, $2, $3, false);

-- name: reload
SELECT _routines_reload($1, $2);

-- name: mode
SELECT * FROM _routines_mode($1, $2);

-- name: set_mode
SELECT * FROM _routines_set_mode($1, $2, $3);

-- name: restart
SELECT _routine_restart($1, $2, $3);

-- name: stop
SELECT _routine_stop($1, $2, $3);

-- name: message
SELECT _routine_message($1, $2, $3, $4);

-- name: tick
-- The launcher's round at $1 (see routines.rs's ROUTINES).
SELECT _routines_tick($1);

-- name: next_look
-- Routine schedules are looked at every 2 seconds.
SELECT $1 + interval '2 seconds' WHERE EXISTS (SELECT FROM routine_schedules);
