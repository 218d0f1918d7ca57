-- Identities: a role, or the root a registered proxy acts for (identity(), src/api/identity.rs),
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

CREATE FUNCTION jobs_add_proxy(proxy regrole, root regrole DEFAULT NULL) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_add_proxy';
COMMENT ON FUNCTION jobs_add_proxy IS
    'Registers a role as acting for a root identity (default: the caller''s): what it creates is '
    'the root''s, and it sees what the root sees.';

CREATE FUNCTION jobs_remove_proxy(proxy regrole) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_remove_proxy';
COMMENT ON FUNCTION jobs_remove_proxy IS 'Ends a proxy: from its next statement on it sees nothing of its root''s.';
