//! Sessions in memory, and the database connections behind them.
//!
//! A session is a random id (the cookie) and a CSRF token for a role. The sessions of one role
//! share that role's pool: the connections their logins made, at most `connections_per_role` of
//! them kept. The password is not kept, so a pool cannot open connections of its own: it keeps
//! one while the role has a session, closes the others once unused for `connection_idle`, and
//! closes all when the role's last session ends. A role has at most `per_role` sessions (a new
//! login ends the one least recently used), and a session ends after `idle` without a request
//! or `lifetime` after its login, whichever comes first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio_postgres::Client;

pub struct Limits {
    pub idle: Duration,
    pub lifetime: Duration,
    pub per_role: usize,
    pub connections_per_role: usize,
    pub connection_idle: Duration,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A role's connections. `ready` holds one permit per connection in `idle`, so that a request
/// waits its turn for one without holding a thread; closed, it tells waiters the pool is gone.
pub struct Pool {
    ready: Semaphore,
    state: Mutex<PoolState>,
}

struct PoolState {
    /// Idle connections and since when, the most recently used last.
    idle: Vec<(Client, Instant)>,
    /// Idle and leased.
    open: usize,
}

pub enum LeaseError {
    /// Every connection of the role stayed busy for the whole wait.
    Busy,
    /// The pool is closed: its connections were lost, or the role's sessions ended.
    Lost,
}

/// A connection taken from a pool, given back when dropped (also when the request is dropped
/// half-way because its client went away).
pub struct Lease {
    pool: Arc<Pool>,
    client: Option<Client>,
}

impl std::ops::Deref for Lease {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client
            .as_ref()
            .expect("a lease holds its connection until dropped")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            self.pool.give_back(client);
        }
    }
}

impl Pool {
    fn new() -> Arc<Pool> {
        Arc::new(Pool {
            ready: Semaphore::new(0),
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
            }),
        })
    }

    /// Keeps a login's connection if the pool has room; otherwise it is closed (dropped).
    fn add(&self, client: Client, max: usize) {
        let mut state = locked(&self.state);
        if state.open < max && !self.ready.is_closed() {
            state.open += 1;
            state.idle.push((client, Instant::now()));
            self.ready.add_permits(1);
        }
    }

    pub async fn lease(self: &Arc<Self>, wait: Duration) -> Result<Lease, LeaseError> {
        let permit = match tokio::time::timeout(wait, self.ready.acquire()).await {
            Err(_) => return Err(LeaseError::Busy),
            Ok(Err(_)) => return Err(LeaseError::Lost),
            Ok(Ok(p)) => p,
        };
        permit.forget();
        let (client, _) = locked(&self.state)
            .idle
            .pop()
            .expect("a permit per idle connection");
        Ok(Lease {
            pool: self.clone(),
            client: Some(client),
        })
    }

    fn give_back(&self, client: Client) {
        let mut state = locked(&self.state);
        if client.is_closed() || self.ready.is_closed() {
            state.open -= 1;
            if state.open == 0 {
                self.ready.close();
            }
        } else {
            state.idle.push((client, Instant::now()));
            self.ready.add_permits(1);
        }
    }

    /// Closes the pool: idle connections now, leased ones when given back.
    fn close(&self) {
        let mut state = locked(&self.state);
        self.ready.close();
        let closed = state.idle.len();
        state.idle.clear();
        state.open -= closed;
    }

    /// Closes connections idle longer than `limit`, keeping one.
    fn close_idle(&self, limit: Duration) {
        let mut state = locked(&self.state);
        while state.open > 1
            && state
                .idle
                .first()
                .is_some_and(|(_, since)| since.elapsed() >= limit)
        {
            let Ok(permit) = self.ready.try_acquire() else {
                return;
            };
            permit.forget();
            state.idle.remove(0);
            state.open -= 1;
        }
    }

    #[cfg(test)]
    fn open(&self) -> usize {
        locked(&self.state).open
    }
}

pub struct Session {
    pub id: String,
    pub csrf: String,
    pub role: String,
    pub pool: Arc<Pool>,
    created: Instant,
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

/// 128 random bits from the operating system, in hexadecimal.
pub fn random_token() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random numbers");
    pg_jobs_core::hex(&bytes)
}

pub struct Sessions {
    limits: Limits,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Each session and when it was last used.
    by_id: HashMap<String, (Arc<Session>, Instant)>,
    pools: HashMap<String, Arc<Pool>>,
}

impl Inner {
    fn expire(&mut self, limits: &Limits) {
        self.by_id.retain(|_, (s, used)| {
            used.elapsed() < limits.idle && s.created.elapsed() < limits.lifetime
        });
        self.close_unused_pools();
    }

    fn close_unused_pools(&mut self) {
        let by_id = &self.by_id;
        self.pools.retain(|role, pool| {
            let used = by_id.values().any(|(s, _)| &s.role == role);
            if !used {
                pool.close();
            }
            used
        });
    }
}

impl Sessions {
    pub fn new(limits: Limits) -> Sessions {
        Sessions {
            limits,
            inner: Mutex::default(),
        }
    }

    /// A session for a role whose login made `client`.
    pub fn create(&self, role: String, client: Client) -> Arc<Session> {
        let mut inner = locked(&self.inner);
        inner.expire(&self.limits);
        loop {
            let of_role = inner.by_id.values().filter(|(s, _)| s.role == role);
            if of_role.clone().count() < self.limits.per_role {
                break;
            }
            let oldest = of_role
                .min_by_key(|(_, used)| *used)
                .map(|(s, _)| s.id.clone())
                .expect("a role at its cap has sessions");
            inner.by_id.remove(&oldest);
        }
        let pool = inner
            .pools
            .entry(role.clone())
            .or_insert_with(Pool::new)
            .clone();
        pool.add(client, self.limits.connections_per_role);
        let session = Arc::new(Session {
            id: random_token(),
            csrf: random_token(),
            role,
            pool,
            created: Instant::now(),
        });
        inner
            .by_id
            .insert(session.id.clone(), (session.clone(), Instant::now()));
        session
    }

    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        let mut inner = locked(&self.inner);
        let (session, used) = inner.by_id.get_mut(id)?;
        if used.elapsed() >= self.limits.idle || session.created.elapsed() >= self.limits.lifetime {
            inner.by_id.remove(id);
            inner.close_unused_pools();
            return None;
        }
        *used = Instant::now();
        Some(session.clone())
    }

    pub fn remove(&self, id: &str) {
        let mut inner = locked(&self.inner);
        inner.by_id.remove(id);
        inner.close_unused_pools();
    }

    /// Ends every session of a role whose connection was lost: the others went with the same
    /// server, most likely, and none can be opened again without the password.
    pub fn end_role(&self, role: &str) {
        let mut inner = locked(&self.inner);
        inner.by_id.retain(|_, (s, _)| s.role != role);
        inner.close_unused_pools();
    }

    /// Ends expired sessions and closes connections left idle; run every second.
    pub fn sweep(&self) {
        let mut inner = locked(&self.inner);
        inner.expire(&self.limits);
        for pool in inner.pools.values() {
            pool.close_idle(self.limits.connection_idle);
        }
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

    #[test]
    fn an_empty_closed_pool_leases_nothing() {
        let pool = Pool::new();
        pool.close();
        assert_eq!(pool.open(), 0);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let leased = rt.block_on(pool.lease(Duration::from_millis(10)));
        assert!(matches!(leased, Err(LeaseError::Lost)));
    }
}
