-- The agent's side of batch jobs, as agents' roles: registering, claiming for a computer and
-- for ANY, reporting start, output and end, dependencies released by the completing report,
-- hand back, and the silence rule.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.job_dependencies, pgjobs.batch_computers;
CREATE ROLE regress_agent_a IN ROLE pgjobs_agent;
CREATE ROLE regress_agent_b IN ROLE pgjobs_agent;
CREATE ROLE regress_submitter IN ROLE pgjobs_user;


SELECT regress.as_role('regress_agent_a', $$SELECT pgjobs.batch_register('alpha', 2, '{"host": "a"}')$$) AS alpha;
SELECT regress.as_role('regress_agent_b', $$SELECT pgjobs.batch_register('beta', 1)$$) AS beta;
SELECT computer, agent, capacity, info FROM pgjobs.batch_computer_list ORDER BY 1;
SELECT regress.as_role('regress_agent_a', $$SELECT pgjobs.batch_register('alpha', 4)$$) AS again;
SELECT refusal, regress.as_role('regress_agent_a', statement) AS error
FROM (VALUES ('name', $$SELECT pgjobs.batch_register('has space')$$),
             ('ANY', $$SELECT pgjobs.batch_register('ANY')$$),
             ('capacity', $$SELECT pgjobs.batch_register('alpha', 0)$$),
             ('n', $$SELECT count(*)::text FROM pgjobs.batch_claim('alpha', 0)$$),
             ('unknown', $$SELECT count(*)::text FROM pgjobs.batch_claim('gamma')$$)) AS r(refusal, statement);
SELECT capacity FROM pgjobs.batch_computers WHERE computer = 'alpha';

-- Targeting: beta takes the job for ANY and not alpha's; alpha takes its own.
SET ROLE regress_submitter;
SELECT pgjobs.batch_post('build', ARRAY['--release'], computer => 'alpha') AS build \gset
SELECT pgjobs.batch_post('test', depends_on => ARRAY[:'build']) AS test \gset
SELECT pgjobs.batch_post('deploy', depends_on => ARRAY[:'test'], cwd => '/srv', env => '{"MODE": "prod"}') AS deploy \gset
SELECT pgjobs.batch_post('anywhere', shell => true) AS anywhere \gset
RESET ROLE;
SELECT regress.as_role('regress_agent_b', $$SELECT string_agg(format('%s %s %s %s', kind, command, args, lease), ',') FROM pgjobs.batch_claim('beta', 5)$$) AS beta_takes;
SELECT regress.as_role('regress_agent_a', $$SELECT string_agg(format('%s %s %s', command, args, shell), ',') FROM pgjobs.batch_claim('alpha', 5)$$) AS alpha_takes;
SELECT command, status, computer, target FROM pgjobs.batch_jobs ORDER BY id;

-- alpha runs build: started, output while it runs, completed; test is due at once.
SELECT regress.as_role('regress_agent_a', format('SELECT pgjobs.batch_started(%s, %L, 4242)', :build, regress.token(:build))) AS started;
SELECT regress.as_role('regress_agent_a', format($$SELECT string_agg(id || ' ' || lease_state, ',') FROM pgjobs.batch_heartbeat(ARRAY[%s, 999], ARRAY[%L, gen_random_uuid()], ARRAY['compiling', NULL], ARRAY['50%%', NULL])$$, :build, regress.token(:build))) AS heartbeat;
SELECT command, status, pid, stderr, stdout FROM pgjobs.batch_jobs WHERE id = :build;
SELECT regress.as_role('regress_agent_a', format($$SELECT pgjobs.batch_finish(%s, %L, 0, '3 seconds', 'warning: x', 'done')$$, :build, regress.token(:build))) AS finished;
SELECT command, status, exit_code, run_time, stderr, stdout, target FROM pgjobs.batch_jobs WHERE id IN (:build, :test) ORDER BY id;
-- A report with a token that no longer holds the job changes nothing.
SELECT regress.as_role('regress_agent_a', format($$SELECT pgjobs.batch_finish(%s, gen_random_uuid(), 0, '1 second')$$, :build)) AS late_report;

-- test fails on beta: deploy is blocked, with the reason; its owner releases it.
SELECT regress.as_role('regress_agent_b', $$SELECT string_agg(command, ',') FROM pgjobs.batch_claim('beta', 1)$$) AS beta_takes;
SELECT regress.as_role('regress_agent_b', format($$SELECT pgjobs.batch_finish(%s, %L, 2, '1 second', E'error: tests failed\n', '')$$, :test, regress.token(:test))) AS failed;
SELECT command, status, exit_code, error, blocked_reason FROM pgjobs.batch_jobs WHERE id IN (:test, :deploy) ORDER BY id;
SELECT regress.as_role('regress_submitter', format('SELECT pgjobs.batch_release(%s)', :deploy)) AS released;
SELECT regress.as_role('regress_agent_b', $$SELECT string_agg(format('%s %s %s', command, cwd, env), ',') FROM pgjobs.batch_claim('beta', 1)$$) AS beta_takes;

-- A cancel while running: the agent learns it from its heartbeat, and its report decides.
SELECT regress.as_role('regress_submitter', format('SELECT string_agg(status, '','') FROM pgjobs.batch_cancel(ARRAY[%s, %s])', :deploy, :anywhere)) AS cancelled;
SELECT regress.as_role('regress_agent_b', format($$SELECT string_agg(lease_state, ',') FROM pgjobs.batch_heartbeat(ARRAY[%s]::bigint[], ARRAY[%L]::uuid[])$$, :deploy, regress.token(:deploy))) AS told;
SELECT regress.as_role('regress_agent_b', format($$SELECT pgjobs.batch_finish(%s, %L, NULL, '1 second', '', '', cancelled => true)$$, :deploy, regress.token(:deploy))) AS ended;
-- ... a job that ran to its end although cancelled ends as it ended: the report replaces the mark.
SELECT regress.as_role('regress_agent_b', format($$SELECT pgjobs.batch_finish(%s, %L, 0, '1 second')$$, :anywhere, regress.token(:anywhere))) AS ran_to_its_end;
SELECT command, status FROM pgjobs.batch_jobs WHERE id IN (:deploy, :anywhere) ORDER BY id;

-- Hand back: a stopping agent gives a job back, pending again with no attempt counted.
SET ROLE regress_submitter;
SELECT pgjobs.batch_post('nightly', computer => 'alpha') AS nightly \gset
SELECT pgjobs.batch_post('', kind => 'kill', routine => 'nightly', computer => 'alpha') AS kill \gset
RESET ROLE;
SELECT regress.as_role('regress_agent_a', $$SELECT string_agg(format('%s %s %L', kind, routine, command), ',' ORDER BY id) FROM pgjobs.batch_claim('alpha', 2)$$) AS alpha_takes;
SELECT regress.as_role('regress_agent_a', format($$SELECT pgjobs.batch_hand_back(ARRAY[%s]::bigint[], ARRAY[%L]::uuid[])$$, :nightly, regress.token(:nightly))) AS handed_back;
SELECT command, status, attempt FROM pgjobs.batch_jobs WHERE id = :nightly;

-- Silence: a job whose agent says nothing for its lease ends in ERROR; with attempts left it
-- is pending again.
SET ROLE regress_submitter;
SELECT pgjobs.batch_post('quiet', computer => 'alpha') AS quiet \gset
SELECT pgjobs.batch_post('quiet twice', computer => 'alpha', max_attempts => 2) AS twice \gset
RESET ROLE;
SELECT regress.as_role('regress_agent_a', $$SELECT count(*)::text FROM pgjobs.batch_claim('alpha', 3)$$) AS claimed;
SELECT regress.expire_lease(:quiet), regress.expire_lease(:twice);
SELECT pgjobs._rescue_expired() AS rescued;
SELECT command, status, error, attempt FROM pgjobs.batch_jobs WHERE id IN (:quiet, :twice) ORDER BY id;
SELECT regress.as_role('regress_agent_a', format($$SELECT pgjobs.batch_finish(%s, %L, 0, '1 second')$$, :quiet, gen_random_uuid())) AS silent_agent_reports;

-- One turn of the agent's loop in one call (batch_report_and_claim): the jobs that started, the
-- jobs that ended, and the next claim. A job may start and end in the same call.
SET ROLE regress_submitter;
SELECT pgjobs.batch_post('one', computer => 'alpha') AS one \gset
SELECT pgjobs.batch_post('two', computer => 'alpha') AS two \gset
SELECT pgjobs.batch_post('three', computer => 'alpha', depends_on => ARRAY[:'one']) AS three \gset
RESET ROLE;
SELECT regress.as_role('regress_agent_a', $$SELECT string_agg(format('%s %s %s', report, state, command), ',' ORDER BY id) FROM pgjobs.batch_report_and_claim('alpha', 5)$$) AS claimed;
SELECT regress.as_role('regress_agent_a', format($$
    SELECT string_agg(format('%%s %%s %%s %%s', report, id - %s, state, command), ',' ORDER BY report DESC, id)
    FROM pgjobs.batch_report_and_claim('alpha', 5,
        started_ids => ARRAY[%s, %s], started_tokens => ARRAY[%L, %L]::uuid[], started_pids => ARRAY[7, 8],
        ids => ARRAY[%s, %s, %s], tokens => ARRAY[%L, %L, gen_random_uuid()],
        exit_codes => ARRAY[0, NULL, 0], run_times => ARRAY[interval '2 seconds', '1 second', '1 second'],
        stderr => ARRAY['', E'killed\n', NULL])$$,
    :one, :one, :two, regress.token(:one), regress.token(:two),
    :one, :two, :quiet, regress.token(:one), regress.token(:two))) AS one_turn;
SELECT command, status, pid, exit_code, run_time, error FROM pgjobs.batch_jobs WHERE id IN (:one, :two, :three) ORDER BY id;
-- Refused as a whole, changing nothing (four stays pending): arrays of different lengths, n out
-- of range, another agent's computer, and a role that is not an agent.
SELECT regress.as_role('regress_submitter', $$SELECT pgjobs.batch_post('four', computer => 'alpha')$$) IS NOT NULL AS four;
SELECT refusal, regress.as_role(role, statement) AS error
FROM (VALUES ('started arrays', 'regress_agent_a', $$SELECT count(*)::text FROM pgjobs.batch_report_and_claim('alpha', 0, started_ids => '{1,2}', started_tokens => ARRAY[gen_random_uuid()], started_pids => '{1,2}')$$),
             ('finished arrays', 'regress_agent_a', $$SELECT count(*)::text FROM pgjobs.batch_report_and_claim('alpha', 0, ids => '{1}', tokens => ARRAY[gen_random_uuid()], exit_codes => '{0}', run_times => '{1 second}', stderr => '{a,b}')$$),
             ('n', 'regress_agent_a', $$SELECT count(*)::text FROM pgjobs.batch_report_and_claim('alpha', 1001)$$),
             ('other computer', 'regress_agent_b', $$SELECT count(*)::text FROM pgjobs.batch_report_and_claim('alpha', 1)$$),
             ('not an agent', 'regress_submitter', $$SELECT count(*)::text FROM pgjobs.batch_report_and_claim('alpha', 1)$$)) AS r(refusal, role, statement);
SELECT command, status FROM pgjobs.batch_jobs WHERE command = 'four';

-- A job cancelled while it runs and then handed back has ended: CANCEL, not pending again.
SELECT regress.as_role('regress_agent_a', $$SELECT pgjobs.batch_register('delta')$$) AS delta;
SET ROLE regress_submitter;
SELECT pgjobs.batch_post('doomed', computer => 'delta') AS doomed \gset
RESET ROLE;
SELECT regress.as_role('regress_agent_a', $$SELECT string_agg(command, ',') FROM pgjobs.batch_claim('delta', 1)$$) AS delta_takes;
SELECT regress.as_role('regress_submitter', format('SELECT string_agg(status, '','') FROM pgjobs.batch_cancel(ARRAY[%s])', :doomed)) AS cancelled;
SELECT regress.as_role('regress_agent_a', format($$SELECT pgjobs.batch_hand_back(ARRAY[%s]::bigint[], ARRAY[%L]::uuid[])$$, :doomed, regress.token(:doomed))) AS handed_back;
SELECT command, status, attempt FROM pgjobs.batch_jobs WHERE id = :doomed;

-- An administrator forgets a computer: its name is free for another agent role to register; a
-- computer that is not registered is refused (42704) and nothing changes.
SELECT pgjobs.batch_forget_computer('delta') AS forgotten;
SELECT regress.error_of($$SELECT pgjobs.batch_forget_computer('delta')$$) AS again;
SELECT regress.as_role('regress_agent_b', $$SELECT pgjobs.batch_register('delta')$$) AS taken_over;
SELECT computer, agent FROM pgjobs.batch_computer_list WHERE computer = 'delta';

-- An agent's reports find their jobs by the primary key whatever the statistics say: with those
-- of an empty table (what VACUUM leaves under a long snapshot, as in regress queue_probes), the
-- reports found them by a bitmap scan of the whole ready index, whose last column is the id.
SET ROLE regress_submitter;
SELECT count(pgjobs.batch_post('probe', ARRAY[n::text], computer => 'alpha')) AS probes
FROM generate_series(1, 200) n;
RESET ROLE;
UPDATE pg_class SET reltuples = 0, relpages = pg_relation_size(oid) / current_setting('block_size')::integer
WHERE oid IN ('pgjobs.jobs'::regclass, 'pgjobs.jobs_pkey'::regclass, 'pgjobs.jobs_ready'::regclass);
CREATE TEMP VIEW regress_probe_reads AS
SELECT pg_stat_get_xact_tuples_returned('pgjobs.jobs_ready'::regclass) AS ready_read,
       pg_stat_get_xact_tuples_returned('pgjobs.jobs_pkey'::regclass) AS pkey_read;
CREATE TEMP TABLE probes (id bigint, token uuid);
GRANT ALL ON probes TO regress_agent_a;
SELECT regress.as_role('regress_agent_a', $$
    WITH c AS (INSERT INTO probes SELECT id, lease_token FROM pgjobs.batch_report_and_claim('alpha', 10) RETURNING 1)
    SELECT count(*) FROM c$$) AS claimed;
BEGIN;
SELECT * FROM regress_probe_reads \gset start_
SELECT regress.as_role('regress_agent_a', $$
    SELECT string_agg(DISTINCT report || ' ' || state, ', ')
    FROM (SELECT array_agg(id) AS ids, array_agg(token) AS tokens, array_agg(0) AS codes,
                 array_agg(interval '1 second') AS times FROM probes) p,
         pgjobs.batch_report_and_claim('alpha', 0, started_ids => p.ids, started_tokens => p.tokens,
                                       started_pids => p.codes, ids => p.ids, tokens => p.tokens,
                                       exit_codes => p.codes, run_times => p.times)$$) AS reported;
SELECT r.ready_read - :start_ready_read AS ready_read, r.pkey_read - :start_pkey_read <= 15 * 10 AS a_few_probes_a_job
FROM regress_probe_reads r;
COMMIT;
SELECT status, count(*) FROM pgjobs.batch_jobs WHERE command = 'probe' GROUP BY status ORDER BY status;
ANALYZE pgjobs.jobs;
DROP VIEW regress_probe_reads;
DROP TABLE probes;

-- So do a cancel, which first looks for any id given that is not the caller's batch job, and a
-- release, which looks for the job given: each read the whole ready index for that (146 of its
-- pages here). In a new session, where a statement's first runs are planned for the values given,
-- with 20,000 more jobs (so that a scan of an index shows).
\c
SELECT array_agg(id) AS probe_ids
FROM (SELECT id FROM pgjobs.jobs WHERE payload ->> 'command' = 'probe' ORDER BY id LIMIT 3) p \gset
BEGIN;
SELECT count(*) AS more FROM pgjobs.jobs_add_batch((SELECT jsonb_agg('{"task": "noop"}'::jsonb) FROM generate_series(1, 20000)));
UPDATE pg_class SET reltuples = 0, relpages = pg_relation_size(oid) / current_setting('block_size')::integer
WHERE oid IN ('pgjobs.jobs'::regclass, 'pgjobs.jobs_pkey'::regclass, 'pgjobs.jobs_ready'::regclass);
CREATE TEMP VIEW regress_probe_reads AS
SELECT pg_stat_get_xact_blocks_fetched('pgjobs.jobs_ready'::regclass) AS ready_pages,
       pg_stat_get_xact_tuples_returned('pgjobs.jobs'::regclass) AS scanned;
SELECT * FROM regress_probe_reads \gset start_
SELECT regress.as_role('regress_submitter', format($$
    SELECT string_agg(DISTINCT status, ', ') FROM pgjobs.batch_cancel(%L)$$, :'probe_ids')) AS cancelled;
SELECT r.ready_pages - :start_ready_pages < 10 AS a_few_pages, r.scanned - :start_scanned AS scanned
FROM regress_probe_reads r;
SELECT * FROM regress_probe_reads \gset start_
SELECT split_part(regress.as_role('regress_submitter', format('SELECT pgjobs.batch_release(%s)',
                                                              (:'probe_ids'::bigint[])[1])), ':', 1) AS not_waiting;
SELECT r.ready_pages - :start_ready_pages < 10 AS a_few_pages, r.scanned - :start_scanned AS scanned
FROM regress_probe_reads r;
ROLLBACK;
