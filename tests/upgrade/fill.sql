-- Rows of every kind, made with the version upgraded from (scripts/upgrade_tests.sh): jobs
-- waiting, leased, keyed, finished and failed, a schedule, a SQL job, a batch job with a
-- dependency, a routine schedule, a compute job in a group. Run as a superuser in a database the
-- launcher does not work in, so nothing changes them until the check.
\set ON_ERROR_STOP on
CREATE ROLE upgrade_app IN ROLE pgjobs_user;
CREATE ROLE upgrade_groups IN ROLE pgjobs_user;
SET ROLE upgrade_app;
SELECT pgjobs.jobs_add('done');
SELECT pgjobs.jobs_add('failing', max_attempts => 1);
CREATE TEMP TABLE claimed AS SELECT * FROM pgjobs.jobs_claim('upgrade-worker', ARRAY['default'], 2);
SELECT pgjobs.jobs_complete(id, lease_token, '{"ok": true}') FROM claimed WHERE task = 'done';
SELECT pgjobs.jobs_fail(id, lease_token, 'broken') FROM claimed WHERE task = 'failing';
SELECT pgjobs.jobs_add('waiting', '{"n": 1}');
SELECT pgjobs.jobs_add('later', run_at => '2030-01-01', queue => 'slow');
SELECT pgjobs.jobs_add('keyed', key => 'k1');
SELECT pgjobs.jobs_schedule('nightly', '0 3 * * *', '{"task": "report"}');
SELECT pgjobs.jobs_add_sql('SELECT 1', run_at => '2030-01-01');
SELECT pgjobs.batch_post('echo', ARRAY['first'], computer => 'ANY') AS first \gset
SELECT pgjobs.batch_post('echo', ARRAY['second', '--password', 'hunter2'], computer => 'ANY', depends_on => ARRAY[:'first']);
SELECT pgjobs.routines_import('NIGHT', E'routine,group,external,realtime,runtimes,args,dependencies,computer,seq,command\n'
                                        'app@host-1:feeds.daily,FEEDS,false,false,03:00,--fast,,,,\n');
RESET ROLE;
INSERT INTO pgjobs.compute_groups (owner, name, join_key) VALUES ('upgrade_groups'::regrole, 'upgrade-group', 'key')
RETURNING opaque_id AS group_id \gset
SET ROLE upgrade_groups;
SELECT pgjobs.compute_group_set_secret(:'group_id', 'open-sesame-0123456789');
SELECT pgjobs.compute_deploy(jsonb_build_object('work', '(x) => x', 'input', '{"range": {"start": 1, "end": 20}}'::jsonb,
                                                'groups', jsonb_build_array(:'group_id'), 'offer', '0.001', 'funds', '1'));
RESET ROLE;
