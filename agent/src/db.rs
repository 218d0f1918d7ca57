//! The calls of the batch API (the README's "The agent's role" lists them), each a kept prepared
//! statement of one connection. Tokens and intervals travel as text, so the client needs no uuid
//! or interval types.

use postgres::{Client, Config, NoTls, Statement};
use std::collections::HashMap;
use std::time::Duration;

use crate::backoff::Backoff;
use crate::proc::Spec;

/// A claimed job.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: i64,
    pub token: String,
    pub attempt: i32,
    pub kind: String,
    pub routine: Option<String>,
    /// The role that posted it: a kill job ends only its own owner's jobs.
    pub owner: Option<String>,
    pub spec: Spec,
    pub lease: Duration,
}

/// A job whose process started, to be said: its id, lease token and process id.
pub struct Started {
    pub id: i64,
    pub token: String,
    pub pid: i32,
}

/// What one batch_report_and_claim answered: the state of each job said to have started (its
/// lease state) and of each finished one (its status, or lost), busy for one whose row another
/// transaction held, in the order given; and the jobs claimed.
#[derive(Default)]
pub struct Answer {
    pub started: Vec<(i64, String)>,
    pub finished: Vec<(i64, String)>,
    pub claimed: Vec<Claimed>,
}

/// A finished job's report.
#[derive(Debug, Clone)]
pub struct Report {
    pub id: i64,
    pub token: String,
    pub exit_code: Option<i32>,
    pub run_time: Duration,
    pub stderr: String,
    pub stdout: String,
    pub cancelled: bool,
}

pub struct Db {
    client: Client,
    statements: HashMap<&'static str, Statement>,
}

const REGISTER: &str = "SELECT pgjobs.batch_register($1, $2, $3::text::jsonb)";
const READY_SIGNALS: &str = "SELECT pgjobs.batch_ready_signals($1)";
const CANCEL_SIGNAL: &str = "SELECT pgjobs.batch_cancel_signal($1)";
const REPORT_AND_CLAIM: &str = "SELECT report, id, state, lease_token::text, attempt, kind, routine,
            command, args, cwd, shell, env::text, extract(epoch FROM lease)::float8, owner
     FROM pgjobs.batch_report_and_claim($1, $2, $3, $4::text[]::uuid[], $5, $6,
                                        $7::text[]::uuid[], $8, $9::text[]::interval[], $10, $11, $12)";
const HEARTBEAT: &str =
    "SELECT id, lease_state FROM pgjobs.batch_heartbeat($1, $2::text[]::uuid[], $3, $4)";
const HAND_BACK: &str = "SELECT pgjobs.batch_hand_back($1, $2::text[]::uuid[])";

/// An error that means the connection is gone (the server stopped or restarted, the network
/// failed): reconnect. Anything else is an answer from a working server.
pub fn is_connection_error(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        let code = code.code();
        return code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03");
    }
    // No SQLSTATE: an I/O error or the like, not a refusal of the server.
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// The SQLSTATE and message of an error, for the log.
pub fn describe_error(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => {
            // "error connecting to server" alone does not say why: the causes follow.
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                let more = s.to_string();
                if !text.contains(&more) {
                    text.push_str(": ");
                    text.push_str(&more);
                }
                source = s.source();
            }
            text
        }
    }
}

/// How long a connection (`conn`: main or watch) waits before it tries again after `e`: the
/// next delay of its backoff, logged as a "reconnecting" event.
pub fn reconnect_delay(backoff: &mut Backoff, conn: &str, e: &postgres::Error) -> Duration {
    let delay = backoff.next_delay();
    crate::log!(
        "reconnecting",
        conn = conn,
        attempt = backoff.attempts(),
        delay = delay.as_secs_f64(),
        error = describe_error(e)
    );
    delay
}

/// A job's extra environment, from its env jsonb: strings as they are, other values as JSON.
pub fn env_pairs(env: Option<&str>) -> Vec<(String, String)> {
    let Some(text) = env else { return vec![] };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => map
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect(),
        _ => vec![],
    }
}

/// A claimed job from a row of batch_report_and_claim.
fn claimed(row: &postgres::Row) -> Claimed {
    let args: Option<Vec<Option<String>>> = row.get(8);
    let env: Option<String> = row.get(11);
    let lease: Option<f64> = row.get(12);
    Claimed {
        id: row.get(1),
        token: row.get(3),
        attempt: row.get::<_, Option<i32>>(4).unwrap_or(1),
        kind: row
            .get::<_, Option<String>>(5)
            .unwrap_or_else(|| "batch".into()),
        routine: row.get(6),
        owner: row.get(13),
        spec: Spec {
            command: row.get::<_, Option<String>>(7).unwrap_or_default(),
            args: args
                .unwrap_or_default()
                .into_iter()
                .map(Option::unwrap_or_default)
                .collect(),
            cwd: row.get(9),
            shell: row.get::<_, Option<bool>>(10).unwrap_or(false),
            env: env_pairs(env.as_deref()),
        },
        lease: match lease {
            Some(l) if l.is_finite() && l > 0.0 => Duration::from_secs_f64(l),
            _ => Duration::from_secs(3600),
        },
    }
}

impl Db {
    pub fn connect(config: &Config) -> Result<Db, postgres::Error> {
        Ok(Db {
            client: config.connect(NoTls)?,
            statements: HashMap::new(),
        })
    }

    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    fn statement(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.statements.insert(sql, s.clone());
        Ok(s)
    }

    pub fn register(
        &mut self,
        computer: &str,
        capacity: i32,
        info: &serde_json::Value,
    ) -> Result<(), postgres::Error> {
        let s = self.statement(REGISTER)?;
        self.client
            .execute(&s, &[&computer, &capacity, &info.to_string()])?;
        Ok(())
    }

    pub fn ready_signals(&mut self, computer: &str) -> Result<Vec<String>, postgres::Error> {
        let s = self.statement(READY_SIGNALS)?;
        let row = self.client.query_one(&s, &[&computer])?;
        let signals: Option<Vec<Option<String>>> = row.get(0);
        Ok(signals.unwrap_or_default().into_iter().flatten().collect())
    }

    /// The payload of pgjobs_batch_cancel that means "a job of this computer was cancelled".
    pub fn cancel_signal(&mut self, computer: &str) -> Result<String, postgres::Error> {
        let s = self.statement(CANCEL_SIGNAL)?;
        let signal: Option<String> = self.client.query_one(&s, &[&computer])?.get(0);
        Ok(signal.unwrap_or_default())
    }

    pub fn listen(&mut self) -> Result<(), postgres::Error> {
        self.client
            .batch_execute("LISTEN pgjobs_ready; LISTEN pgjobs_batch_cancel")
    }

    /// One turn of the agent's loop: the jobs `started`, the `finished` ones, and up to `n`
    /// jobs claimed (0: none), in one call and one transaction.
    pub fn report_and_claim(
        &mut self,
        computer: &str,
        n: i32,
        started: &[Started],
        finished: &[Report],
    ) -> Result<Answer, postgres::Error> {
        let s = self.statement(REPORT_AND_CLAIM)?;
        let started_ids: Vec<i64> = started.iter().map(|s| s.id).collect();
        let started_tokens: Vec<&str> = started.iter().map(|s| s.token.as_str()).collect();
        let pids: Vec<i32> = started.iter().map(|s| s.pid).collect();
        let ids: Vec<i64> = finished.iter().map(|r| r.id).collect();
        let tokens: Vec<&str> = finished.iter().map(|r| r.token.as_str()).collect();
        let exit_codes: Vec<Option<i32>> = finished.iter().map(|r| r.exit_code).collect();
        let run_times: Vec<String> = finished
            .iter()
            .map(|r| format!("{:.6} seconds", r.run_time.as_secs_f64()))
            .collect();
        let stderr: Vec<&str> = finished.iter().map(|r| r.stderr.as_str()).collect();
        let stdout: Vec<&str> = finished.iter().map(|r| r.stdout.as_str()).collect();
        let cancelled: Vec<bool> = finished.iter().map(|r| r.cancelled).collect();
        let rows = self.client.query(
            &s,
            &[
                &computer,
                &n,
                &started_ids,
                &started_tokens,
                &pids,
                &ids,
                &tokens,
                &exit_codes,
                &run_times,
                &stderr,
                &stdout,
                &cancelled,
            ],
        )?;
        let mut answer = Answer::default();
        for row in &rows {
            let report: String = row.get(0);
            let state = || {
                (
                    row.get(1),
                    row.get::<_, Option<String>>(2).unwrap_or_default(),
                )
            };
            match report.as_str() {
                "started" => answer.started.push(state()),
                "finished" => answer.finished.push(state()),
                _ => answer.claimed.push(claimed(row)),
            }
        }
        Ok(answer)
    }

    pub fn heartbeat(
        &mut self,
        ids: &[i64],
        tokens: &[String],
        stderr: &[Option<String>],
        stdout: &[Option<String>],
    ) -> Result<Vec<(i64, String)>, postgres::Error> {
        let s = self.statement(HEARTBEAT)?;
        let rows = self.client.query(&s, &[&ids, &tokens, &stderr, &stdout])?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), r.get::<_, Option<String>>(1).unwrap_or_default()))
            .collect())
    }

    pub fn hand_back(&mut self, ids: &[i64], tokens: &[String]) -> Result<i32, postgres::Error> {
        let s = self.statement(HAND_BACK)?;
        let n: Option<i32> = self.client.query_one(&s, &[&ids, &tokens])?.get(0);
        Ok(n.unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_from_jsonb_text() {
        assert_eq!(env_pairs(None), vec![]);
        assert_eq!(env_pairs(Some("{}")), vec![]);
        let mut pairs = env_pairs(Some(r#"{"A": "x y", "N": 3, "B": true, "Z": null}"#));
        pairs.sort();
        assert_eq!(
            pairs,
            vec![
                ("A".into(), "x y".into()),
                ("B".into(), "true".into()),
                ("N".into(), "3".into())
            ]
        );
        assert_eq!(env_pairs(Some("[1]")), vec![]);
    }
}
