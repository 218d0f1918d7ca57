-- The statements of src/api/api_tokens.rs: API tokens (api_tokens, sql/020_identity.sql).

-- name: create(role oid, label text, token text)
-- A token of the role (and its name now) with its label, kept as the SHA-256 of its text $token.
INSERT INTO api_tokens (role, role_name, label, hash)
VALUES ($role, (SELECT r.rolname FROM pg_roles r WHERE r.oid = $role), $label,
        sha256(convert_to($token, 'UTF8')))
RETURNING id;

-- name: revoke(role oid, id bigint, admin boolean)
-- The role's token $id (any role's for an administrator) revoked, if it was not already: its
-- role, and whether that role has a live token left.
WITH revoked AS (
    UPDATE api_tokens t SET revoked_at = coalesce(t.revoked_at, statement_timestamp())
    WHERE t.id = $id AND (t.role = $role OR $admin)
    RETURNING t.id, t.role
)
SELECT r.role, EXISTS (SELECT FROM api_tokens o
                       WHERE o.role = r.role AND o.revoked_at IS NULL AND o.id <> r.id)
FROM revoked r;

-- name: token_role(token text)
-- The live token whose text is $token, while its role has the name it had when the token was made:
-- its id, its role's name, whether its last use is a minute old or more (then noted), and its
-- role.
SELECT t.id, r.rolname::text,
       t.last_used_at IS NULL OR t.last_used_at < statement_timestamp() - interval '1 minute', t.role
FROM api_tokens t JOIN pg_roles r ON r.oid = t.role AND r.rolname = t.role_name
WHERE t.hash = sha256(convert_to($token, 'UTF8')) AND t.revoked_at IS NULL;

-- name: note_use(id bigint)
-- Token $id used now; passed over while another request notes it (SKIP LOCKED: a request never
-- waits for another).
UPDATE api_tokens t SET last_used_at = statement_timestamp()
WHERE t.id = (SELECT u.id FROM api_tokens u WHERE u.id = $id FOR UPDATE SKIP LOCKED);

-- name: api_member(role oid)
-- Whether pgjobs_api is a member of the role (directly: the grant this extension makes).
SELECT EXISTS (SELECT FROM pg_auth_members m
               WHERE m.roleid = $role AND m.member = 'pgjobs_api'::regrole);
