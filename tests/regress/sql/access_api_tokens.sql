-- API tokens, as non-superuser roles: a member makes a token (shown once, kept as a hash), sees
-- its own tokens only, and revokes its own; the web server's role (a member of pgjobs_api) learns
-- the role a live token acts as and may then act as it, and as no role without a live token.
-- Refused: a revoked or unknown token (28000), another's token (P0002), a label empty or over 200
-- bytes (22023), a superuser, a role that bypasses row-level security and the web server's own
-- role (42501), members calling what is the web server's (42501).
CREATE ROLE regress_tokens_ana IN ROLE pgjobs_user;
CREATE ROLE regress_tokens_bob IN ROLE pgjobs_user;
CREATE ROLE regress_tokens_bypass BYPASSRLS IN ROLE pgjobs_user;
CREATE ROLE regress_tokens_web IN ROLE pgjobs_api, pgjobs_user;
GRANT USAGE ON SCHEMA regress TO regress_tokens_ana, regress_tokens_bob, regress_tokens_web;
CREATE FUNCTION regress.api_member(role text) RETURNS boolean
LANGUAGE sql AS $$
    SELECT EXISTS (SELECT FROM pg_auth_members m
                   WHERE m.roleid = role::regrole AND m.member = 'pgjobs_api'::regrole)
$$;

-- Made: the token once, its hash kept; pgjobs_api now a member of the role.
SET ROLE regress_tokens_ana;
SELECT id AS first_id, token AS first_token FROM pgjobs.jobs_api_token_create('nightly report') \gset
SELECT :'first_token' ~ '^pgjobs_[0-9a-f]{64}$' AS token_shape;
SELECT id AS second_id, token AS second_token FROM pgjobs.jobs_api_token_create('dashboard') \gset
SELECT label, role, last_used_at, revoked_at FROM pgjobs.jobs_api_tokens ORDER BY id;
SELECT regress.error_of('SELECT hash FROM pgjobs.api_tokens') AS hash_unreadable;
RESET ROLE;
SELECT count(*) AS stored, bool_and(hash = sha256(convert_to(:'first_token', 'UTF8')) OR id <> :first_id) AS kept_as_hash
FROM pgjobs.api_tokens;
SELECT regress.api_member('regress_tokens_ana') AS api_member;
SELECT regress.as_role('regress_tokens_bob', 'SELECT count(*) FROM pgjobs.jobs_api_tokens') AS bob_sees;

-- The web server's role, logged in as itself (SET ROLE is checked against the session's user):
-- the token's role, and then it acts as it (its jobs are ana's); not as bob, who has no token.
SET SESSION AUTHORIZATION regress_tokens_web;
SELECT pgjobs._api_token_role(:'first_token') AS acts_as;
SELECT set_config('role', pgjobs._api_token_role(:'first_token'), false) IS NOT NULL AS role_set;
SELECT current_user, pgjobs.jobs_add('by token', queue => 'tokens') IS NOT NULL AS added;
RESET ROLE;
SELECT regress.error_of('SELECT set_config(''role'', ''regress_tokens_bob'', false)') AS act_as_bob;
RESET SESSION AUTHORIZATION;
SELECT owner::regrole AS job_owner FROM pgjobs.jobs WHERE queue = 'tokens';
-- A token acts while its role has the name it had when it was made (not for a role that took a
-- dropped one's oid, nor for whichever role has its number after a restore into another
-- cluster): renamed, the role's tokens are refused; named back, they act again.
ALTER ROLE regress_tokens_ana RENAME TO regress_tokens_anna;
SELECT regress.as_role('regress_tokens_web', format('SELECT pgjobs._api_token_role(%L)', :'first_token')) AS renamed;
ALTER ROLE regress_tokens_anna RENAME TO regress_tokens_ana;
SELECT regress.as_role('regress_tokens_web', format('SELECT pgjobs._api_token_role(%L)', :'first_token')) AS named_back;
-- Given BYPASSRLS after its token was made, the role's token is refused as its making would be.
ALTER ROLE regress_tokens_ana BYPASSRLS;
SELECT regress.as_role('regress_tokens_web', format('SELECT pgjobs._api_token_role(%L)', :'first_token')) AS bypassing;
ALTER ROLE regress_tokens_ana NOBYPASSRLS;
SELECT last_used_at IS NOT NULL AS use_noted FROM pgjobs.api_tokens WHERE id = :first_id;

-- Refused, nothing changed.
SELECT count(*) AS tokens_before FROM pgjobs.api_tokens \gset
SELECT what, regress.as_role(role, call) AS refused
FROM (VALUES
    ('an empty label', 'regress_tokens_ana', 'SELECT id FROM pgjobs.jobs_api_token_create('''')'),
    ('a blank label', 'regress_tokens_ana', 'SELECT id FROM pgjobs.jobs_api_token_create(''   '')'),
    ('a null label', 'regress_tokens_ana', 'SELECT id FROM pgjobs.jobs_api_token_create(NULL)'),
    ('a label of 201 bytes', 'regress_tokens_ana', 'SELECT id FROM pgjobs.jobs_api_token_create(repeat(''x'', 201))'),
    ('a role that bypasses RLS', 'regress_tokens_bypass', 'SELECT id FROM pgjobs.jobs_api_token_create(''x'')'),
    ('the web server''s role', 'regress_tokens_web', 'SELECT id FROM pgjobs.jobs_api_token_create(''x'')'),
    ('another''s token revoked', 'regress_tokens_bob', format('SELECT pgjobs.jobs_api_token_revoke(%s)', :first_id)),
    ('a null id', 'regress_tokens_ana', 'SELECT pgjobs.jobs_api_token_revoke(NULL)'),
    ('a member asks for a token''s role', 'regress_tokens_ana', format('SELECT pgjobs._api_token_role(%L)', :'first_token')),
    ('an unknown token', 'regress_tokens_web', 'SELECT pgjobs._api_token_role(''pgjobs_00'')'),
    ('a null token', 'regress_tokens_web', 'SELECT pgjobs._api_token_role(NULL)'))
    AS c(what, role, call);
SELECT regress.error_of('SELECT id FROM pgjobs.jobs_api_token_create(''as a superuser'')') AS superuser;
SELECT count(*) = :tokens_before AS unchanged FROM pgjobs.api_tokens;

-- Revoked: refused from then on; revoking again changes nothing; the role's last token revoked,
-- pgjobs_api is no longer its member and the web server cannot act as it.
SELECT regress.as_role('regress_tokens_ana', format('SELECT pgjobs.jobs_api_token_revoke(%s)', :first_id)) AS revoked;
SELECT regress.as_role('regress_tokens_ana', format('SELECT pgjobs.jobs_api_token_revoke(%s)', :first_id)) AS revoked_again;
SELECT regress.as_role('regress_tokens_web', format('SELECT pgjobs._api_token_role(%L)', :'first_token')) AS revoked_token;
SELECT regress.api_member('regress_tokens_ana') AS still_member_with_a_live_token;
SELECT regress.as_role('regress_tokens_ana', format('SELECT pgjobs.jobs_api_token_revoke(%s)', :second_id)) AS last_revoked;
SELECT regress.api_member('regress_tokens_ana') AS member_after_the_last;
SET SESSION AUTHORIZATION regress_tokens_web;
SELECT regress.error_of('SELECT set_config(''role'', ''regress_tokens_ana'', false)') AS act_as_ana;
RESET SESSION AUTHORIZATION;
SELECT label, revoked_at IS NOT NULL AS revoked FROM pgjobs.api_tokens ORDER BY id;

TRUNCATE pgjobs.api_tokens;
SELECT regress.reset();
DROP FUNCTION regress.api_member(text);
DROP OWNED BY regress_tokens_ana, regress_tokens_bob, regress_tokens_bypass, regress_tokens_web;
DROP ROLE regress_tokens_ana, regress_tokens_bob, regress_tokens_bypass, regress_tokens_web;
