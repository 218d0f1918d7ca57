//! The page's addresses, each one statement of fixed text over pgjobs' views and functions, its
//! inputs passed as parameters. The database answers in JSON (jsonb_agg / to_jsonb), which is
//! passed on as it is.

use std::collections::HashMap;

use serde_json::Value;
use tokio_postgres::types::ToSql;
use tokio_postgres::Client;

pub enum Outcome {
    Ok(String),
    NotFound,
    Bad(String),
    /// An error from SQL: {sqlstate, message, detail, hint}.
    Sql(String),
    Lost,
}

pub fn from_error(e: tokio_postgres::Error) -> Outcome {
    match e.as_db_error() {
        Some(d) => Outcome::Sql(
            serde_json::json!({
                "error": d.message(), "sqlstate": d.code().code(), "message": d.message(),
                "detail": d.detail(), "hint": d.hint(),
            })
            .to_string(),
        ),
        None => Outcome::Lost,
    }
}

/// The rows of a statement as a JSON array.
async fn rows(
    client: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<String, tokio_postgres::Error> {
    let wrapped = format!("SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]')::text FROM ({sql}) t");
    Ok(client.query_one(&wrapped, params).await?.get(0))
}

/// The Queues tab's queues, their jobs counted now (within QUEUES_COUNTED_WITHIN) or by minute.
/// One message of the simple protocol, in which SET LOCAL holds for that message alone: requests
/// of the session on the same connection are not timed by it.
async fn queues(client: &Client, by_minute: bool) -> Result<String, tokio_postgres::Error> {
    let view = if by_minute {
        "jobs_queues_counted"
    } else {
        "jobs_queues"
    };
    let sql = format!(
        "SET LOCAL statement_timeout = '{QUEUES_COUNTED_WITHIN}';
         SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.queue), '[]')::text FROM (
             SELECT q.*, {by_minute} AS counted_by_minute,
                    extract(epoch FROM now() - q.oldest_ready_at) AS oldest_ready_seconds,
                    extract(epoch FROM q.rate_per) AS rate_per_seconds,
                    extract(epoch FROM q.key_rate_per) AS key_rate_per_seconds,
                    (SELECT count(*) FROM pgjobs.job_history h
                     WHERE h.queue = q.queue AND h.status = 'failed'
                       AND h.end_time > now() - interval '1 hour') AS failed_last_hour
             FROM pgjobs.{view} q) t"
    );
    let answer = client.simple_query(&sql).await?;
    Ok(answer
        .iter()
        .find_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .unwrap_or_else(|| "[]".into()))
}

/// How long the Queues tab's counts may take before it reads them by minute (the request's
/// budget is 100 ms).
const QUEUES_COUNTED_WITHIN: &str = "60ms";

/// A statement whose one value is already JSON text.
async fn value(
    client: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<String, tokio_postgres::Error> {
    Ok(client.query_one(sql, params).await?.get(0))
}

fn text(params: &HashMap<String, String>, name: &str) -> Option<String> {
    params.get(name).filter(|v| !v.is_empty()).cloned()
}

fn job_id(params: &HashMap<String, String>) -> Option<i64> {
    params.get("id")?.parse().ok()
}

/// Status words, comma-separated: none means every status.
fn statuses(s: Option<&str>) -> Option<Vec<String>> {
    let words: Vec<String> = s?
        .split(',')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect();
    (!words.is_empty()).then_some(words)
}

fn number(params: &HashMap<String, String>, name: &str, default: i32) -> Result<i32, Outcome> {
    match params.get(name).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| Outcome::Bad(format!("{name} is not a number"))),
    }
}

/// A queue-jobs filter from a request: its status, queue, key, text (`q`) and month, in the order
/// of found_queue_jobs!'s parameters; an empty value filters nothing.
fn job_filter(get: impl Fn(&str) -> Option<String>) -> [Option<String>; 5] {
    ["status", "queue", "key", "q", "month"].map(|name| get(name).filter(|v| !v.is_empty()))
}

/// The jobs a queue-jobs filter finds ($1 to $5, as job_filter gives them), newest first, with
/// the given limit; a text is looked for among the newest 10,000 jobs of the other filters, so
/// that a search that finds little still reads no more.
macro_rules! found_queue_jobs {
    ($limit:literal) => {
        concat!(
            "pgjobs.jobs_find(status => $1::text::pgjobs.job_status, queue => $2, key => $3, ",
            "search => $4, month => $5::text::date, search_newest => 10000, limit_rows => ",
            $limit,
            ")"
        )
    };
}

/// The addresses seed 001 gives the SCHED page's API, answered as the page's own: the same
/// statements, so a script written for the seed's addresses reads and acts as the page does.
fn seed_address(path: &str) -> &str {
    match path {
        "/api/web/sched/jobs/groups" => "/api/jobs/groups",
        "/api/web/sched/jobs" => "/api/jobs/group",
        "/api/web/sched/jobs/cancel" => "/api/jobs/cancel",
        other => other,
    }
}

/// The schedule that `/api/schedules/<name>/mode` names (seed 001), its name percent-decoded.
fn schedule_of(path: &str) -> Option<String> {
    let name = path
        .strip_prefix("/api/schedules/")?
        .strip_suffix("/mode")?;
    let name = percent_encoding::percent_decode_str(name)
        .decode_utf8()
        .ok()?;
    (!name.is_empty()).then(|| name.into_owned())
}

pub async fn read(client: &Client, path: &str, params: &HashMap<String, String>) -> Outcome {
    if let Some(schedule) = schedule_of(path) {
        // One schedule's switch: the object itself, as seed 001 answers.
        return value(
            client,
            "SELECT to_jsonb(m)::text FROM pgjobs.routines_mode($1) m",
            &[&schedule],
        )
        .await
        .map(Outcome::Ok)
        .unwrap_or_else(from_error);
    }
    let result = match seed_address(path) {
        "/api/schedules" => {
            rows(
                client,
                "SELECT * FROM pgjobs.routine_schedule_list ORDER BY schedule",
                &[],
            )
            .await
        }
        // Both routine tabs and the toggles: the schedules and today's routines.
        "/api/routines" => {
            async {
                let schedules = rows(
                    client,
                    "SELECT * FROM pgjobs.routine_schedule_list ORDER BY schedule",
                    &[],
                )
                .await?;
                // next_run_at: a batch routine's next runtime today, read in its schedule's time
                // zone on the scheduler's day, as the scheduler reads it.
                let routines = rows(
                    client,
                    "SELECT t.*,
                            (SELECT min((t.day + r::time) AT TIME ZONE s.time_zone)
                             FROM unnest(string_to_array(t.runtimes, ',')) r
                             WHERE (t.day + r::time) AT TIME ZONE s.time_zone > now()) AS next_run_at
                     FROM pgjobs.routines_today t
                     LEFT JOIN pgjobs.routine_schedules s ON s.schedule = t.schedule AND s.owner = t.owner::oid
                     ORDER BY t.schedule, t.seq",
                    &[],
                )
                .await?;
                Ok(format!(
                    r#"{{"schedules":{schedules},"routines":{routines}}}"#
                ))
            }
            .await
        }
        "/api/routine/messages" => {
            let (schedule, routine) = (text(params, "schedule"), text(params, "routine"));
            rows(
                client,
                "SELECT at, level, message, sender::text AS sender, command FROM pgjobs.routine_messages
                 WHERE owner::text || '/' || schedule = $1 AND routine = $2 ORDER BY at DESC LIMIT 20",
                &[&schedule, &routine],
            ).await
        }
        // The Jobs tab's count (active jobs) and the months it offers.
        "/api/jobs/summary" => {
            value(
                client,
                "SELECT jsonb_build_object('active', f -> 'total', 'months', f -> 'months')::text
             FROM pgjobs.batch_find(limit_rows => 0) f",
                &[],
            )
            .await
        }
        "/api/jobs/groups" => {
            let (by, month, search) =
                (text(params, "by"), text(params, "month"), text(params, "q"));
            let st = statuses(params.get("status").map(String::as_str));
            rows(
                client,
                "SELECT * FROM pgjobs.batch_groups($1, $2::text::date, $3, $4)",
                &[&by.unwrap_or_else(|| "time".into()), &month, &st, &search],
            )
            .await
        }
        "/api/jobs/group" => {
            let (offset, limit) = match (number(params, "offset", 0), number(params, "limit", 200))
            {
                (Ok(o), Ok(l)) => (o, l),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            let (by, group, month, search) = (
                text(params, "by"),
                params.get("group").cloned(),
                text(params, "month"),
                text(params, "q"),
            );
            let st = statuses(params.get("status").map(String::as_str));
            rows(
                client,
                "SELECT * FROM pgjobs.batch_group_jobs($1, $2, $3::text::date, $4, $5, $6, $7)",
                &[&by, &group, &month, &st, &search, &limit, &offset],
            )
            .await
        }
        // The plain list: batch_find's {rows, total, counts, months}.
        "/api/jobs/list" => {
            let (offset, limit) = match (number(params, "offset", 0), number(params, "limit", 200))
            {
                (Ok(o), Ok(l)) => (o, l),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            let (month, search) = (text(params, "month"), text(params, "q"));
            let st = statuses(params.get("status").map(String::as_str));
            value(
                client,
                "SELECT pgjobs.batch_find($1::text::date, $2, $3, $4, $5)::text",
                &[&month, &st, &search, &limit, &offset],
            )
            .await
        }
        // The Schedules tab: the cron schedules, each with its last job and the slot that job was
        // fired for, read from its key, scheduled_job:<schedule id>:<slot>, and how long it ran: a
        // SQL job's run (job_runs) says it, a queue job's from when its last attempt began to its
        // end (or to now while it runs).
        "/api/cron/schedules" => {
            rows(
                client,
                "SELECT v.name, v.schedule, v.time_zone, v.enabled, v.missed, s.max_catch_up,
                        v.work ? 'sql' AS sql_job,
                        coalesce(v.work ->> 'sql', concat_ws(' in queue ', v.work ->> 'task',
                                                             coalesce(v.work ->> 'queue', 'default'))) AS work,
                        v.next_slot, v.last_error, v.last_job_id, v.last_status,
                        substr(l.idempotency_key, length(format('scheduled_job:%s:', s.id)) + 1)::timestamptz AS last_fired,
                        r.status AS last_run_status, r.message AS last_run_message,
                        l.end_time AS last_ended,
                        extract(epoch FROM coalesce(r.ended_at, now()) - r.started_at) AS last_seconds,
                        extract(epoch FROM coalesce(l.end_time, now()) - l.begin_time) AS last_job_seconds
                 FROM pgjobs.jobs_schedules v
                 JOIN pgjobs.schedules s ON s.name = v.name AND s.owner = v.owner::oid
                 LEFT JOIN pgjobs.job_list l ON l.id = v.last_job_id
                 LEFT JOIN LATERAL (SELECT r.status, r.message, r.started_at, r.ended_at FROM pgjobs.job_runs r
                                    WHERE r.job_id = v.last_job_id ORDER BY r.id DESC LIMIT 1) r ON true
                 ORDER BY v.name",
                &[],
            )
            .await
        }
        // A schedule's last 20 jobs (one a slot), newest first, found by their keys
        // (`scheduled_job:<id>:<slot>`: a range of the key indexes, given as parameters so that
        // the plan is made for them); a SQL job with its runs from job_runs, a queue job with when
        // its last attempt began and how long it ran (so far, while it runs).
        "/api/cron/runs" => {
            async {
                let Some(schedule) = client
                    .query_opt(
                        "SELECT format('scheduled_job:%s:', s.id), format('scheduled_job:%s;', s.id)
                         FROM pgjobs.schedules s WHERE s.name = $1",
                        &[&text(params, "name")],
                    )
                    .await?
                else {
                    return Ok("[]".to_owned());
                };
                let (first, past): (String, String) = (schedule.get(0), schedule.get(1));
                rows(
                    client,
                    "SELECT l.id, l.status, l.attempt,
                            substr(l.idempotency_key, length($1) + 1)::timestamptz AS slot,
                            l.start_time AS added_at, l.begin_time AS began_at, l.end_time AS ended_at,
                            extract(epoch FROM coalesce(l.end_time, now()) - l.begin_time) AS seconds,
                            coalesce(l.result ->> 'error', l.errors -> -1 ->> 'error') AS error,
                            (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                        'attempt', r.attempt, 'status', r.status, 'message', r.message,
                                        'started_at', r.started_at, 'ended_at', r.ended_at,
                                        'seconds', extract(epoch FROM coalesce(r.ended_at, now()) - r.started_at))
                                      ORDER BY r.id DESC), '[]')
                             FROM pgjobs.job_runs r WHERE r.job_id = l.id) AS runs
                     FROM pgjobs.job_list l
                     WHERE l.idempotency_key ~>=~ $1 AND l.idempotency_key ~<~ $2
                     ORDER BY l.id DESC LIMIT 20",
                    &[&first, &past],
                )
                .await
            }
            .await
        }
        // The SQL jobs whose statements run now, with how long they have run by the database's
        // clock, and the schedule that added each, if one did.
        "/api/sql-jobs/running" => {
            rows(
                client,
                "SELECT r.job_id AS id, r.attempt, r.started_at, r.deadline,
                        extract(epoch FROM now() - r.started_at) AS elapsed_seconds,
                        l.payload ->> 'sql' AS sql, s.name AS schedule
                 FROM pgjobs.job_runs r
                 LEFT JOIN pgjobs.job_list l ON l.id = r.job_id
                 LEFT JOIN pgjobs.schedules s ON starts_with(l.idempotency_key, 'scheduled_job:')
                                             AND s.id::text = split_part(l.idempotency_key, ':', 2)
                 WHERE r.status = 'running'
                 ORDER BY r.started_at, r.id",
                &[],
            )
            .await
        }
        // The Queues tab: each queue of the role's identity, with its failed jobs of the last hour
        // (job_history's rows of the role's own, by its (status, queue) index, bounded by when
        // they ended) and its oldest ready job's age by the database's clock. Its jobs counted
        // now unless that takes longer than a page should wait (a million live jobs take 0.7 s):
        // then as the launcher counted them at the last minute's end (counted_by_minute).
        "/api/queues" => match queues(client, false).await {
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::QUERY_CANCELED) => {
                queues(client, true).await
            }
            answer => answer,
        },
        // The open queue's charts: its minutes over the last hour, or the last day by 10 minutes.
        "/api/queues/minutes" => {
            let (hours, step) = match number(params, "hours", 1) {
                Ok(1) => (1, "1 minute"),
                Ok(24) => (24, "10 minutes"),
                Ok(_) => return Outcome::Bad("hours is 1 or 24".into()),
                Err(e) => return e,
            };
            rows(
                client,
                "SELECT date_bin($2::text::interval, m.minute, '2000-01-01') AS minute,
                        sum(m.completed) AS completed, sum(m.failed) AS failed, max(m.ready) AS ready
                 FROM pgjobs.jobs_queue_minutes m
                 WHERE m.queue = $1 AND m.minute > now() - make_interval(hours => $3)
                 GROUP BY 1 ORDER BY 1",
                &[&text(params, "queue"), &step, &hours],
            )
            .await
        }
        // A queue's jobs, live and finished, newest first, a page of 200 at a time; a job that
        // waits for its dependencies (waiting: live, and job_list shows no run_at, the table's
        // being infinity) with how many of them have not finished (waits_for) and why it is
        // blocked (blocked_by: `job 12 failed`, null when it is not).
        "/api/queues/jobs" => {
            let offset = match number(params, "offset", 0) {
                Ok(o) => o,
                Err(e) => return e,
            };
            let filter = job_filter(|name| text(params, name));
            rows(
                client,
                concat!("SELECT f.*, f.end_time IS NULL AND f.run_at IS NULL AS waiting,
                        f.end_time IS NULL AND f.status = 'created' AND f.run_at > now() AS due_later, w.waits_for, w.blocked_by
                 FROM ", found_queue_jobs!("200, offset_rows => $6"), " f
                 LEFT JOIN LATERAL (
                     SELECT (SELECT count(*) FROM pgjobs.job_dependencies d
                             WHERE d.job_id = f.id AND EXISTS (SELECT FROM pgjobs.jobs x WHERE x.id = d.on_job)) AS waits_for,
                            pgjobs._blocked_by(f.id) AS blocked_by
                 ) w ON f.end_time IS NULL AND f.run_at IS NULL
                 ORDER BY f.id DESC"),
                &[&filter[0], &filter[1], &filter[2], &filter[3], &filter[4], &offset],
            )
            .await
        }
        // How many of a filter's jobs each action on a whole filter would act on (named as the
        // actions: abort, retry, run_now, delete), and how many jobs the filter found (`found`:
        // the newest 1,000 at most, as the actions take them).
        "/api/queues/jobs/counts" => {
            let filter = job_filter(|name| text(params, name));
            let counts = QUEUE_JOBS_ACTIONS
                .iter()
                .filter_map(|(path, action)| {
                    let name = path.rsplit('/').next()?.replace('-', "_");
                    Some(format!(", count(*) FILTER (WHERE {}) AS {name}", action.takes?))
                })
                .collect::<String>();
            rows(
                client,
                &format!(
                    "SELECT count(*) AS found{counts} FROM {} f",
                    found_queue_jobs!("1000")
                ),
                &[&filter[0], &filter[1], &filter[2], &filter[3], &filter[4]],
            )
            .await
        }
        // One queue job with what job_list leaves out: its progress while it runs; each job it
        // depends on with its queue, task and status (waiting or blocked for one that itself
        // waits for dependencies; null for one its queue's history did not keep); and, while it
        // waits for them, how many have not finished and why it is blocked, as in the list.
        "/api/queues/job" => {
            let Some(id) = job_id(params) else {
                return Outcome::Bad("id is not a job id".into());
            };
            rows(
                client,
                "SELECT l.*, j.progress, l.end_time IS NULL AND l.run_at IS NULL AS waiting,
                        l.end_time IS NULL AND l.status = 'created' AND l.run_at > now() AS due_later, w.waits_for, w.blocked_by,
                        (SELECT coalesce(jsonb_agg(jsonb_build_object('id', d.id, 'queue', dl.queue, 'task', dl.task,
                                                                      'status', dl.status) ORDER BY d.id), '[]')
                         FROM unnest(l.depends_on) d(id)
                         LEFT JOIN LATERAL (
                             SELECT x.queue, x.task,
                                    CASE WHEN x.end_time IS NOT NULL OR x.run_at IS NOT NULL THEN x.status::text
                                         WHEN pgjobs._blocked_by(x.id) IS NULL THEN 'waiting' ELSE 'blocked' END AS status
                             FROM pgjobs.job_list x WHERE x.id = d.id
                         ) dl ON true) AS dependencies
                 FROM pgjobs.job_list l
                 LEFT JOIN pgjobs.jobs j ON j.id = l.id AND l.end_time IS NULL
                 LEFT JOIN LATERAL (
                     SELECT (SELECT count(*) FROM pgjobs.job_dependencies d
                             WHERE d.job_id = l.id AND EXISTS (SELECT FROM pgjobs.jobs x WHERE x.id = d.on_job)) AS waits_for,
                            pgjobs._blocked_by(l.id) AS blocked_by
                 ) w ON l.end_time IS NULL AND l.run_at IS NULL
                 WHERE l.id = $1",
                &[&id],
            )
            .await
        }
        // One job with how each job it waits for ended.
        "/api/job" => {
            let Some(id) = job_id(params) else {
                return Outcome::Bad("id is not a job id".into());
            };
            rows(
                client,
                "SELECT j.*, (SELECT coalesce(jsonb_agg(jsonb_build_object('id', d.id, 'status', d.status) ORDER BY d.id), '[]')
                              FROM pgjobs.batch_jobs d WHERE d.id = ANY (j.depends_on)) AS dependencies
                 FROM pgjobs.batch_jobs j WHERE j.id = $1",
                &[&id],
            ).await
        }
        _ => return Outcome::NotFound,
    };
    result.map(Outcome::Ok).unwrap_or_else(from_error)
}

fn field(body: &Value, name: &str) -> Option<String> {
    body.get(name).and_then(Value::as_str).map(String::from)
}

/// A whole number of the body that an integer holds.
fn int(body: &Value, name: &str) -> Option<i32> {
    body.get(name)?.as_i64()?.try_into().ok()
}

/// `{"jobs": [ids]}`.
fn job_ids(body: &Value) -> Option<Vec<i64>> {
    body.get("jobs")?
        .as_array()?
        .iter()
        .map(Value::as_i64)
        .collect()
}

/// An action on queue jobs: its statement, which takes them as one bigint[], and which jobs of a
/// filter it acts on (as a condition on job_list's columns, `f`), for an action on a whole
/// filter (`{"where": {...}}`); none: it acts on listed jobs only.
struct QueueJobsAction {
    statement: &'static str,
    takes: Option<&'static str>,
}

/// Each action on queue jobs by its address (`{"jobs": [ids]}`, or `{"where": filter}` for the
/// newest 1,000 jobs of a filter, as the counts address counts them: as many as the SQL API's
/// calls take at once).
const QUEUE_JOBS_ACTIONS: [(&str, QueueJobsAction); 5] = [
    // Each job's status after its abort, in one statement: another's job (P0002) aborts none.
    (
        "/api/queues/jobs/abort",
        QueueJobsAction {
            statement: "SELECT id, pgjobs.jobs_abort(id) AS status FROM unnest($1::bigint[]) id",
            takes: Some("f.end_time IS NULL"),
        },
    ),
    // Each job's due time after its unblock, in one statement: another's job (P0002) or one that
    // waits for no dependency (55000) unblocks none; so, for listed jobs only.
    (
        "/api/queues/jobs/unblock",
        QueueJobsAction {
            statement: "SELECT id, pgjobs.jobs_unblock(id) AS due FROM unnest($1::bigint[]) id",
            takes: None,
        },
    ),
    // The ids brought back: a completed, live or another's job is passed over, not refused.
    (
        "/api/queues/jobs/retry",
        QueueJobsAction {
            statement: "SELECT * FROM pgjobs.jobs_retry($1)",
            takes: Some(
                "f.end_time IS NOT NULL AND f.status IN ('failed', 'aborted') \
                 AND NOT starts_with(f.queue, 'pg_jobs.')",
            ),
        },
    ),
    // The jobs made due now: a running, finished or another's job is passed over.
    (
        "/api/queues/jobs/run-now",
        QueueJobsAction {
            statement: "SELECT * FROM pgjobs.jobs_reschedule($1)",
            takes: Some("f.end_time IS NULL AND f.status = 'created' AND f.run_at > now()"),
        },
    ),
    // The ids deleted: a running, finished or another's job is passed over.
    (
        "/api/queues/jobs/delete",
        QueueJobsAction {
            statement: "SELECT * FROM pgjobs.jobs_delete($1)",
            takes: Some("f.end_time IS NULL AND f.status = 'created'"),
        },
    ),
];

/// The jobs an action names: those listed, or those of the newest 1,000 of a filter that it acts
/// on.
async fn acted_on(
    client: &Client,
    action: &QueueJobsAction,
    body: &Value,
) -> Result<Vec<i64>, Outcome> {
    if body.get("jobs").is_some() {
        return job_ids(body).ok_or_else(|| Outcome::Bad("jobs is a list of job ids".into()));
    }
    let (Some(filter), Some(takes)) = (body.get("where"), action.takes) else {
        return Err(Outcome::Bad(
            "send {jobs: [ids]} or, but for an unblock, {where: {queue, status, key, q, month}}"
                .into(),
        ));
    };
    let filter = job_filter(|name| field(filter, name));
    let found = format!(
        "SELECT coalesce(array_agg(f.id), '{{}}') FROM {} f WHERE {takes}",
        found_queue_jobs!("1000")
    );
    client
        .query_one(
            &found,
            &[&filter[0], &filter[1], &filter[2], &filter[3], &filter[4]],
        )
        .await
        .map(|row| row.get(0))
        .map_err(from_error)
}

pub async fn act(client: &Client, path: &str, body: &Value) -> Outcome {
    if let Some(schedule) = schedule_of(path) {
        return rows(
            client,
            "SELECT * FROM pgjobs.routines_set_mode($1, $2)",
            &[&schedule, &field(body, "mode")],
        )
        .await
        .map(Outcome::Ok)
        .unwrap_or_else(from_error);
    }
    if let Some((_, action)) = QUEUE_JOBS_ACTIONS.iter().find(|(p, _)| *p == path) {
        let ids = match acted_on(client, action, body).await {
            Ok(ids) => ids,
            Err(e) => return e,
        };
        // The SQL API refuses an empty list; a filter may find nothing to act on.
        if ids.is_empty() {
            return Outcome::Ok("[]".into());
        }
        return rows(client, action.statement, &[&ids])
            .await
            .map(Outcome::Ok)
            .unwrap_or_else(from_error);
    }
    let result = match seed_address(path) {
        "/api/routines/restart" | "/api/routines/stop" => {
            let sql = if path.ends_with("restart") {
                "SELECT to_jsonb(pgjobs.routine_restart($1, $2))::text"
            } else {
                "SELECT to_jsonb(pgjobs.routine_stop($1, $2))::text"
            };
            value(
                client,
                sql,
                &[&field(body, "schedule"), &field(body, "routine")],
            )
            .await
        }
        "/api/schedules/mode" => {
            rows(
                client,
                "SELECT * FROM pgjobs.routines_set_mode($1, $2)",
                &[&field(body, "schedule"), &field(body, "mode")],
            )
            .await
        }
        // The functions return nothing: the one row of the call in FROM says it was done.
        "/api/cron/enable" => {
            value(
                client,
                "SELECT '{\"enabled\":true}' FROM pgjobs.jobs_enable_schedule($1)",
                &[&field(body, "name")],
            )
            .await
        }
        "/api/cron/disable" => {
            value(
                client,
                "SELECT '{\"enabled\":false}' FROM pgjobs.jobs_disable_schedule($1)",
                &[&field(body, "name")],
            )
            .await
        }
        // Run now: the job added.
        "/api/cron/run" => {
            value(
                client,
                "SELECT pgjobs.jobs_run_schedule($1)::text",
                &[&field(body, "name")],
            )
            .await
        }
        "/api/sql-jobs/abort" => {
            let Some(id) = body.get("id").and_then(Value::as_i64) else {
                return Outcome::Bad("id is a job id".into());
            };
            value(
                client,
                "SELECT to_jsonb(pgjobs.jobs_abort($1))::text",
                &[&id],
            )
            .await
        }
        "/api/queues/pause" => {
            rows(
                client,
                "SELECT * FROM pgjobs.jobs_pause($1)",
                &[&field(body, "queue")],
            )
            .await
        }
        // A queue's limits, as jobs_limit, jobs_rate_limit, jobs_key_limit, jobs_key_rate_limit,
        // jobs_unlimit and jobs_key_unlimit take them; a number missing or not one is null,
        // which the database refuses with what it wanted.
        "/api/queues/limit" => {
            rows(
                client,
                "SELECT * FROM pgjobs.jobs_limit($1, $2)",
                &[&field(body, "queue"), &int(body, "max_running")],
            )
            .await
        }
        "/api/queues/rate-limit" => {
            rows(
                client,
                "SELECT * FROM pgjobs.jobs_rate_limit($1, $2, make_interval(secs => $3))",
                &[
                    &field(body, "queue"),
                    &int(body, "claims"),
                    &body.get("per_seconds").and_then(Value::as_f64),
                ],
            )
            .await
        }
        "/api/queues/key-limit" => {
            rows(
                client,
                "SELECT * FROM pgjobs.jobs_key_limit($1, $2, coalesce($3, false), coalesce($4, ''))",
                &[
                    &field(body, "queue"),
                    &int(body, "max_per_key"),
                    &body.get("ordered").and_then(Value::as_bool),
                    &field(body, "prefix"),
                ],
            )
            .await
        }
        "/api/queues/key-rate-limit" => {
            rows(
                client,
                "SELECT * FROM pgjobs.jobs_key_rate_limit($1, $2, make_interval(secs => $3), coalesce($4, ''))",
                &[
                    &field(body, "queue"),
                    &int(body, "claims"),
                    &body.get("per_seconds").and_then(Value::as_f64),
                    &field(body, "prefix"),
                ],
            )
            .await
        }
        "/api/queues/unlimit" => {
            rows(
                client,
                "SELECT * FROM pgjobs.jobs_unlimit($1)",
                &[&field(body, "queue")],
            )
            .await
        }
        "/api/queues/key-unlimit" => {
            rows(
                client,
                "SELECT * FROM pgjobs.jobs_key_unlimit($1, coalesce($2, ''))",
                &[&field(body, "queue"), &field(body, "prefix")],
            )
            .await
        }
        "/api/queues/resume" => {
            value(
                client,
                "SELECT to_jsonb(pgjobs.jobs_resume($1))::text",
                &[&field(body, "queue")],
            )
            .await
        }
        "/api/jobs/cancel" => {
            if body.get("jobs").is_some() {
                let Some(ids) = job_ids(body) else {
                    return Outcome::Bad("jobs is a list of job ids".into());
                };
                rows(client, "SELECT * FROM pgjobs.batch_cancel($1)", &[&ids]).await
            } else if let Some(w) = body.get("where") {
                let st = statuses(w.get("status").and_then(Value::as_str));
                rows(
                    client,
                    "SELECT * FROM pgjobs.batch_cancel_where($1::text::date, $2, $3, $4, $5)",
                    &[
                        &field(w, "month"),
                        &st,
                        &field(w, "q"),
                        &field(w, "by"),
                        &field(w, "group"),
                    ],
                )
                .await
            } else {
                return Outcome::Bad("send {jobs: [...]} or {where: {...}}".into());
            }
        }
        _ => return Outcome::NotFound,
    };
    result.map(Outcome::Ok).unwrap_or_else(from_error)
}

#[cfg(test)]
mod tests {
    use super::{schedule_of, seed_address, statuses};

    #[test]
    fn seed_addresses() {
        assert_eq!(
            seed_address("/api/web/sched/jobs/groups"),
            "/api/jobs/groups"
        );
        assert_eq!(seed_address("/api/web/sched/jobs"), "/api/jobs/group");
        assert_eq!(
            seed_address("/api/web/sched/jobs/cancel"),
            "/api/jobs/cancel"
        );
        assert_eq!(seed_address("/api/routines"), "/api/routines");
        assert_eq!(
            schedule_of("/api/schedules/Night%20batch/mode").as_deref(),
            Some("Night batch")
        );
        assert_eq!(schedule_of("/api/schedules//mode"), None);
        assert_eq!(schedule_of("/api/schedules/x"), None);
        assert_eq!(schedule_of("/api/schedules/%FF/mode"), None);
    }

    #[test]
    fn status_words_from_the_address() {
        assert_eq!(statuses(None), None);
        assert_eq!(statuses(Some("")), None);
        assert_eq!(statuses(Some(" , ")), None);
        assert_eq!(
            statuses(Some("ERROR,BLOCKED")),
            Some(vec!["ERROR".to_string(), "BLOCKED".to_string()])
        );
    }
}
