-- Every public function, called by a member (or an agent, for the agents' calls) with an extreme
-- value in each argument in turn, the others left to their defaults or given a plain value: none
-- answers with an internal error (XX000: a panic, as pgrx's JsonB gave for JSON serde_json cannot
-- hold), an index's refusal of a value too long for it (54000: a member's queue name of 3 kB once
-- made a job that could never end), or a missing object or column in its own SQL. The right
-- refusals (22023 and the rest) are other tests' subject; this one only finds the wrong ones.
-- Everything is rolled back, and the extension's sequences are set back as they were (a rollback
-- leaves them advanced, and later tests print ids).
CREATE TEMP TABLE sequences_before AS
SELECT format('%I.%I', schemaname, sequencename) AS sequence, last_value, last_value IS NOT NULL AS called
FROM pg_sequences WHERE schemaname = 'pgjobs';
BEGIN;
CREATE ROLE regress_extreme IN ROLE pgjobs_user;
CREATE ROLE regress_extreme_agent IN ROLE pgjobs_agent;
-- A computer and a compute worker named as the plain text is ('x'), so that their calls go past
-- "unknown computer" and "not a registered worker".
SELECT regress.as_role('regress_extreme_agent', $$SELECT pgjobs.batch_register('x')$$) NOT LIKE 'ERROR%' AS computer,
       regress.as_role('regress_extreme', $$SELECT pgjobs.compute_worker_register('x')::text$$) NOT LIKE 'ERROR%' AS worker;

-- A plain value of each type, for an argument without a default.
CREATE TEMP TABLE plain (type regtype PRIMARY KEY, value text);
INSERT INTO plain VALUES
    ('integer', '1'), ('bigint', '1'), ('double precision', '1'), ('numeric', '1'), ('boolean', 'false'),
    ('text', '''x'''), ('jsonb', '''{}'''), ('uuid', 'gen_random_uuid()'), ('date', 'current_date'),
    ('timestamptz', 'now()'), ('interval', '''1 minute'''), ('regrole', 'current_user::regrole'),
    ('text[]', '''{x}'''), ('integer[]', '''{1}'''), ('bigint[]', '''{1}'''), ('uuid[]', 'ARRAY[gen_random_uuid()]'),
    ('jsonb[]', 'ARRAY[''{}''::jsonb]'), ('double precision[]', '''{1}'''), ('pgjobs.job_status', '''created''');

-- Where the plain value of the type is refused before anything else is read, one that is not.
CREATE TEMP TABLE plain_for (function name, argument name, value text);
INSERT INTO plain_for VALUES
    ('jobs_schedule', 'schedule', '''* * * * *'''), ('jobs_schedule', 'work', '''{"task": "t"}'''),
    ('jobs_add_batch', 'jobs', '''[{"task": "t"}]'''), ('jobs_add_sql', 'sql', '''SELECT 1'''),
    ('jobs_queue_history', 'keep', '''all'''), ('batch_post_many', 'posts', '''[{"command": "x"}]'''),
    ('batch_group_jobs', 'by', '''routine'''), ('routine_message', 'level', '''info'''),
    ('compute_deploy', 'spec', '''{"work": "(x) => x", "input": {"range": {"start": 1, "end": 2}}, "offer": 0}''');

-- The extreme values of each type.
CREATE TEMP TABLE extreme (type regtype, value text);
INSERT INTO extreme VALUES
    ('integer', '0'), ('integer', '-1'), ('integer', '2147483647'), ('integer', '(-2147483648)'),
    ('bigint', '0'), ('bigint', '-1'), ('bigint', '9223372036854775807'), ('bigint', '(-9223372036854775808)'),
    ('double precision', '''NaN'''), ('double precision', '''-Infinity'''), ('double precision', '1e300'),
    ('numeric', '''NaN'''), ('numeric', '''Infinity'''), ('numeric', '1e300'), ('numeric', '-1'),
    ('text', ''''''), ('text', 'repeat(''x'', 100000)'), ('text', 'chr(1)'),
    ('text', '(SELECT string_agg(md5(i::text), '''') FROM generate_series(1, 100) i)'),
    ('jsonb', '''null'''), ('jsonb', '''[]'''), ('jsonb', '''"x"'''), ('jsonb', '''{"a": 1e1000}'''),
    ('jsonb', '(repeat(''['', 200) || repeat('']'', 200))'),
    ('uuid', '''00000000-0000-0000-0000-000000000000'''),
    ('date', '''infinity'''), ('date', '''5874897-12-31'''), ('date', '''4713-01-01 BC'''),
    ('timestamptz', '''infinity'''), ('timestamptz', '''-infinity'''), ('timestamptz', '''294276-12-31'''),
    ('timestamptz', '''4713-01-01 BC'''),
    ('interval', '''-1 second'''), ('interval', '''178000000 years'''), ('interval', '''0'''),
    ('text[]', '''{}'''), ('text[]', '''{NULL}'''), ('text[]', '''{{a,b},{c,d}}'''),
    ('text[]', 'array_fill(''x''::text, ARRAY[10000])'),
    ('integer[]', '''{}'''), ('integer[]', '''{NULL}'''), ('integer[]', '''{-1}'''), ('integer[]', '''{{1,2},{3,4}}'''),
    ('bigint[]', '''{}'''), ('bigint[]', '''{NULL}'''), ('bigint[]', '''{-1}'''), ('bigint[]', '''{{1,2},{3,4}}'''),
    ('uuid[]', '''{}'''), ('uuid[]', '''{NULL}'''),
    ('jsonb[]', '''{NULL}'''), ('jsonb[]', 'ARRAY[''{"a": 1e1000}''::jsonb]'),
    ('double precision[]', '''{NaN}'''), ('double precision[]', '''{Infinity}'''), ('double precision[]', '''{NULL}'''),
    ('boolean', 'NULL'), ('regrole', '''pg_monitor''');

-- The calls: each public function (but jobs_wait, which waits its timeout), with one argument
-- extreme and every argument without a default plain; as the role that may call it.
CREATE TEMP TABLE calls AS
SELECT p.oid::regprocedure::text AS function, a.name AS argument, e.value,
       CASE WHEN has_function_privilege('pgjobs_user', p.oid, 'EXECUTE') THEN 'regress_extreme'
            ELSE 'regress_extreme_agent' END AS role,
       format('SELECT count(*)::text FROM (SELECT pgjobs.%I(%s)) s', p.proname,
              (SELECT string_agg(format('%I => %s::%s', b.name,
                                        CASE WHEN b.n = a.n THEN e.value ELSE coalesce(f.value, pl.value) END,
                                        b.type::regtype), ', ' ORDER BY b.n)
               FROM unnest(p.proargtypes::oid[], p.proargnames[1:p.pronargs]) WITH ORDINALITY b(type, name, n)
               LEFT JOIN plain pl ON pl.type = b.type
               LEFT JOIN plain_for f ON f.function = p.proname AND f.argument = b.name
               WHERE b.n = a.n OR b.n <= p.pronargs - p.pronargdefaults)) AS statement
FROM pg_proc p
CROSS JOIN LATERAL unnest(p.proargtypes::oid[], p.proargnames[1:p.pronargs]) WITH ORDINALITY a(type, name, n)
JOIN extreme e ON e.type = a.type
WHERE p.pronamespace = 'pgjobs'::regnamespace AND p.proname !~ '^_' AND p.proname <> 'jobs_wait'
  AND (has_function_privilege('pgjobs_user', p.oid, 'EXECUTE')
       OR has_function_privilege('pgjobs_agent', p.oid, 'EXECUTE'));

-- Enough of them to mean something, and every one answered as it should: no rows below.
SELECT count(*) > 1000 AS many_calls, count(DISTINCT function) > 90 AS most_functions FROM calls;
SELECT function, argument, value, answer
FROM (SELECT c.*, regress.as_role(c.role, c.statement) AS answer FROM calls c) c
WHERE answer ~ '^ERROR (XX|54|42883|42703|42P01|42804|42P18|42725)';
ROLLBACK;
SELECT count(setval(sequence, coalesce(last_value, 1), called)) > 0 AS sequences_set_back FROM sequences_before;
