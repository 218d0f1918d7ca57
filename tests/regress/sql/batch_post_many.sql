-- Many posts in one call (batch_post_many): what batch_post would do one post after another, in
-- order; "after" for the posts of the same call a post waits for; every refusal changing nothing.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.job_dependencies, pgjobs.batch_computers;
CREATE ROLE regress_many IN ROLE pgjobs_user;
CREATE ROLE regress_many_stranger IN ROLE pgjobs_user;
INSERT INTO pgjobs.batch_computers (computer, agent, capacity) VALUES ('alpha', 10, 2);
SET ROLE regress_many;

-- Ids in the order given; each field as batch_post's argument, its default when left out or null.
SELECT array_agg(id ORDER BY n) AS ids
FROM pgjobs.batch_post_many($$[
    {"command": "backup", "args": ["--full"], "priority": 5},
    {"command": "report", "computer": "alpha", "routine": "daily", "revision": {"commit": "abc1"},
     "env": {"LANG": "C.UTF-8"}, "max_attempts": 3, "shell": null, "cwd": "/srv"},
    {"command": "", "kind": "kill", "routine": "daily", "computer": "alpha"},
    {"command": "later", "run_at": "2100-01-01T00:00:00Z"}
]$$) WITH ORDINALITY AS p(id, n);
SELECT id, status, kind, computer, routine, command, args, priority, cwd, shell, revision
FROM pgjobs.batch_jobs ORDER BY id;
SELECT id, max_attempts, run_at = '2100-01-01' AS later, payload -> 'env' AS env FROM pgjobs.jobs ORDER BY id;
-- The same commands through batch_post are the same jobs (one active job per command: its hash).
SELECT pgjobs.batch_post('backup', ARRAY['--full'], priority => 1) AS backup_again,
       pgjobs.batch_post('report', computer => 'alpha', routine => 'daily', cwd => '/srv',
                         env => '{"LANG": "C.UTF-8"}') AS report_again;
SELECT id, priority FROM pgjobs.batch_jobs WHERE command = 'backup';

-- A command again in the same call, or one whose job waits: replaced, the same id, the last
-- post's settings; a new command beside them is a new job.
SELECT array_agg(id ORDER BY n) AS ids
FROM pgjobs.batch_post_many($$[
    {"command": "backup", "args": ["--full"], "priority": 7},
    {"command": "fresh"},
    {"command": "fresh", "priority": 9}
]$$) WITH ORDINALITY AS p(id, n);
SELECT id, command, priority FROM pgjobs.batch_jobs ORDER BY id;
-- A command again after a run has begun behind it: every post has its job.
SELECT count(*) AS posts, count(DISTINCT id) AS jobs,
       (array_agg(id ORDER BY n))[1] = (array_agg(id ORDER BY n))[4] AS again_is_the_same_job
FROM pgjobs.batch_post_many($$[
    {"command": "again"},
    {"command": "between-1", "after": [1]},
    {"command": "between-2"},
    {"command": "again", "priority": 3}
]$$) WITH ORDINALITY AS p(id, n);
SELECT command, priority FROM pgjobs.batch_jobs WHERE command IN ('again', 'between-1', 'between-2') ORDER BY command;

-- Dependencies: "after" names earlier posts of the call by their places, depends_on jobs by id
-- or by command hash (of a post before it in the call too).
SELECT array_agg(id ORDER BY n) AS ids
FROM pgjobs.batch_post_many(format($$[
    {"command": "extract"},
    {"command": "transform", "after": [1]},
    {"command": "load", "after": [2], "depends_on": ["1"]},
    {"command": "notify", "depends_on": ["%s"]}
]$$, (SELECT encode(sha256(convert_to(jsonb_build_object('kind', 'batch', 'computer', 'ANY', 'routine', NULL,
                                                           'command', 'extract', 'args', '[]'::jsonb, 'cwd', NULL,
                                                           'shell', false, 'env', '{}'::jsonb)::text, 'UTF8')), 'hex')))::jsonb)
    WITH ORDINALITY AS p(id, n);
SELECT b.command, b.status, b.depends_on,
       (SELECT array_agg(d.on_job ORDER BY d.on_job) FROM pgjobs.job_dependencies d WHERE d.job_id = b.id) AS waits_for
FROM pgjobs.batch_jobs b WHERE b.command IN ('extract', 'transform', 'load', 'notify') ORDER BY b.id;
SELECT hash = (SELECT hash FROM pgjobs.batch_jobs WHERE command = 'extract') AS hash_as_computed
FROM pgjobs.batch_jobs WHERE command = 'extract';
-- A command's hash is the server's SHA-256 of the command as jsonb prints it (written in Rust,
-- src/api/batch_post.rs: CommandText), whatever its strings hold: quotes, backslashes, control
-- characters, DEL, letters outside ASCII, an env's keys of several lengths, a kill without a command;
-- and its payload (written beside it) is the spec with the revision, extra, dependencies and run_at
-- as jsonb_build_object gives them (the run_at in the session's time zone).
SET TimeZone = 'Asia/Tokyo';
SELECT $$[
    {"command": "say \"hi\"\\there", "args": ["a\nb", "tab\there", "\u0001\u001f\u007f", "é ☃ 😀", "/slash", ""],
     "cwd": "/tmp/x y", "shell": true, "routine": "r\r\f\b",
     "env": {"B": "2", "A": "1", "LONGER_NAME": "x\"y", "é": "\\", "AB": "tab\tend"},
     "run_at": "2100-01-01T00:00:00.5Z", "revision": {"b": 1, "a": [1.50, "x"]}, "extra": {"k": "v"}},
    {"kind": "kill", "routine": "nightly", "computer": "alpha"},
    {"command": "ünïcödé", "computer": "alpha", "args": []}
]$$ AS tricky \gset
SELECT array_agg(id ORDER BY n) AS tricky_ids FROM pgjobs.batch_post_many(:'tricky') WITH ORDINALITY AS p(id, n) \gset
SELECT p.n, j.hash = encode(sha256(convert_to(jsonb_build_object(
           'kind', coalesce(p.post ->> 'kind', 'batch'), 'computer', coalesce(p.post ->> 'computer', 'ANY'),
           'routine', p.post ->> 'routine',
           'command', CASE WHEN p.post ->> 'kind' = 'kill' THEN coalesce(p.post ->> 'command', '') ELSE p.post ->> 'command' END,
           'args', coalesce(p.post -> 'args', '[]'), 'cwd', p.post ->> 'cwd',
           'shell', coalesce((p.post ->> 'shell')::boolean, false), 'env', coalesce(p.post -> 'env', '{}'))::text,
           'UTF8')), 'hex') AS hash_as_the_server_computes,
       (SELECT x.payload FROM pgjobs.jobs x WHERE x.id = j.id) = jsonb_build_object(
           'kind', coalesce(p.post ->> 'kind', 'batch'), 'computer', coalesce(p.post ->> 'computer', 'ANY'),
           'routine', p.post ->> 'routine',
           'command', CASE WHEN p.post ->> 'kind' = 'kill' THEN coalesce(p.post ->> 'command', '') ELSE p.post ->> 'command' END,
           'args', coalesce(p.post -> 'args', '[]'), 'cwd', p.post ->> 'cwd',
           'shell', coalesce((p.post ->> 'shell')::boolean, false), 'env', coalesce(p.post -> 'env', '{}'))
       || jsonb_build_object('revision', p.post -> 'revision', 'extra', coalesce(p.post -> 'extra', '{}'),
                             'depends_on', '[]'::jsonb, 'run_at', (p.post ->> 'run_at')::timestamptz) AS payload_as_built
FROM jsonb_array_elements(:'tricky') WITH ORDINALITY AS p(post, n)
JOIN pgjobs.batch_jobs j ON j.id = (:'tricky_ids'::bigint[])[p.n]
ORDER BY p.n;
SET TimeZone = 'UTC';
-- An empty array posts nothing.
SELECT count(*) AS none FROM pgjobs.batch_post_many('[]');
-- The Jobs tab's counts follow every post.
RESET ROLE;
SELECT count(*) AS tally_differences FROM pgjobs._batch_tally_differences();

-- Refusals, each with its SQLSTATE, and nothing changed.
SELECT regress.fingerprint() AS before \gset
SET ROLE regress_many;
SELECT refusal, regress.error_of(format('SELECT count(*) FROM pgjobs.batch_post_many(%L)', posts)) AS error
FROM (VALUES
    ('not an array', '{"command": "x"}'),
    ('a scalar', '"x"'),
    ('null', NULL),
    ('not an object', '[{"command": "x"}, 1]'),
    ('unknown field', '[{"command": "x"}, {"command": "y", "depend_on": ["1"]}]'),
    ('unknown kind', '[{"command": "x"}, {"command": "y", "kind": "cron"}]'),
    ('empty command', '[{"command": "  "}]'),
    ('unknown computer', '[{"command": "x", "computer": "gamma"}]'),
    ('null in args', '[{"command": "x", "args": ["a", null]}]'),
    ('args of two dimensions', '[{"command": "x", "args": [["a"]]}]'),
    ('env not strings', '[{"command": "x", "env": {"A": 1}}]'),
    ('not an integer', '[{"command": "x", "max_attempts": "many"}]'),
    ('attempts', '[{"command": "x"}, {"command": "y", "max_attempts": 0}]'),
    ('not a time', '[{"command": "x", "run_at": "soon"}]'),
    ('an infinite time', '[{"command": "x", "run_at": "infinity"}]'),
    ('a number out of range', '[{"command": "x", "priority": 1e300}]'),
    ('after itself', '[{"command": "x", "after": [1]}]'),
    ('after a later post', '[{"command": "x", "after": [2]}, {"command": "y"}]'),
    ('after zero', '[{"command": "x"}, {"command": "y", "after": [0]}]'),
    ('after null', '[{"command": "x"}, {"command": "y", "after": [null]}]'),
    ('malformed dependency', '[{"command": "x", "depends_on": ["12abc"]}]'),
    ('unknown dependency', '[{"command": "x"}, {"command": "y", "depends_on": ["999"]}]'),
    ('unknown hash', format('[{"command": "x", "depends_on": ["%s"]}]', repeat('ab', 32)))
) AS r(refusal, posts);
RESET ROLE;
SELECT regress.fingerprint() = :'before' AS nothing_changed;
-- Another poster's job is refused as one that does not exist, and its command is another job.
SELECT regress.as_role('regress_many_stranger',
                       format($$SELECT count(*) FROM pgjobs.batch_post_many('[{"command": "x", "depends_on": ["%s"]}]')$$,
                              (SELECT id FROM pgjobs.batch_jobs WHERE command = 'backup'))) AS others_job;
SELECT regress.as_role('regress_many_stranger',
                       $$SELECT string_agg(p.id::text, ',') FROM pgjobs.batch_post_many('[{"command": "backup", "args": ["--full"], "priority": 7}]') AS p(id)$$)::bigint
       <> (SELECT id FROM pgjobs.batch_jobs WHERE command = 'backup' AND owner = 'regress_many'::regrole) AS its_own_job;

-- A thousand posts in one call: their jobs, their counts, and few locks held for them (besides
-- the locks of the tables and partitions read, as many for one post as for a thousand).
SET ROLE regress_many;
BEGIN;
SELECT count(*) AS posted
FROM pgjobs.batch_post_many((SELECT jsonb_agg(jsonb_build_object('command', 'bulk', 'args', jsonb_build_array(g::text),
                                                                 'after', CASE WHEN g % 100 = 0 THEN jsonb_build_array(g - 1) END))
                             FROM generate_series(1, 1000) g));
SELECT count(*) FILTER (WHERE locktype = 'advisory') <= 16 AS advisory_locks_bounded,
       count(*) FILTER (WHERE locktype <> 'relation') < 20 AS other_locks_bounded
FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;
SELECT status, count(*) FROM pgjobs.batch_jobs WHERE command = 'bulk' GROUP BY 1 ORDER BY 1;
RESET ROLE;
SELECT count(*) AS tally_differences FROM pgjobs._batch_tally_differences();
