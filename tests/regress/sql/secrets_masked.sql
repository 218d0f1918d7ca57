-- Secrets as members read them (pg_jobs_core::mask, one rule; its table of cases is the unit
-- test there): every view that shows a batch job's or a routine's arguments, environment,
-- command, output tails or errors shows each kind of secret masked. Every secret below is
-- S3CRET; the agent, which runs the job, gets it as written.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.job_dependencies, pgjobs.batch_computers;
CREATE ROLE regress_sm_owner IN ROLE pgjobs_user;
CREATE ROLE regress_sm_agent IN ROLE pgjobs_agent;
SELECT regress.as_role('regress_sm_agent', $$SELECT pgjobs.batch_register('GAMMA')$$) AS gamma;

SELECT regress.as_role('regress_sm_owner', $$SELECT pgjobs.batch_post('load', ARRAY[
    '-p', 'S3CRET', '--passphrase', 'S3CRET', '--apikey', 'S3CRET', '--password:S3CRET', '--password', '-S3CRET',
    '--password=-S3CRET', 'PASSWORD=S3CRET', 'postgresql://u:S3CRET@h/db', 'host=h password=S3CRET dbname=d',
    '--token', 'S3CRET', '--user', 'ann', 'plain.txt'], computer => 'GAMMA',
    env => '{"PASSWORD": "S3CRET", "DATABASE_URL": "postgres://u:S3CRET@h/db", "PGOPTIONS": "password=S3CRET", "LANG": "C"}')::text$$) AS job \gset

SET ROLE regress_sm_owner;
SELECT args FROM pgjobs.batch_jobs WHERE id = :job;
SELECT args FROM pgjobs.batch_active WHERE id = :job;
SELECT payload -> 'args' AS args, payload -> 'env' AS env FROM pgjobs.job_list WHERE id = :job;
SELECT payload -> 'env' AS env FROM pgjobs.jobs_find() WHERE id = :job;
RESET ROLE;

-- Running, its output tails as the agent sent them; failed, its stderr, its error and stdout.
SELECT regress.as_role('regress_sm_agent', $$SELECT string_agg(array_to_string(args, ' ') || ' ' || env::text, ',') FROM pgjobs.batch_claim('GAMMA', 1)$$) LIKE '%S3CRET%' AS agent_gets_it_as_written;
SELECT regress.as_role('regress_sm_agent', format($$SELECT string_agg(lease_state, ',') FROM pgjobs.batch_heartbeat(ARRAY[%s], ARRAY[%L::uuid], ARRAY['connecting to postgresql://u:S3CRET@h/db'], ARRAY['PASSWORD=S3CRET'])$$, :job, regress.token(:job))) AS heartbeat;
SET ROLE regress_sm_owner;
SELECT stderr, stdout FROM pgjobs.batch_active WHERE id = :job;
RESET ROLE;
SELECT regress.as_role('regress_sm_agent', format($$SELECT pgjobs.batch_finish(%s, %L, 1, '1 second', E'FATAL: password authentication failed\npsql -p S3CRET --password S3CRET host=h password=S3CRET', 'token=S3CRET')$$, :job, regress.token(:job))) AS finished;
SET ROLE regress_sm_owner;
SELECT status, stderr, stdout, error FROM pgjobs.batch_jobs WHERE id = :job;
SELECT (SELECT string_agg(b::text, ',') FROM pgjobs.batch_jobs b) NOT LIKE '%S3CRET%' AS batch_jobs_masked,
       (SELECT string_agg(b::text, ',') FROM pgjobs.batch_find(month => date_trunc('month', now())::date) b) NOT LIKE '%S3CRET%' AS batch_find_masked,
       (SELECT string_agg(payload::text, ',') FROM pgjobs.job_list) NOT LIKE '%S3CRET%' AS job_list_payload_masked;

-- A routine's arguments and command, as its definition and today's state show them; its run's
-- output line and its messages.
SELECT pgjobs.routines_put('SM', 'sm@GAMMA:Repo/job', runtimes => '09:00',
    args => '-p S3CRET --apikey S3CRET --password:S3CRET PASSWORD=S3CRET "host=h password=S3CRET" --dsn postgresql://u:S3CRET@h/db --fast',
    command => 'env PGPASSWORD=S3CRET psql') AS routines;
SELECT pgjobs.routines_put('SM', 'sm@GAMMA:Repo/talk', realtime => true) AS routines;
SELECT pgjobs.routine_message('sm@GAMMA:Repo/talk', 'error', 'cannot log in to postgresql://u:S3CRET@h/db with --passphrase S3CRET') AS kept_for;
RESET ROLE;
SELECT pgjobs._routines_tick('2026-03-02 09:00:10Z');
SELECT id AS run FROM pgjobs.jobs WHERE payload ->> 'routine' = 'sm@GAMMA:Repo/job' \gset
SELECT regress.as_role('regress_sm_agent', $$SELECT count(*)::text FROM pgjobs.batch_claim('GAMMA', 5)$$) AS claimed;
SELECT regress.as_role('regress_sm_agent', format($$SELECT pgjobs.batch_finish(%s, %L, 1, '1 second', 'error: --apikey S3CRET refused')$$, :run, regress.token(:run))) AS finished;
SELECT pgjobs._routines_tick('2026-03-02 09:00:20Z');
SET ROLE regress_sm_owner;
SELECT routine, args, command FROM pgjobs.routine_definition ORDER BY seq;
SELECT routine, args, last_message FROM pgjobs.routines_today ORDER BY seq;
SELECT routine, message FROM pgjobs.routine_messages WHERE NOT command ORDER BY at;
SELECT (SELECT string_agg(t::text, ',') FROM pgjobs.routines_today t) NOT LIKE '%S3CRET%' AS routines_today_masked,
       (SELECT string_agg(t::text, ',') FROM pgjobs.routine_definition t) NOT LIKE '%S3CRET%' AS routine_definition_masked,
       (SELECT string_agg(t::text, ',') FROM pgjobs.routine_messages t) NOT LIKE '%S3CRET%' AS routine_messages_masked,
       (SELECT string_agg(t::text, ',') FROM pgjobs.routine_log t) NOT LIKE '%S3CRET%' AS routine_log_masked;
-- Its owner reads it as written.
SELECT pgjobs.routines_export('SM') LIKE '%-p S3CRET%' AS export_as_written;
RESET ROLE;

-- A post's revision and extra are any JSON, kept as given: a read masks the arguments and the
-- environment alone, so that JSON serde_json cannot hold there (a number past a double's range,
-- nesting deeper than 128 levels) reads as any other (every read of such a job failed, XX000).
SELECT regress.as_role('regress_sm_owner', $$SELECT pgjobs.batch_post('load', ARRAY['--password', 'S3CRET', 'odd.json'],
    computer => 'GAMMA', env => '{"PASSWORD": "S3CRET"}', revision => '{"n": 1e1000}',
    extra => ('{"deep": ' || repeat('[', 200) || repeat(']', 200) || '}')::jsonb)::text$$) AS odd \gset
SET ROLE regress_sm_owner;
SELECT payload -> 'args' AS args, payload -> 'env' AS env,
       payload -> 'revision' = '{"n": 1e1000}' AS revision_as_given,
       payload -> 'extra' = ('{"deep": ' || repeat('[', 200) || repeat(']', 200) || '}')::jsonb AS extra_as_given
FROM pgjobs.job_list WHERE id = :odd;
SELECT args FROM pgjobs.batch_jobs WHERE id = :odd;
RESET ROLE;
