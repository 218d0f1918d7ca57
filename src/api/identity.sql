-- The statements of src/api/identity.rs.

-- name: proxy_standing(proxy oid, root oid)
-- Whether the new root is itself a proxy, whether the proxy has proxies of its own, and whose
-- proxy it is now.
SELECT EXISTS (SELECT FROM proxies p WHERE p.proxy = $root),
       EXISTS (SELECT FROM proxies p WHERE p.root = $proxy),
       (SELECT p.root FROM proxies p WHERE p.proxy = $proxy);

-- name: add_proxy(proxy oid, root oid, created_by oid)
INSERT INTO proxies (proxy, root, created_by) VALUES ($proxy, $root, $created_by)
ON CONFLICT ON CONSTRAINT proxies_pkey DO NOTHING;

-- name: remove_proxy(proxy oid, root oid, admin boolean)
-- The caller's proxy, or any proxy for an administrator.
DELETE FROM proxies p WHERE p.proxy = $proxy AND (p.root = $root OR $admin)
RETURNING p.proxy;
