//! pg_jobs_web: the SCHED page. An HTTP server that shows pg_jobs' routines and batch jobs to a
//! person logged in with a PostgreSQL role and its password. Every read and every command goes
//! through pgjobs' views and functions on a connection made as that role, so row-level security
//! decides what each person sees and may do. A script may instead send a role's API token
//! (`--api-role`): its request runs on a connection of its own with the role set to the token's.
//!
//! A client costs a parked task, not a thread: headers and bodies have time limits, connections
//! are bounded in all and per client address, and the database is reached asynchronously, so
//! neither a slow client nor a slow statement keeps anyone else waiting.

mod api;
mod guard;
mod sessions;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_LENGTH};
use hyper::http::request::Parts;
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use sessions::{Lease, LeaseError, Limits, Session, Sessions};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
/// app.js with the vocabulary of `pg_jobs_core` in place of its placeholder.
static APP_JS_SERVED: std::sync::LazyLock<String> = std::sync::LazyLock::new(app_js);
const APP_CSS: &str = include_str!("../assets/app.css");
const COOKIE: &str = "pgjobs_session";
/// The known-browser cookie (see guard.rs).
const KNOWN_COOKIE: &str = "pgjobs_known";
const USAGE: &str = "usage: pg_jobs_web [--listen ADDR] [--dsn DSN] [--origin URL]...
                   [--session-idle SECS] [--session-lifetime SECS]
                   [--sessions-per-role N] [--connections-per-role N] [--api-role ROLE]
  --listen ADDR             where to listen (default 127.0.0.1:28818)
  --dsn DSN                 the database: host, port, dbname, options, application_name (default
                            host=localhost dbname=pg_jobs, application_name pg_jobs_web); the
                            user and the password are those of the person logging in
  --origin URL              an origin the page is also served from (https://jobs.example behind
                            a proxy that changes Host); POSTs from any other are refused
  --session-idle SECS       a session ends after this long without a request (default 1800)
  --session-lifetime SECS   and this long after its login in any case (default 43200)
  --sessions-per-role N     a new login ends the role's least recently used beyond N (default 8)
  --connections-per-role N  database connections kept per role, shared by its sessions (default 2)
  --api-role ROLE           answer requests with an API token (Authorization: Bearer), logging in
                            as ROLE, a member of pgjobs_api (its password, if one is asked, in
                            PG_JOBS_WEB_API_PASSWORD); without it such requests are refused";
/// The largest request body read (a cancel of many ticked jobs fits).
const MAX_BODY: usize = 1 << 20;
/// To send a request's headers; also the longest a kept-alive connection waits for the next.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// To send a request's body, all of it.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// For a write to make progress: a client that stops reading its answers is let go.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_CONNECTIONS: usize = 256;
/// A browser opens up to 6 per site; a few people behind one address fit.
const CONNECTIONS_PER_ADDRESS: usize = 16;
/// Logins checked with the database at once (each opens a connection), and how long one waits
/// for its turn.
const LOGIN_CHECKS: usize = 4;
const LOGIN_WAIT: Duration = Duration::from_secs(10);
/// How long a request waits for one of its role's connections.
const LEASE_WAIT: Duration = Duration::from_secs(30);
/// A role's connections beyond its first close after this long unused.
const CONNECTION_IDLE: Duration = Duration::from_secs(60);
/// Bounds for the numeric flags (ten years of seconds).
const FLAG_MAX: u64 = 10 * 365 * 24 * 3600;

struct Args {
    listen: String,
    dsn: String,
    origins: Vec<String>,
    limits: Limits,
    api_role: Option<String>,
}

fn whole_number(value: Option<String>, flag: &str, max: u64) -> Result<u64, String> {
    let value = value.ok_or(format!("{flag} needs a number"))?;
    value
        .parse::<u64>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or(format!(
            "{flag}: {value} is not a whole number from 1 to {max}"
        ))
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        listen: "127.0.0.1:28818".into(),
        dsn: "host=localhost dbname=pg_jobs".into(),
        origins: Vec::new(),
        limits: Limits {
            idle: Duration::from_secs(1800),
            lifetime: Duration::from_secs(12 * 3600),
            per_role: 8,
            connections_per_role: 2,
            connection_idle: CONNECTION_IDLE,
        },
        api_role: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let seconds = |v, max| whole_number(v, &a, max).map(Duration::from_secs);
        match a.as_str() {
            "--listen" => args.listen = it.next().ok_or("--listen needs an address")?,
            "--dsn" => args.dsn = it.next().ok_or("--dsn needs a connection string")?,
            "--origin" => args.origins.push(
                it.next()
                    .ok_or("--origin needs a URL")?
                    .trim_end_matches('/')
                    .to_string(),
            ),
            "--session-idle" => args.limits.idle = seconds(it.next(), FLAG_MAX)?,
            "--session-lifetime" => args.limits.lifetime = seconds(it.next(), FLAG_MAX)?,
            "--sessions-per-role" => {
                args.limits.per_role = whole_number(it.next(), &a, 1000)? as usize
            }
            "--connections-per-role" => {
                args.limits.connections_per_role = whole_number(it.next(), &a, 100)? as usize
            }
            "--api-role" => args.api_role = Some(it.next().ok_or("--api-role needs a role")?),
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
    let mut base: tokio_postgres::Config = match args.dsn.parse() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pg_jobs_web: bad --dsn: {e}");
            std::process::exit(2);
        }
    };
    base.connect_timeout(Duration::from_secs(5));
    if base.get_application_name().is_none() {
        base.application_name("pg_jobs_web");
    }
    // The page's reads are short, but with a million jobs the planner's estimates of its views
    // (job_list's union of jobs and job_history) pass jit_above_cost, and compiling each plan
    // cost 0.3 to 0.5 s of a read that runs in a millisecond.
    let options = format!("{} -c jit=off", base.get_options().unwrap_or_default());
    base.options(options.trim_start());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    std::process::exit(runtime.block_on(serve(args, base)));
}

/// A connection's place in the bounds, given back when it closes.
struct Slot {
    _permit: OwnedSemaphorePermit,
    address: IpAddr,
    per_address: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Slot {
    fn take(
        all: &Arc<Semaphore>,
        per_address: &Arc<Mutex<HashMap<IpAddr, usize>>>,
        address: IpAddr,
    ) -> Option<Slot> {
        let permit = all.clone().try_acquire_owned().ok()?;
        let mut map = per_address.lock().unwrap_or_else(|p| p.into_inner());
        let n = map.entry(address).or_insert(0);
        if *n >= CONNECTIONS_PER_ADDRESS {
            return None;
        }
        *n += 1;
        Some(Slot {
            _permit: permit,
            address,
            per_address: per_address.clone(),
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut map = self.per_address.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get_mut(&self.address) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.address);
            }
        }
    }
}

/// A client's connection whose writes fail after WRITE_TIMEOUT without progress. Reads need no
/// such bound: hyper times the headers, and read_body the body.
struct Connection {
    io: tokio::net::TcpStream,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Connection {
    fn within_time<T>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if r.is_ready() {
            self.stalled = None;
            return r;
        }
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(WRITE_TIMEOUT)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write(cx, buf);
        this.within_time(cx, r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.within_time(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_flush(cx);
        this.within_time(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_shutdown(cx);
        this.within_time(cx, r)
    }
}

async fn serve(args: Args, base: tokio_postgres::Config) -> i32 {
    let listener = match tokio::net::TcpListener::bind(&args.listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("pg_jobs_web: cannot listen on {}: {e}", args.listen);
            return 1;
        }
    };
    eprintln!("pg_jobs_web: listening on http://{}", args.listen);
    let api = args.api_role.map(|role| {
        let mut config = base.clone();
        config.user(&role);
        if let Ok(password) = std::env::var("PG_JOBS_WEB_API_PASSWORD") {
            config.password(password);
        }
        config
    });
    let app = Arc::new(App {
        api,
        base,
        origins: args.origins,
        sessions: Sessions::new(args.limits),
        throttle: guard::Throttle::default(),
        login_checks: Semaphore::new(LOGIN_CHECKS),
    });
    let sweeper = app.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            sweeper.sessions.sweep();
        }
    });
    let all = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let per_address = Arc::new(Mutex::new(HashMap::new()));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors, most likely: connections close meanwhile.
                eprintln!("pg_jobs_web: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Past a bound the connection is closed at once, before anything is read.
        let Some(slot) = Slot::take(&all, &per_address, peer.ip()) else {
            continue;
        };
        let app = app.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let app = app.clone();
                async move { Ok::<_, Infallible>(app.handle(peer.ip(), request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(
                    TokioIo::new(Connection {
                        io: stream,
                        stalled: None,
                    }),
                    service,
                )
                .await;
            drop(slot);
        });
    }
}

pub struct App {
    /// How to connect for a request with an API token, if the server answers those.
    api: Option<tokio_postgres::Config>,
    base: tokio_postgres::Config,
    origins: Vec<String>,
    sessions: Sessions,
    throttle: guard::Throttle,
    login_checks: Semaphore,
}

pub type Reply = Response<Full<Bytes>>;

fn with_header(mut r: Reply, name: &'static str, value: &str) -> Reply {
    r.headers_mut()
        .append(name, HeaderValue::from_str(value).expect("a valid header"));
    r
}

fn with_security_headers(r: Reply) -> Reply {
    let r = with_header(
        r,
        "Content-Security-Policy",
        "default-src 'self'; frame-ancestors 'none'; form-action 'self'",
    );
    let r = with_header(r, "X-Content-Type-Options", "nosniff");
    let r = with_header(r, "X-Frame-Options", "DENY");
    // Not no-referrer: under it browsers send `Origin: null` with the page's own POSTs, which
    // the origin check then refuses.
    let r = with_header(r, "Referrer-Policy", "same-origin");
    with_header(r, "Cache-Control", "no-store")
}

/// The page's script, given the words the extension ranks statuses by: the routines' (most
/// pressing first) and their failing set, and the batch jobs' (NEW, which no job is shown with,
/// left out) with their active and problem sets.
fn app_js() -> String {
    use pg_jobs_core::{batch, routine};
    let vocabulary = serde_json::json!({
        "routine_statuses": routine::STATUS_WORDS,
        "routine_failing": routine::FAILING_WORDS,
        "job_statuses": batch::STATUS_WORDS.iter().filter(|w| **w != "NEW").collect::<Vec<_>>(),
        "job_active": batch::ACTIVE_WORDS,
        "job_problems": batch::PROBLEM_WORDS,
    });
    let placeholder = "/* the vocabulary of pg_jobs_core, put here by the server */ null";
    assert!(
        APP_JS.contains(placeholder),
        "app.js has the vocabulary's placeholder"
    );
    APP_JS.replace(placeholder, &vocabulary.to_string())
}

pub fn reply(status: u16, content_type: &str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = StatusCode::from_u16(status).expect("a valid status");
    with_header(r, "Content-Type", content_type)
}

pub fn json(status: u16, body: impl Into<Bytes>) -> Reply {
    reply(status, "application/json; charset=utf-8", body)
}

pub fn json_error(status: u16, message: &str) -> Reply {
    json(status, serde_json::json!({ "error": message }).to_string())
}

impl api::Outcome {
    fn into_reply(self) -> Reply {
        match self {
            api::Outcome::Ok(body) => json(200, body),
            api::Outcome::NotFound => json_error(404, "not found"),
            api::Outcome::Bad(message) => json_error(400, &message),
            api::Outcome::Sql(body) => json(400, body),
            api::Outcome::Lost => lost(),
        }
    }
}

fn lost() -> Reply {
    json(503, r#"{"error":"database not reachable","lost":true}"#)
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// A page of its own for what went wrong at login: wrong role or password, no database, too
/// many failures, another site's form.
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

fn too_many_failures(wait: Duration) -> Reply {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    with_header(
        login_failure_page(
            429,
            "login-throttled",
            "Too many failed logins",
            &format!(
                "Logins from here or as this role failed too often. Try again in {seconds} s."
            ),
        ),
        "Retry-After",
        &seconds.to_string(),
    )
}

fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all("cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| {
            v.split(';').find_map(|part| {
                let (k, v) = part.trim().split_once('=')?;
                (k == name).then(|| v.to_string())
            })
        })
}

/// The API token of `Authorization: Bearer <token>`.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    header_value(headers, "authorization")?
        .strip_prefix("Bearer ")
        .map(str::trim)
        .filter(|token| !token.is_empty())
}

fn header_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A POST's JSON body: refused unless it says it is JSON (a plain form cannot) and is; a refusal
/// as its status and message.
fn json_body(headers: &HeaderMap, body: &str) -> Result<serde_json::Value, (u16, &'static str)> {
    let is_json =
        header_value(headers, "content-type").is_some_and(|c| c.starts_with("application/json"));
    if !is_json {
        return Err((415, "send JSON"));
    }
    serde_json::from_str(body).map_err(|_| (400, "the body is not JSON"))
}

/// A request's query as parameters by name.
fn query_params(query: &str) -> HashMap<String, String> {
    form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect()
}

async fn read_body(headers: &HeaderMap, body: Incoming) -> Result<String, Reply> {
    let declared =
        header_value(headers, CONTENT_LENGTH.as_str()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(json_error(413, "the request's body is too large"));
    }
    let body = Limited::new(body, MAX_BODY).collect();
    match tokio::time::timeout(BODY_TIMEOUT, body).await {
        Err(_) => Err(json_error(408, "the request's body did not come in time")),
        Ok(Err(e)) if e.is::<LengthLimitError>() => {
            Err(json_error(413, "the request's body is too large"))
        }
        Ok(Err(_)) => Err(json_error(400, "the request's body was cut off")),
        Ok(Ok(c)) => String::from_utf8(c.to_bytes().to_vec())
            .map_err(|_| json_error(400, "the request's body is not UTF-8 text")),
    }
}

impl App {
    async fn handle(&self, peer: IpAddr, request: Request<Incoming>) -> Reply {
        // The body is read (within read_body's bounds) before any answer, a refusal too: a reply
        // sent with the body unread makes hyper close the connection after it, which a client
        // that keeps its connections may already have taken for its next request (the browser
        // tests' HTTP client saw the peer disconnect).
        let (request, body) = request.into_parts();
        let reply = match read_body(&request.headers, body).await {
            Ok(body) => self.route(peer, &request, &body).await,
            Err(refusal) => refusal,
        };
        with_security_headers(reply)
    }

    async fn route(&self, peer: IpAddr, request: &Parts, body: &str) -> Reply {
        let path = request.uri.path();
        let query = request.uri.query().unwrap_or("");
        let method = &request.method;
        if method == Method::POST && !guard::same_origin(&request.headers, &self.origins) {
            return if path == "/login" {
                login_failure_page(
                    403,
                    "login-cross-site",
                    "Refused",
                    "This login was sent from another site's page.",
                )
            } else {
                json_error(403, "a request from another site's page")
            };
        }
        match (method, path) {
            // Seed 001's address of the page too.
            (&Method::GET, "/" | "/admin/sched") => {
                reply(200, "text/html; charset=utf-8", INDEX_HTML)
            }
            (&Method::GET, "/app.js") => reply(
                200,
                "text/javascript; charset=utf-8",
                APP_JS_SERVED.as_str(),
            ),
            (&Method::GET, "/app.css") => reply(200, "text/css; charset=utf-8", APP_CSS),
            (&Method::POST, "/login") => self.login(peer, &request.headers, body).await,
            (_, p) if p.starts_with("/api/") && bearer(&request.headers).is_some() => {
                self.with_token(peer, request, body).await
            }
            (_, p) if p.starts_with("/api/") || p == "/logout" => {
                let Some(session) =
                    cookie_value(&request.headers, COOKIE).and_then(|id| self.sessions.get(&id))
                else {
                    return json(401, r#"{"error":"not logged in","login":true}"#);
                };
                match *method {
                    Method::GET => self.read(&session, path, query).await,
                    Method::POST => {
                        // A state-changing request: the session's CSRF token in a header, which a
                        // page of another site cannot set, and JSON, which a plain form cannot send.
                        let token = header_value(&request.headers, "x-csrf-token").unwrap_or("");
                        if !session.csrf_matches(token) {
                            return json_error(403, "missing or wrong CSRF token");
                        }
                        if path == "/logout" {
                            self.sessions.remove(&session.id);
                            return with_header(
                                json(200, r#"{"ok":true}"#),
                                "Set-Cookie",
                                &format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
                            );
                        }
                        match json_body(&request.headers, body) {
                            Ok(body) => self.act(&session, path, &body).await,
                            Err((status, message)) => json_error(status, message),
                        }
                    }
                    _ => json_error(405, "method not allowed"),
                }
            }
            _ => json_error(404, "not found"),
        }
    }

    /// A request with an API token: on a connection of its own, made as the server's API role,
    /// the role set to the token's (`_api_token_role`, which refuses a token unknown or revoked)
    /// for its statement. A script, not a page, sends it: no cookie, so no CSRF token is asked
    /// for; its POSTs are JSON, as the page's.
    async fn with_token(&self, peer: IpAddr, request: &Parts, body: &str) -> Reply {
        let Some(config) = &self.api else {
            return json_error(
                401,
                "this server takes no API tokens (it runs without --api-role)",
            );
        };
        if let Some(wait) = self.throttle.address_locked(peer) {
            return too_many_failures(wait);
        }
        let token = bearer(&request.headers).unwrap_or_default().to_string();
        let body = match request.method {
            Method::GET => None,
            Method::POST => match json_body(&request.headers, body) {
                Ok(body) => Some(body),
                Err((status, message)) => return json_error(status, message),
            },
            _ => return json_error(405, "method not allowed"),
        };
        let Ok(Ok(_turn)) = tokio::time::timeout(LOGIN_WAIT, self.login_checks.acquire()).await
        else {
            return json_error(503, "too many requests with tokens at once; try again");
        };
        let client = match config.connect(tokio_postgres::NoTls).await {
            Ok((client, connection)) => {
                tokio::spawn(connection);
                client
            }
            Err(_) => return lost(),
        };
        let role = client
            .query_one(
                "SELECT set_config('role', pgjobs._api_token_role($1), false)",
                &[&token],
            )
            .await;
        let role: String = match role {
            Ok(row) => row.get(0),
            Err(e)
                if e.code()
                    == Some(
                        &tokio_postgres::error::SqlState::INVALID_AUTHORIZATION_SPECIFICATION,
                    ) =>
            {
                self.throttle.address_failed(peer);
                return json_error(401, "invalid or revoked API token");
            }
            Err(e) => return api::from_error(e).into_reply(),
        };
        let path = request.uri.path();
        let outcome = match body {
            None if path == "/api/me" => {
                return json(200, serde_json::json!({ "role": role }).to_string())
            }
            None => {
                api::read(
                    &client,
                    path,
                    &query_params(request.uri.query().unwrap_or("")),
                )
                .await
            }
            Some(body) => api::act(&client, path, &body).await,
        };
        outcome.into_reply()
    }

    async fn login(&self, peer: IpAddr, headers: &HeaderMap, body: &str) -> Reply {
        if let Some(wait) = self.throttle.address_locked(peer) {
            return too_many_failures(wait);
        }
        let known = cookie_value(headers, KNOWN_COOKIE);
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
        let attempt = self.throttle.attempt(peer, &role, known.as_deref());
        if let Some(wait) = self.throttle.locked(&attempt) {
            return too_many_failures(wait);
        }
        let Ok(Ok(_turn)) = tokio::time::timeout(LOGIN_WAIT, self.login_checks.acquire()).await
        else {
            return login_failure_page(
                503,
                "login-busy",
                "Too many logins at once",
                "Other logins are being checked; try again in a moment.",
            );
        };
        let mut config = self.base.clone();
        config.user(&role).password(&password);
        match config.connect(tokio_postgres::NoTls).await {
            Ok((client, connection)) => {
                tokio::spawn(connection);
                let known = self.throttle.succeeded(&attempt, &role);
                let session = self.sessions.create(role, client);
                let r = with_header(reply(303, "text/plain", ""), "Location", "/");
                let r = with_header(
                    r,
                    "Set-Cookie",
                    &format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", session.id),
                );
                with_header(
                    r,
                    "Set-Cookie",
                    &format!(
                        "{KNOWN_COOKIE}={known}; HttpOnly; SameSite=Strict; Path=/login; Max-Age={}",
                        guard::KNOWN_MAX_AGE.as_secs()
                    ),
                )
            }
            Err(e) => match e.as_db_error().map(|d| d.code().code()) {
                // invalid_password, invalid_authorization_specification (no such role, or pg_hba
                // refuses it): the same answer, so that the page does not tell which.
                Some("28P01") | Some("28000") => {
                    self.throttle.failed(&attempt);
                    login_failure_page(
                        401,
                        "login-wrong",
                        "Wrong role or password",
                        "The database refused this role and password. Check both and try again.",
                    )
                }
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

    async fn read(&self, session: &Arc<Session>, path: &str, query: &str) -> Reply {
        if path == "/api/me" {
            return json(
                200,
                serde_json::json!({ "role": session.role, "csrf": session.csrf }).to_string(),
            );
        }
        let params = query_params(query);
        match self.lease(session).await {
            Ok(client) => {
                let outcome = api::read(&client, path, &params).await;
                self.answer(session, client, outcome)
            }
            Err(r) => r,
        }
    }

    async fn act(&self, session: &Arc<Session>, path: &str, body: &serde_json::Value) -> Reply {
        match self.lease(session).await {
            Ok(client) => {
                let outcome = api::act(&client, path, body).await;
                self.answer(session, client, outcome)
            }
            Err(r) => r,
        }
    }

    /// One of the session's role's connections; none left ends the role's sessions.
    async fn lease(&self, session: &Session) -> Result<Lease, Reply> {
        match session.pool.lease(LEASE_WAIT).await {
            Ok(client) if !client.is_closed() => Ok(client),
            Ok(_) | Err(LeaseError::Lost) => {
                self.sessions.end_role(&session.role);
                Err(lost())
            }
            Err(LeaseError::Busy) => Err(json_error(
                503,
                "the connections of this role stayed busy; try again",
            )),
        }
    }

    fn answer(&self, session: &Session, client: Lease, outcome: api::Outcome) -> Reply {
        if let api::Outcome::Lost = outcome {
            drop(client);
            self.sessions.end_role(&session.role);
        }
        outcome.into_reply()
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

#[cfg(test)]
mod page_vocabulary {
    #[test]
    fn the_page_ranks_statuses_as_the_extension_does() {
        let served = super::app_js();
        assert!(!served.contains("put here by the server */ null"));
        assert!(served.contains(
            r#""job_statuses":["ERROR","BLOCKED","CANCEL","RUNNING","FETCHED","PENDING","WAITING","COMPLETED"]"#
        ));
        assert!(served.contains(r#""routine_failing":["ERROR","DELAYED","SILENT"]"#));
        assert!(
            served.contains(r#""job_active":["BLOCKED","RUNNING","FETCHED","PENDING","WAITING"]"#)
        );
        assert!(served.contains(r#""job_problems":["ERROR","BLOCKED"]"#));
    }
}
