-- The statements of src/api/identity.rs.

-- name: proxy_standing
-- Whether the new root ($2) is itself a proxy, whether the proxy ($1) has proxies of its own,
-- and whose proxy it is now.
SELECT EXISTS (SELECT FROM proxies p WHERE p.proxy = $2),
       EXISTS (SELECT FROM proxies p WHERE p.root = $1),
       (SELECT p.root FROM proxies p WHERE p.proxy = $1);

-- name: add_proxy
INSERT INTO proxies (proxy, root, created_by) VALUES ($1, $2, $3)
ON CONFLICT ON CONSTRAINT proxies_pkey DO NOTHING;

-- name: remove_proxy
-- The caller's proxy, or any proxy for an administrator ($3).
DELETE FROM proxies p WHERE p.proxy = $1 AND (p.root = $2 OR $3)
RETURNING p.proxy;
