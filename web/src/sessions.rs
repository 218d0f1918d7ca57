//! Sessions in memory: a random id (the cookie), a CSRF token, and the connection made as the
//! person's role. A session idle for IDLE_LIMIT ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const IDLE_LIMIT: Duration = Duration::from_secs(12 * 3600);

pub struct Session {
    pub id: String,
    pub csrf: String,
    pub role: String,
    pub client: Mutex<postgres::Client>,
    last_used: Mutex<Instant>,
}

impl Session {
    pub fn csrf_matches(&self, token: &str) -> bool {
        same_token(&self.csrf, token)
    }
}

/// Compares in constant time (for tokens of the same length; the length is public).
fn same_token(expected: &str, given: &str) -> bool {
    let (a, b) = (expected.as_bytes(), given.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[derive(Default)]
pub struct Sessions {
    by_id: Mutex<HashMap<String, Arc<Session>>>,
}

/// 128 random bits from the operating system, in hexadecimal.
fn random_token() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random numbers");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Sessions {
    pub fn create(&self, role: String, client: postgres::Client) -> Arc<Session> {
        let session = Arc::new(Session {
            id: random_token(),
            csrf: random_token(),
            role,
            client: Mutex::new(client),
            last_used: Mutex::new(Instant::now()),
        });
        let mut map = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, s| {
            s.last_used
                .lock()
                .map(|t| t.elapsed() < IDLE_LIMIT)
                .unwrap_or(false)
        });
        map.insert(session.id.clone(), session.clone());
        session
    }

    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        let mut map = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        let session = map.get(id)?.clone();
        let mut last = session.last_used.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() >= IDLE_LIMIT {
            drop(last);
            map.remove(id);
            return None;
        }
        *last = Instant::now();
        drop(last);
        Some(session)
    }

    pub fn remove(&self, id: &str) {
        self.by_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_128_random_bits() {
        let (a, b) = (random_token(), random_token());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn a_token_matches_only_itself() {
        let t = random_token();
        assert!(same_token(&t, &t.clone()));
        assert!(!same_token(&t, &random_token()));
        assert!(!same_token(&t, ""));
        assert!(!same_token(&t, &t[..31]));
    }
}
