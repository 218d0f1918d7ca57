-- The statements of src/api/identity.rs. $1 is the calling role.

-- name: add_proxy
SELECT _add_proxy($1, $2, $3);

-- name: remove_proxy
SELECT _remove_proxy($1, $2);
