-- Identities: a role, or the root a registered proxy acts for (identity(), src/identity.rs),
-- and the proxies' functions.

-- A proxy acts for a root identity: what it creates is the root's, and it sees what the root
-- sees. Rows are written only through jobs_add_proxy and jobs_remove_proxy.
CREATE TABLE proxies (
    proxy       oid PRIMARY KEY,
    root        oid NOT NULL CHECK (root <> proxy),
    created_by  oid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX proxies_root ON proxies (root);

-- identity() answers from a cache in each backend; a change of proxies clears them all.
CREATE FUNCTION _proxies_changed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM _forget_identities();
    RETURN NULL;
END
$$;
CREATE TRIGGER proxies_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON proxies
    FOR EACH STATEMENT EXECUTE FUNCTION _proxies_changed();

COMMENT ON FUNCTION identity() IS
    'The identity of the current role: its root if it is a registered proxy, else itself. '
    'It owns what the current role creates.';

ALTER TABLE proxies ENABLE ROW LEVEL SECURITY;
-- Not through identity(), which reads this table: a role sees the rows naming it.
CREATE POLICY root_and_proxy_read ON proxies FOR SELECT
    USING ((SELECT _current_role()) IN (root, proxy));
GRANT SELECT ON proxies TO pgjobs_user;

-- Proxies: registered by their root (who must be a member of the proxy role, so that nobody
-- takes over what another role creates) or by an administrator.
-- (Run as the extension's owner by jobs_add_proxy, src/api/identity.rs.)
CREATE FUNCTION _add_proxy(caller_role oid, proxy regrole, root regrole) RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := _identity_of(caller_role);
    admin boolean := _is_admin(caller_role);
    new_root oid := coalesce(root::oid, caller);
    current_root oid;
BEGIN
    IF proxy IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed', MESSAGE = 'proxy must name a role';
    END IF;
    IF new_root <> caller AND NOT admin THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = 'only an administrator may register a proxy for another identity';
    END IF;
    IF NOT admin AND NOT pg_has_role(caller_role, proxy::oid, 'MEMBER') THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('you must be a member of role %s to register it as your proxy', proxy),
            HINT = format('An administrator can run GRANT %s TO %s.', proxy, caller_role::regrole);
    END IF;
    IF proxy::oid = new_root OR EXISTS (SELECT FROM proxies p WHERE p.proxy = new_root) THEN
        PERFORM _invalid(format('%s cannot act for %s: a root identity cannot be a proxy', proxy, new_root::regrole));
    END IF;
    IF _is_admin(proxy::oid) OR EXISTS (SELECT FROM proxies p WHERE p.root = _add_proxy.proxy::oid) THEN
        PERFORM _invalid(format('%s cannot be a proxy: it is a superuser or has proxies of its own', proxy));
    END IF;
    SELECT p.root INTO current_root FROM proxies p WHERE p.proxy = _add_proxy.proxy::oid;
    IF current_root IS NOT NULL AND current_root <> new_root THEN
        RAISE EXCEPTION USING ERRCODE = 'unique_violation',
            MESSAGE = format('%s is already a proxy of another identity', proxy),
            HINT = 'Its root (or an administrator) must remove it first.';
    END IF;
    INSERT INTO proxies (proxy, root, created_by) VALUES (proxy, new_root, caller_role)
    ON CONFLICT ON CONSTRAINT proxies_pkey DO NOTHING;
END
$$;

CREATE FUNCTION jobs_add_proxy(proxy regrole, root regrole DEFAULT NULL) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_add_proxy';
COMMENT ON FUNCTION jobs_add_proxy IS
    'Registers a role as acting for a root identity (default: the caller''s): what it creates is '
    'the root''s, and it sees what the root sees.';

CREATE FUNCTION _remove_proxy(caller_role oid, proxy regrole) RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := _identity_of(caller_role);
BEGIN
    DELETE FROM proxies p
    WHERE p.proxy = _remove_proxy.proxy::oid AND (p.root = caller OR _is_admin(caller_role));
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'no_data_found',
            MESSAGE = format('%s is not a proxy of yours', proxy);
    END IF;
END
$$;

CREATE FUNCTION jobs_remove_proxy(proxy regrole) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_remove_proxy';
COMMENT ON FUNCTION jobs_remove_proxy IS 'Ends a proxy: from its next statement on it sees nothing of its root''s.';
