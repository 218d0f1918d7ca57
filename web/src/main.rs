//! pg_jobs_web: the SCHED page. A small synchronous HTTP server that shows pg_jobs' routines and
//! batch jobs to a person logged in with a PostgreSQL role and its password. Every read and every
//! command goes through pgjobs' views and functions on a connection made as that role, so
//! row-level security decides what each person sees and may do.

mod api;
mod sessions;

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use sessions::{Session, Sessions};
use tiny_http::{Header, Method, Request, Response, Server};

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const APP_CSS: &str = include_str!("../assets/app.css");
const COOKIE: &str = "pgjobs_session";
const USAGE: &str = "usage: pg_jobs_web [--listen ADDR] [--dsn DSN]
  --listen ADDR  where to listen (default 127.0.0.1:28818)
  --dsn DSN      the database: host, port, dbname, options (default host=localhost dbname=pg_jobs);
                 the user and the password are those of the person logging in";
/// The largest request body read (a cancel of many ticked jobs fits).
const MAX_BODY: u64 = 1 << 20;
const WORKERS: usize = 8;

struct Args {
    listen: String,
    dsn: String,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        listen: "127.0.0.1:28818".into(),
        dsn: "host=localhost dbname=pg_jobs".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--listen" => args.listen = it.next().ok_or("--listen needs an address")?,
            "--dsn" => args.dsn = it.next().ok_or("--dsn needs a connection string")?,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("pg_jobs_web: {e}");
            }
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    let mut base: postgres::Config = match args.dsn.parse() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pg_jobs_web: bad --dsn: {e}");
            std::process::exit(2);
        }
    };
    base.connect_timeout(Duration::from_secs(5));
    base.application_name("pg_jobs_web");
    let server = match Server::http(&args.listen) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("pg_jobs_web: cannot listen on {}: {e}", args.listen);
            std::process::exit(1);
        }
    };
    eprintln!("pg_jobs_web: listening on http://{}", args.listen);
    let app = Arc::new(App {
        base,
        sessions: Sessions::default(),
    });
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (server, app) = (server.clone(), app.clone());
            std::thread::spawn(move || {
                for request in server.incoming_requests() {
                    app.handle(request);
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
}

pub struct App {
    base: postgres::Config,
    sessions: Sessions,
}

pub type Reply = Response<std::io::Cursor<Vec<u8>>>;

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("a valid header")
}

fn with_security_headers(r: Reply) -> Reply {
    r.with_header(header(
        "Content-Security-Policy",
        "default-src 'self'; frame-ancestors 'none'; form-action 'self'",
    ))
    .with_header(header("X-Content-Type-Options", "nosniff"))
    .with_header(header("X-Frame-Options", "DENY"))
    .with_header(header("Referrer-Policy", "no-referrer"))
    .with_header(header("Cache-Control", "no-store"))
}

pub fn reply(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
    Response::from_data(body.into())
        .with_status_code(status)
        .with_header(header("Content-Type", content_type))
}

pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Reply {
    reply(status, "application/json; charset=utf-8", body)
}

pub fn json_error(status: u16, message: &str) -> Reply {
    json(status, serde_json::json!({ "error": message }).to_string())
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// A page of its own for what went wrong at login: wrong role or password, or no database.
fn login_failure_page(status: u16, testid: &str, title: &str, detail: &str) -> Reply {
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>SCHED: {t}</title>\
         <link rel=\"stylesheet\" href=\"/app.css\"></head><body><main class=\"failure\" data-testid=\"{id}\">\
         <h1>{t}</h1><p>{d}</p><p><a href=\"/\" data-testid=\"login-again\">Log in again</a></p></main></body></html>",
        t = escape_html(title),
        d = escape_html(detail),
        id = escape_html(testid)
    );
    reply(status, "text/html; charset=utf-8", body)
}

fn cookie_value(request: &Request, name: &str) -> Option<String> {
    request
        .headers()
        .iter()
        .filter(|h| h.field.equiv("Cookie"))
        .find_map(|h| {
            h.value.as_str().split(';').find_map(|part| {
                let (k, v) = part.trim().split_once('=')?;
                (k == name).then(|| v.to_string())
            })
        })
}

fn header_value(request: &Request, name: &'static str) -> Option<String> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str().to_string())
}

fn read_body(request: &mut Request) -> Result<String, Reply> {
    let mut body = String::new();
    request
        .as_reader()
        .take(MAX_BODY)
        .read_to_string(&mut body)
        .map_err(|_| json_error(400, "the request's body is not UTF-8 text"))?;
    Ok(body)
}

impl App {
    fn handle(&self, mut request: Request) {
        let reply = self.route(&mut request);
        let _ = request.respond(with_security_headers(reply));
    }

    fn route(&self, request: &mut Request) -> Reply {
        let url = request.url().to_string();
        let (path, query) = url.split_once('?').unwrap_or((&url, ""));
        let method = request.method().clone();
        match (&method, path) {
            (Method::Get, "/") => reply(200, "text/html; charset=utf-8", INDEX_HTML),
            (Method::Get, "/app.js") => reply(200, "text/javascript; charset=utf-8", APP_JS),
            (Method::Get, "/app.css") => reply(200, "text/css; charset=utf-8", APP_CSS),
            (Method::Post, "/login") => self.login(request),
            (_, p) if p.starts_with("/api/") || p == "/logout" => {
                let Some(session) =
                    cookie_value(request, COOKIE).and_then(|id| self.sessions.get(&id))
                else {
                    return json(401, r#"{"error":"not logged in","login":true}"#);
                };
                match method {
                    Method::Get => self.read(&session, path, query),
                    Method::Post => {
                        // A state-changing request: the session's CSRF token in a header, which a
                        // page of another site cannot set, and JSON, which a plain form cannot send.
                        let token = header_value(request, "X-CSRF-Token").unwrap_or_default();
                        if !session.csrf_matches(&token) {
                            return json_error(403, "missing or wrong CSRF token");
                        }
                        if path == "/logout" {
                            self.sessions.remove(&session.id);
                            return json(200, r#"{"ok":true}"#).with_header(header(
                                "Set-Cookie",
                                &format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
                            ));
                        }
                        let is_json = header_value(request, "Content-Type")
                            .is_some_and(|c| c.starts_with("application/json"));
                        if !is_json {
                            return json_error(415, "send JSON");
                        }
                        match read_body(request) {
                            Ok(body) => self.act(&session, path, &body),
                            Err(r) => r,
                        }
                    }
                    _ => json_error(405, "method not allowed"),
                }
            }
            _ => json_error(404, "not found"),
        }
    }

    fn login(&self, request: &mut Request) -> Reply {
        let body = match read_body(request) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let (mut role, mut password) = (String::new(), String::new());
        for (k, v) in form_urlencoded::parse(body.as_bytes()) {
            match k.as_ref() {
                "role" => role = v.into_owned(),
                "password" => password = v.into_owned(),
                _ => {}
            }
        }
        if role.is_empty() {
            return login_failure_page(
                401,
                "login-wrong",
                "Wrong role or password",
                "Give a role and its password.",
            );
        }
        let mut config = self.base.clone();
        config.user(&role).password(&password);
        match config.connect(postgres::NoTls) {
            Ok(client) => {
                let session = self.sessions.create(role, client);
                Response::from_data(Vec::new())
                    .with_status_code(303)
                    .with_header(header("Location", "/"))
                    .with_header(header("Set-Cookie", &format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", session.id)))
            }
            Err(e) => match e.as_db_error().map(|d| d.code().code()) {
                // invalid_password, invalid_authorization_specification (no such role, or pg_hba
                // refuses it): the same answer, so that the page does not tell which.
                Some("28P01") | Some("28000") => login_failure_page(
                    401,
                    "login-wrong",
                    "Wrong role or password",
                    "The database refused this role and password. Check both and try again.",
                ),
                Some(_) => login_failure_page(
                    503,
                    "login-refused",
                    "The database refused the connection",
                    &e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default(),
                ),
                None => login_failure_page(
                    503,
                    "login-unreachable",
                    "Database not reachable",
                    "The page could not reach the database. It may be stopped or restarting; try again in a moment.",
                ),
            },
        }
    }

    fn read(&self, session: &Arc<Session>, path: &str, query: &str) -> Reply {
        if path == "/api/me" {
            return json(
                200,
                serde_json::json!({ "role": session.role, "csrf": session.csrf }).to_string(),
            );
        }
        let params: std::collections::HashMap<String, String> =
            form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect();
        self.with_client(session, |client| api::read(client, path, &params))
    }

    fn act(&self, session: &Arc<Session>, path: &str, body: &str) -> Reply {
        let body: serde_json::Value = match serde_json::from_str(body) {
            Ok(v) => v,
            Err(_) => return json_error(400, "the body is not JSON"),
        };
        self.with_client(session, |client| api::act(client, path, &body))
    }

    /// Runs a request on the session's connection; a lost connection ends the session.
    fn with_client(
        &self,
        session: &Arc<Session>,
        f: impl FnOnce(&mut postgres::Client) -> api::Outcome,
    ) -> Reply {
        let mut client = session.client.lock().unwrap_or_else(|p| p.into_inner());
        let outcome = if client.is_closed() {
            api::Outcome::Lost
        } else {
            f(&mut client)
        };
        match outcome {
            api::Outcome::Ok(body) => json(200, body),
            api::Outcome::NotFound => json_error(404, "not found"),
            api::Outcome::Bad(message) => json_error(400, &message),
            api::Outcome::Sql(body) => json(400, body),
            api::Outcome::Lost => {
                drop(client);
                self.sessions.remove(&session.id);
                json(503, r#"{"error":"database not reachable","lost":true}"#)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::escape_html;

    #[test]
    fn failure_pages_escape_what_the_database_said() {
        assert_eq!(escape_html(r#"<b a='1'>&"#), "&lt;b a=&#39;1&#39;&gt;&amp;");
    }
}
