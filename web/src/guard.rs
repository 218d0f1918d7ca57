//! What stands before a login: the origin check on every POST, and the back-off after wrong
//! passwords.
//!
//! Back-off. Failed logins are counted per client address (any role) and per role (any
//! address). Past a free allowance, each further failure locks the key for twice as long as
//! the one before (1 s, 2 s, 4 s, ... at most LOCK_MAX); while locked, every login it covers is
//! refused unchecked, the right password too, with 429 and Retry-After. A key is forgotten
//! FORGET after its last failure, or at once for a role when its password is given right.
//!
//! The per-role count bounds guessing from many addresses, but would let anyone lock the real
//! person out by failing on purpose. So a browser that has logged in as a role before carries
//! a cookie that names it (random, kept in memory): its logins as that role are judged by its
//! own failures only (KNOWN_FREE, then the cookie is forgotten), not by the role's or the
//! address's. A person on a browser never used here, while someone else keeps failing as
//! their role, waits out the role's lock like anyone.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hyper::HeaderMap;

use crate::sessions::random_token;

const ADDRESS_FREE: u32 = 10;
const ROLE_FREE: u32 = 5;
const KNOWN_FREE: u32 = 5;
const LOCK_MAX: Duration = Duration::from_secs(15 * 60);
const FORGET: Duration = Duration::from_secs(3600);
const PRUNE_EVERY: Duration = Duration::from_secs(60);
/// Browsers remembered per role (the least recently seen forgotten first).
const KNOWN_PER_ROLE: usize = 32;
pub const KNOWN_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 3600);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Address(IpAddr),
    Role(String),
}

struct Record {
    failures: u32,
    locked_until: Instant,
    last: Instant,
}

struct Known {
    role: String,
    failures: u32,
    seen: Instant,
}

#[derive(Default)]
pub struct Throttle {
    records: Mutex<HashMap<Key, Record>>,
    /// When forgotten records were last dropped: once a minute at most, not on every failure
    /// (a map grown by guesses from many addresses would make each failure sweep all of it).
    pruned: Mutex<Option<Instant>>,
    known: Mutex<HashMap<String, Known>>,
}

fn lock_for(failures: u32, free: u32) -> Duration {
    match failures.checked_sub(free) {
        None => Duration::ZERO,
        Some(n) => Duration::from_secs(1u64 << n.min(20)).min(LOCK_MAX),
    }
}

/// Who is trying: the address, the role, and the known-browser cookie if it names that role.
pub struct Attempt {
    keys: Vec<Key>,
    known: Option<String>,
}

impl Throttle {
    pub fn attempt(&self, address: IpAddr, role: &str, known_cookie: Option<&str>) -> Attempt {
        let known = known_cookie.and_then(|token| {
            let map = self.known.lock().unwrap_or_else(|p| p.into_inner());
            let k = map.get(token)?;
            (k.role == role && k.seen.elapsed() < KNOWN_MAX_AGE).then(|| token.to_string())
        });
        let keys = if known.is_some() {
            Vec::new()
        } else {
            vec![Key::Address(address), Key::Role(role.to_string())]
        };
        Attempt { keys, known }
    }

    /// How long the attempt must wait, if any of its keys is locked.
    pub fn locked(&self, attempt: &Attempt) -> Option<Duration> {
        let now = Instant::now();
        let records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        attempt
            .keys
            .iter()
            .filter_map(|k| records.get(k))
            .map(|r| r.locked_until.saturating_duration_since(now))
            .filter(|d| !d.is_zero())
            .max()
    }

    /// Whether an address is locked whatever the role (before the body is read).
    pub fn address_locked(&self, address: IpAddr) -> Option<Duration> {
        self.locked(&Attempt {
            keys: vec![Key::Address(address)],
            known: None,
        })
    }

    /// A failure counted against the address only (a wrong API token: it names no role).
    pub fn address_failed(&self, address: IpAddr) {
        self.failed(&Attempt {
            keys: vec![Key::Address(address)],
            known: None,
        })
    }

    pub fn failed(&self, attempt: &Attempt) {
        if let Some(token) = &attempt.known {
            let mut map = self.known.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(k) = map.get_mut(token) {
                k.failures += 1;
                if k.failures >= KNOWN_FREE {
                    map.remove(token);
                }
            }
            return;
        }
        let now = Instant::now();
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let mut pruned = self.pruned.lock().unwrap_or_else(|p| p.into_inner());
        if pruned.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
            records.retain(|_, r| r.locked_until > now || r.last.elapsed() < FORGET);
            *pruned = Some(now);
        }
        drop(pruned);
        for key in &attempt.keys {
            let free = match key {
                Key::Address(_) => ADDRESS_FREE,
                Key::Role(_) => ROLE_FREE,
            };
            let r = records.entry(key.clone()).or_insert(Record {
                failures: 0,
                locked_until: now,
                last: now,
            });
            if r.locked_until <= now && r.last.elapsed() >= FORGET {
                r.failures = 0;
            }
            r.failures += 1;
            r.last = now;
            r.locked_until = now + lock_for(r.failures, free);
        }
    }

    /// The right password: the role's count is forgotten, unless a known browser passed while it
    /// was locked (the address's count is not, so that logging in as one's own role does not buy
    /// guesses at others). Returns the known-browser cookie.
    pub fn succeeded(&self, attempt: &Attempt, role: &str) -> String {
        if attempt.known.is_none() {
            self.records
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&Key::Role(role.to_string()));
        }
        let mut map = self.known.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, k| k.seen.elapsed() < KNOWN_MAX_AGE);
        let token = attempt.known.clone().unwrap_or_else(random_token);
        map.insert(
            token.clone(),
            Known {
                role: role.to_string(),
                failures: 0,
                seen: Instant::now(),
            },
        );
        let mut of_role: Vec<(Instant, String)> = map
            .iter()
            .filter(|(_, k)| k.role == role)
            .map(|(t, k)| (k.seen, t.clone()))
            .collect();
        if of_role.len() > KNOWN_PER_ROLE {
            of_role.sort();
            for (_, t) in &of_role[..of_role.len() - KNOWN_PER_ROLE] {
                map.remove(t);
            }
        }
        token
    }
}

/// Whether a POST comes from this server's own page (or a client that is no browser).
///
/// Browsers send `Origin` with every POST, and `Sec-Fetch-Site` with every request (those of
/// recent years): either one naming another site refuses it. A request with neither comes from
/// no browser (curl, a script) and cannot be forged by another site's page, so it passes. The
/// server's own origin is the scheme and the `Host` the request was sent to, or one given with
/// `--origin` (a proxy that changes `Host`).
pub fn same_origin(headers: &HeaderMap, origins: &[String]) -> bool {
    let value = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("?"));
    if let Some(site) = value("sec-fetch-site") {
        if site != "same-origin" && site != "none" {
            return false;
        }
    }
    let Some(origin) = value("origin") else {
        return true;
    };
    if origins.iter().any(|o| o == origin) {
        return true;
    }
    let host = value("host").unwrap_or_default();
    ["http://", "https://"]
        .iter()
        .any(|scheme| origin.strip_prefix(scheme) == Some(host) && !host.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn origins() {
        let own = ("host", "127.0.0.1:8000");
        let cases: &[(&[(&'static str, &'static str)], bool)] = &[
            (&[own], true),
            (&[own, ("origin", "http://127.0.0.1:8000")], true),
            (&[own, ("origin", "https://127.0.0.1:8000")], true),
            (&[own, ("origin", "http://evil.example")], false),
            (&[own, ("origin", "http://127.0.0.1:8001")], false),
            (&[own, ("origin", "null")], false),
            (&[("origin", "http://")], false),
            (&[own, ("sec-fetch-site", "cross-site")], false),
            (&[own, ("sec-fetch-site", "same-site")], false),
            (&[own, ("sec-fetch-site", "same-origin")], true),
            (
                &[
                    own,
                    ("origin", "http://127.0.0.1:8000"),
                    ("sec-fetch-site", "cross-site"),
                ],
                false,
            ),
        ];
        for (pairs, want) in cases {
            assert_eq!(same_origin(&headers(pairs), &[]), *want, "{pairs:?}");
        }
        let proxied = [
            ("host", "10.0.0.5:28818"),
            ("origin", "https://jobs.example"),
        ];
        assert!(!same_origin(&headers(&proxied), &[]));
        assert!(same_origin(
            &headers(&proxied),
            &["https://jobs.example".into()]
        ));
    }

    #[test]
    fn lockouts_double_up_to_a_bound() {
        assert_eq!(lock_for(4, 5), Duration::ZERO);
        assert_eq!(lock_for(5, 5), Duration::from_secs(1));
        assert_eq!(lock_for(7, 5), Duration::from_secs(4));
        assert_eq!(lock_for(40, 5), LOCK_MAX);
        assert_eq!(lock_for(u32::MAX, 5), LOCK_MAX);
    }

    #[test]
    fn a_known_browser_is_judged_by_its_own_failures() {
        let t = Throttle::default();
        let (here, there) = ("127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap());
        let first = t.attempt(here, "ana", None);
        let cookie = t.succeeded(&first, "ana");
        for _ in 0..ROLE_FREE {
            let a = t.attempt(there, "ana", None);
            assert!(t.locked(&a).is_none());
            t.failed(&a);
        }
        assert!(t.locked(&t.attempt(there, "ana", None)).is_some());
        assert!(t.locked(&t.attempt(here, "ana", None)).is_some());
        let known = t.attempt(here, "ana", Some(&cookie));
        assert!(t.locked(&known).is_none());
        // The cookie names ana, not bob.
        assert!(t.attempt(here, "bob", Some(&cookie)).known.is_none());
        for _ in 0..KNOWN_FREE {
            t.failed(&t.attempt(here, "ana", Some(&cookie)));
        }
        assert!(t.attempt(here, "ana", Some(&cookie)).known.is_none());
    }
}
