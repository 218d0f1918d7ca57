-- Joining a compute group by a signature of its join_address (seed 000's joinAddress), as member
-- roles: a worker asks for a challenge, signs it with the address's key (personal_sign) and
-- joins. Refused: a replayed, expired, other group's or other worker's challenge, a signature by
-- another key, a group without an address or that does not exist, a malformed signature, more
-- than 16 challenges at once; the address a group's owner sets is checked. Who reads challenges.
--
-- The signatures below were made with pg_jobs_core::eth::sign over the fixed texts that the
-- challenges are given here (an issued challenge's text is random): key A, whose address is
-- 0x2c7536E3605D9C16a7a3D7b1898e529396a65c23 (web3.js's documented example key), and key B.
\set text_1 'pg_jobs regress challenge 1'
\set text_2 'pg_jobs regress challenge 2'
\set text_3 'pg_jobs regress challenge 3'
\set text_4 'pg_jobs regress challenge 4'
\set sig_a1 '0xf880e2c355c28497bf7fe8ddd89373bdb76d3e4e4e9a0a968907e6a2aaa492b834c1d1634962664e0812afd8f75013babf30e2ad7c81e74136f604687dd0999b1b'
\set sig_b1 '0x1a717056d0f893eb6f480ec21ec3114df711fcd2b309ae2315a61d0cfb3ea3f4355aba877b05a0fcbb59ba0b4189f62cd05dacf79f5c7910e18d305e8dd4ed2c1b'
\set sig_a2 '0x91c6b076c282dd008909a68fd8d7a01ed46ed819d35817a02ad4df60afae21f77d7cd462b0e442c4acdfe6c7224ca09d9ff13b32d7e9cf5999ff8ecac4d420dc1c'
\set sig_a3 '0x9136ebc73cb3cf4448a6e1f543c54cd678c95758bd8ecf73870d0976bd47f1f36707da492461a0eb055208635193304f2d64d8915a37483b6e57fb6d5881ae7e1b'
\set sig_a4 '0xebe1373a8d85d31667fc2e25584646e064f4161219015d95e75974392dd7d3480309c7bd83afcfe9be39c8442a8342b84091d5248a768d70f3f4f761efe05de71c'

SELECT regress.reset();
CREATE ROLE regress_js_group_owner;
CREATE ROLE regress_js_w1;
CREATE ROLE regress_js_w2;
CREATE ROLE regress_js_stranger;  -- not a member of pgjobs_user
GRANT pgjobs_user TO regress_js_group_owner, regress_js_w1, regress_js_w2;

-- Signed takes joiners signed by key A; Twin has the same address, in lower case; Plain has none.
INSERT INTO pgjobs.compute_groups (owner, name, join_address)
VALUES ('regress_js_group_owner'::regrole, 'Signed', '0x2c7536E3605D9C16a7a3D7b1898e529396a65c23')
RETURNING id AS g_signed, opaque_id AS g_signed_opaque \gset
INSERT INTO pgjobs.compute_groups (owner, name, join_address)
VALUES ('regress_js_group_owner'::regrole, 'Twin', '0x2c7536e3605d9c16a7a3d7b1898e529396a65c23')
RETURNING opaque_id AS g_twin_opaque \gset
INSERT INTO pgjobs.compute_groups (owner, name)
VALUES ('regress_js_group_owner'::regrole, 'Plain')
RETURNING opaque_id AS g_plain_opaque \gset
SELECT role, regress.as_role(role, $$SELECT pgjobs.compute_worker_register('host') IS NOT NULL$$) AS registered
FROM (VALUES ('regress_js_w1'), ('regress_js_w2')) AS r(role);

-- Issues a challenge to a worker for a group, then gives it the fixed text its signature was
-- made over.
CREATE FUNCTION regress.js_challenge(role text, group_opaque_id uuid, fixed text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM regress.as_role(role, format('SELECT pgjobs.compute_worker_join_challenge(%L)', group_opaque_id));
    UPDATE pgjobs.compute_join_challenges c SET challenge = fixed
    FROM pgjobs.workers w
    WHERE w.identity = role::regrole AND c.worker_opaque_id = w.opaque_id AND c.group_opaque_id = js_challenge.group_opaque_id;
    RETURN fixed;
END
$$;
-- The challenges and the groups' workers, to show that a refused call changed nothing.
CREATE FUNCTION regress.js_fingerprint() RETURNS text
LANGUAGE sql AS $$
    SELECT md5(concat_ws('|',
        (SELECT string_agg(c::text, ',' ORDER BY c.challenge) FROM pgjobs.compute_join_challenges c),
        (SELECT string_agg(m::text, ',' ORDER BY m.worker_opaque_id, m.compute_group_id) FROM pgjobs.compute_group_workers m)))
$$;
-- A result with the groups' opaque ids (new each run) replaced by their names.
CREATE FUNCTION regress.js_named(result text) RETURNS text
LANGUAGE sql AS $$
    SELECT coalesce((SELECT replace(replace(replace(result, s.opaque_id::text, '<Signed>'), t.opaque_id::text, '<Twin>'),
                                    p.opaque_id::text, '<Plain>')
                     FROM pgjobs.compute_groups s, pgjobs.compute_groups t, pgjobs.compute_groups p
                     WHERE s.name = 'Signed' AND t.name = 'Twin' AND p.name = 'Plain'), result)
$$;
-- What joined: each worker's groups.
CREATE VIEW regress.js_members AS
SELECT w.identity::regrole AS worker, g.name AS compute_group
FROM pgjobs.compute_group_workers m JOIN pgjobs.workers w ON w.opaque_id = m.worker_opaque_id
JOIN pgjobs.compute_groups g ON g.id = m.compute_group_id;
-- Each challenge: whose, for which group, how long it is valid.
CREATE VIEW regress.js_challenges AS
SELECT w.identity::regrole AS worker, coalesce(g.name, 'no such group') AS compute_group,
       c.expires_at - now() <= interval '5 minutes' AND c.expires_at > now() AS valid
FROM pgjobs.compute_join_challenges c JOIN pgjobs.workers w ON w.opaque_id = c.worker_opaque_id
LEFT JOIN pgjobs.compute_groups g ON g.opaque_id = c.group_opaque_id;

-- An issued challenge: its text names the group and the worker; it is valid for 5 minutes.
SELECT regress.as_role('regress_js_w1', format($$
    SELECT challenge ~ ('^pg_jobs: join compute group ' || %L || ' as worker [0-9a-f-]{36}, challenge [0-9a-f]{32}$')
           AND expires_at = statement_timestamp() + interval '5 minutes'
    FROM pgjobs.compute_worker_join_challenge(%L)$$, :'g_signed_opaque', :'g_signed_opaque')) AS issued;
-- Asking again replaces it: one challenge per worker and group.
SELECT regress.as_role('regress_js_w1', format($$SELECT challenge FROM pgjobs.compute_worker_join_challenge(%L)$$, :'g_signed_opaque')) AS second \gset
SELECT count(*) AS challenges, bool_and(challenge = :'second') AS the_second FROM pgjobs.compute_join_challenges;
SELECT regress.js_challenge('regress_js_w1', :'g_signed_opaque', :'text_1') AS fixed;

-- Refused, and nothing changes (the challenge stays): a malformed signature (22023), a null
-- argument (22004), a signature by key B, the challenge given for Twin (issued for Signed), and
-- the challenge used by another worker.
SELECT regress.js_fingerprint() AS before \gset
SELECT role, regress.js_named(statement) AS statement, regress.js_named(regress.as_role(role, statement)) AS result
FROM (VALUES
    ('regress_js_w1', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L)', :'g_signed_opaque', :'text_1', '')),
    ('regress_js_w1', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L)', :'g_signed_opaque', :'text_1', '0x1234')),
    ('regress_js_w1', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L)', :'g_signed_opaque', :'text_1', substr(:'sig_a1', 3))),
    ('regress_js_w1', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L)', :'g_signed_opaque', :'text_1', left(:'sig_a1', 130) || '1d')),
    ('regress_js_w1', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L)', :'g_signed_opaque', :'text_1', left(:'sig_a1', 130) || 'zz')),
    ('regress_js_w1', format('SELECT pgjobs.compute_worker_join_signed(NULL, %L, %L)', :'text_1', :'sig_a1')),
    ('regress_js_w1', format('SELECT pgjobs.compute_worker_join_signed(%L, NULL, %L)', :'g_signed_opaque', :'sig_a1')),
    ('regress_js_w1', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, NULL)', :'g_signed_opaque', :'text_1')),
    ('regress_js_w1', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L)', :'g_signed_opaque', :'text_1', :'sig_b1')),
    ('regress_js_w1', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L)', :'g_twin_opaque', :'text_1', :'sig_a1')),
    ('regress_js_w2', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L)', :'g_signed_opaque', :'text_1', :'sig_a1'))
) AS s(role, statement);
SELECT regress.js_fingerprint() = :'before' AS unchanged;
SELECT * FROM regress.js_challenges;

-- Signed by key A, for Signed, by the worker it was issued to: joined, the challenge used up.
SELECT regress.as_role('regress_js_w1', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L) = %s', :'g_signed_opaque', :'text_1', :'sig_a1', :'g_signed')) AS joined;
SELECT * FROM regress.js_members;
SELECT count(*) AS challenges_left FROM pgjobs.compute_join_challenges;
-- Replayed: refused.
SELECT regress.as_role('regress_js_w1', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L)', :'g_signed_opaque', :'text_1', :'sig_a1')) AS replayed;

-- Expired: refused.
SELECT regress.js_challenge('regress_js_w2', :'g_signed_opaque', :'text_2') AS fixed;
UPDATE pgjobs.compute_join_challenges SET expires_at = now() - interval '1 second' WHERE challenge = :'text_2';
SELECT regress.as_role('regress_js_w2', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L)', :'g_signed_opaque', :'text_2', :'sig_a2')) AS expired;
-- The next challenge drops the worker's expired ones.
SELECT regress.js_challenge('regress_js_w2', :'g_plain_opaque', :'text_3') AS fixed;
SELECT * FROM regress.js_challenges ORDER BY worker, compute_group;
-- A group without an address, and one that does not exist, answer as a wrong signature does.
SELECT regress.js_named(regress.as_role('regress_js_w2', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L)', :'g_plain_opaque', :'text_3', :'sig_a3'))) AS no_address;
SELECT regress.js_challenge('regress_js_w2', '00000000-0000-7000-8000-000000000000', :'text_4') AS fixed;
SELECT regress.as_role('regress_js_w2', format('SELECT pgjobs.compute_worker_join_signed(%L, %L, %L)', '00000000-0000-7000-8000-000000000000', :'text_4', :'sig_a4')) AS no_group;
SELECT * FROM regress.js_members;

-- At most 16 challenges a worker, each for another group; asking again for one replaces it.
SELECT regress.as_role('regress_js_w1', $$
    SELECT count(*) FROM generate_series(1, 16) n, pgjobs.compute_worker_join_challenge(('00000000-0000-7000-8000-' || lpad(n::text, 12, '0'))::uuid)$$) AS issued;
SELECT regress.as_role('regress_js_w1', format('SELECT count(*) FROM pgjobs.compute_worker_join_challenge(%L)', :'g_twin_opaque')) AS seventeenth;
SELECT regress.as_role('regress_js_w1', $$SELECT count(*) FROM pgjobs.compute_worker_join_challenge('00000000-0000-7000-8000-000000000001')$$) AS again;
SELECT worker, count(*) FROM regress.js_challenges GROUP BY worker ORDER BY worker;

-- Who reads challenges: each worker its own; the group's owner none; a role outside
-- pgjobs_user neither reads nor asks; a member not registered as a worker is told to register.
SELECT role, regress.as_role(role, 'SELECT count(*) FROM pgjobs.compute_join_challenges') AS sees,
       regress.as_role(role, format('SELECT count(*) FROM pgjobs.compute_worker_join_challenge(%L)', :'g_signed_opaque')) AS asks
FROM (VALUES ('regress_js_w1'), ('regress_js_w2'), ('regress_js_group_owner'), ('regress_js_stranger')) AS r(role);
-- Members write the table only through the functions.
SELECT statement, regress.as_role('regress_js_w1', statement) AS result
FROM (VALUES ('UPDATE pgjobs.compute_join_challenges SET expires_at = now() + interval ''1 day'''),
             ('DELETE FROM pgjobs.compute_join_challenges'),
             ('INSERT INTO pgjobs.compute_join_challenges SELECT * FROM pgjobs.compute_join_challenges')) AS s(statement);

-- The join address a group's owner sets: in one case or with its checksum, or null; anything
-- else is refused with 22023 and leaves the group as it was.
SELECT address, regress.as_role('regress_js_group_owner',
           format('UPDATE pgjobs.compute_groups SET join_address = %L WHERE name = ''Twin'' RETURNING join_address IS NOT DISTINCT FROM %L', address, address)) AS result
FROM (VALUES ('0x2C7536E3605D9C16A7A3D7B1898E529396A65C23'),
             ('0x2c7536e3605d9c16a7a3d7b1898e529396a65c23'),
             ('0x2c7536E3605D9C16a7a3D7b1898e529396a65c23'),
             ('0x2c7536E3605D9C16a7a3D7b1898e529396a65C23'),
             ('2c7536E3605D9C16a7a3D7b1898e529396a65c23'),
             ('0x2c7536E3605D9C16a7a3D7b1898e529396a65c2'),
             ('0x2c7536E3605D9C16a7a3D7b1898e529396a65c2g'),
             (''),
             (NULL)) AS a(address);
SELECT name, join_address FROM pgjobs.compute_groups ORDER BY name;
SELECT regress.error_of($$INSERT INTO pgjobs.compute_groups (owner, name, join_address) VALUES (10, 'Bad', '0xabc')$$) AS as_superuser;

DROP VIEW regress.js_members, regress.js_challenges;
DROP FUNCTION regress.js_challenge(text, uuid, text), regress.js_fingerprint(), regress.js_named(text);
DELETE FROM pgjobs.workers WHERE identity IN ('regress_js_w1'::regrole, 'regress_js_w2'::regrole);
DELETE FROM pgjobs.compute_groups WHERE owner = 'regress_js_group_owner'::regrole;
DROP ROLE regress_js_group_owner, regress_js_w1, regress_js_w2, regress_js_stranger;
