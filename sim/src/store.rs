//! A result store for the simulation's job whose results go elsewhere (seed 000's result
//! storage): a small HTTP server on the loopback that keeps each result a worker POSTs, by the
//! address it was POSTed to, for the checks to read back. It takes a POST only with the job's
//! token among its parameters, and answers every seventh one 503 without keeping it: a failed
//! POST is the worker's to report (it hands the slice back), and the slice must still end with
//! its result stored.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// A POST of seven that is refused.
const REFUSED_EVERY: usize = 7;

#[derive(Default)]
struct Kept {
    results: Mutex<HashMap<String, String>>,
    posts: AtomicUsize,
    refused: AtomicUsize,
}

pub struct Store {
    /// `http://127.0.0.1:<port>`: what the group's owner lets its workers send results to.
    pub origin: String,
    pub token: String,
    kept: Arc<Kept>,
}

impl Store {
    /// Listens on a free port of the loopback until the process ends.
    pub fn start(token: &str) -> Store {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port for the result store");
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let kept = Arc::new(Kept::default());
        let (served, token_wanted) = (kept.clone(), token.to_string());
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (kept, token) = (served.clone(), token_wanted.clone());
                thread::spawn(move || {
                    let _ = serve(stream, &kept, &token);
                });
            }
        });
        Store { origin, token: token.to_string(), kept }
    }

    /// The result kept at `url`, if a POST to it succeeded.
    pub fn result(&self, url: &str) -> Option<String> {
        let path = url.strip_prefix(&self.origin)?;
        self.kept.results.lock().unwrap().get(path).cloned()
    }

    /// POSTs answered 503.
    pub fn refused(&self) -> usize {
        self.kept.refused.load(Ordering::Relaxed)
    }
}

/// One request on one connection (each answer closes it): a POST of a JSON object with the
/// token and the result.
fn serve(stream: TcpStream, kept: &Kept, token: &str) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or_default().to_string(), parts.next().unwrap_or_default().to_string());
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let posted: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let status = if method != "POST" {
        "405 Method Not Allowed"
    } else if posted["token"] != token {
        "403 Forbidden"
    } else if kept.posts.fetch_add(1, Ordering::Relaxed) % REFUSED_EVERY == REFUSED_EVERY - 1 {
        kept.refused.fetch_add(1, Ordering::Relaxed);
        "503 Service Unavailable"
    } else if let Some(result) = posted["result"].as_str() {
        kept.results.lock().unwrap().insert(path, result.to_string());
        "204 No Content"
    } else {
        "400 Bad Request"
    };
    let mut stream = stream;
    write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
    stream.flush()
}
