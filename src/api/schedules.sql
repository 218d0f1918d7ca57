-- The statements of src/api/schedules.rs. $1 is the calling role.

-- name: schedule
SELECT _schedule($1, $2, $3, $4, $5);

-- name: alter_schedule
SELECT _alter_schedule($1, $2, $3, $4, $5);

-- name: unschedule
SELECT _unschedule($1, $2);
