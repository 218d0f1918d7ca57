-- Identities: a role, or the root a registered proxy acts for (identity(), src/api/identity.rs),
-- and the proxies' functions.

-- A proxy acts for a root identity: what it creates is the root's, and it sees what the root
-- sees. Rows are written only through jobs_add_proxy and jobs_remove_proxy.
CREATE TABLE proxies (
    proxy       regrole PRIMARY KEY,
    root        regrole NOT NULL CHECK (root <> proxy),
    created_by  regrole NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX proxies_root ON proxies (root);

-- identity() answers from a cache in each backend; a change of proxies clears them all.
CREATE TRIGGER proxies_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON proxies
    FOR EACH STATEMENT EXECUTE FUNCTION _cached_table_changed();

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
GRANT EXECUTE ON FUNCTION jobs_add_proxy TO pgjobs_user;

CREATE FUNCTION jobs_remove_proxy(proxy regrole) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_remove_proxy';
COMMENT ON FUNCTION jobs_remove_proxy IS 'Ends a proxy: from its next statement on it sees nothing of its root''s.';
GRANT EXECUTE ON FUNCTION jobs_remove_proxy TO pgjobs_user;

-- API tokens: a role's bearer credentials for the HTTP API of the SCHED page (web/), each
-- acting as the role that made it. The web server logs in as a role it is given, a member of
-- pgjobs_api, and for a request with a token sets its role to the token's (_api_token_role), as
-- PostgREST's authenticator does: pgjobs_api is made a member of each role while that role has a
-- live token, and of no other, so the server can act as nobody else. A token is shown once, when
-- it is made; only its SHA-256 is kept.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'pgjobs_api') THEN
        CREATE ROLE pgjobs_api NOLOGIN;
    END IF;
END
$$;
GRANT USAGE ON SCHEMA @extschema@ TO pgjobs_api;

CREATE TABLE api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    role         regrole NOT NULL,
    -- The role's name when the token was made: a token acts only while its role still has that
    -- name, so a role made later with a dropped one's oid cannot use it; a rename ends a role's
    -- tokens too.
    role_name    name NOT NULL,
    label        text NOT NULL,
    hash         bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- Written at most once a minute, by the request that finds it older.
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_tokens_role ON api_tokens (role) WHERE revoked_at IS NULL;
COMMENT ON TABLE api_tokens IS
    'The API tokens of each role (jobs_api_token_create, jobs_api_token_revoke): its label, when it '
    'was made, last used and revoked; the token itself is not kept, only its SHA-256. A token '
    'acts only while its role has the name it had when the token was made.';
ALTER TABLE api_tokens ENABLE ROW LEVEL SECURITY;
-- A token acts as its role, not as the role's identity: a proxy's tokens are its own.
CREATE POLICY role_reads ON api_tokens FOR SELECT USING (role = (SELECT _current_role()));
GRANT SELECT (id, role, label, created_at, last_used_at, revoked_at) ON api_tokens TO pgjobs_user;
CREATE VIEW jobs_api_tokens WITH (security_invoker = true) AS
SELECT t.id, t.role::regrole AS role, t.label, t.created_at, t.last_used_at, t.revoked_at
FROM api_tokens t;
COMMENT ON VIEW jobs_api_tokens IS 'The calling role''s API tokens, live and revoked.';
GRANT SELECT ON jobs_api_tokens TO pgjobs_user;

CREATE FUNCTION jobs_api_token_create(label text, OUT id bigint, OUT token text)
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_api_token_create';
COMMENT ON FUNCTION jobs_api_token_create IS
    'Makes an API token that acts as the calling role in the HTTP API (Authorization: Bearer). '
    'The token is returned this once; keep it secret. Not for a superuser or a role that bypasses '
    'row-level security.';
GRANT EXECUTE ON FUNCTION jobs_api_token_create TO pgjobs_user;

CREATE FUNCTION jobs_api_token_revoke(id bigint) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_api_token_revoke';
COMMENT ON FUNCTION jobs_api_token_revoke IS
    'Revokes one of the calling role''s API tokens: from its next request on it is refused.';
GRANT EXECUTE ON FUNCTION jobs_api_token_revoke TO pgjobs_user;

CREATE FUNCTION _api_token_role(token text) RETURNS text
LANGUAGE c AS 'MODULE_PATHNAME', '_api_token_role';
COMMENT ON FUNCTION _api_token_role IS
    'For the web server (a member of pgjobs_api): the role a live token acts as, for '
    'set_config(''role'', ...); a token unknown or revoked is refused (28000).';
GRANT EXECUTE ON FUNCTION _api_token_role TO pgjobs_api;
