//! pg_jobs_compute_sim: the compute scheduler (sql/083_compute_work.sql) driven as its users
//! would drive it, from outside, over ordinary connections.
//!
//!   pg_jobs_compute_sim simulate --dsn DSN
//!       owners, groups, jobs and 20 workers at once, then checks of what must hold afterwards;
//!       prints `ok - ...` / `not ok - ...: detail` lines and exits 1 if any failed.
//!   pg_jobs_compute_sim crash-load --dsn DSN [--seconds 120]
//!       prints a run tag, deploys two jobs and works on them with 8 workers until the server is
//!       stopped under it (exit 0), then `submitted N`: the reports acknowledged before the crash.
//!   pg_jobs_compute_sim crash-check --dsn DSN --tag TAG [--submitted N]
//!       after the restart: finishes that run's jobs, then the simulation's checks on them.
//!   pg_jobs_compute_sim bench --dsn DSN [--slices 1000000] [--workers 8] [--seconds 30]
//!       slices/s fetched and completed at tasks of 1, 10 and 100 slices, beside the queue's own
//!       drain at the same batch sizes; a Markdown table, also written to target/bench/compute.md.
//!
//! DSN is a superuser's (it creates roles and groups); the simulated parties connect as roles of
//! their own made from it, since the scheduler's functions act for the role that connected.

mod bench;
mod crash;
mod simulate;
mod store;

use postgres::{Client, Config, NoTls};
use std::process::exit;
use std::str::FromStr;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let option = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let number = |name: &str, default: i64| option(name).map_or(default, |v| v.parse().unwrap_or_else(|_| usage()));
    let Some(dsn) = option("--dsn") else { usage() };
    let code = match args.first().map(String::as_str) {
        Some("simulate") => simulate::run(&dsn),
        Some("crash-load") => crash::load(&dsn, number("--seconds", 120) as u64),
        Some("crash-check") => crash::check(&dsn, &option("--tag").unwrap_or_else(|| usage()), option("--submitted").map(|n| n.parse().unwrap_or_else(|_| usage()))),
        Some("bench") => bench::run(&dsn, number("--slices", 1_000_000), number("--workers", 8) as usize, number("--seconds", 30) as u64),
        _ => usage(),
    };
    exit(code);
}

fn usage() -> ! {
    eprintln!("usage: pg_jobs_compute_sim simulate --dsn DSN\n       pg_jobs_compute_sim crash-load --dsn DSN [--seconds N]\n       pg_jobs_compute_sim crash-check --dsn DSN --tag TAG [--submitted N]\n       pg_jobs_compute_sim bench --dsn DSN [--slices N] [--workers N] [--seconds N]");
    exit(2);
}

/// A connection as `role` (None: the DSN's own user), to the DSN's server and database.
pub fn connect(dsn: &str, role: Option<&str>) -> Client {
    let mut config = Config::from_str(dsn).unwrap_or_else(|e| panic!("bad DSN {dsn:?}: {e}"));
    if let Some(role) = role {
        config.user(role);
    }
    config.connect(NoTls).unwrap_or_else(|e| panic!("cannot connect as {role:?}: {e}"))
}

/// Login roles, members of pgjobs_user. Names carry the run's tag: roles are cluster-wide and a
/// run must not meet a former run's workers, earnings or groups.
pub fn create_roles(admin: &mut Client, names: &[String]) {
    for name in names {
        admin.batch_execute(&format!("CREATE ROLE {name} LOGIN IN ROLE pgjobs_user")).unwrap();
    }
}

/// Makes `worker` a proxy of `owner` (what it does is the owner's), as the owner does it.
pub fn make_proxy(admin: &mut Client, dsn: &str, worker: &str, owner: &str) {
    admin.batch_execute(&format!("GRANT {worker} TO {owner}")).unwrap();
    connect(dsn, Some(owner))
        .execute("SELECT pgjobs.jobs_add_proxy($1::text::regrole, $2::text::regrole)", &[&worker, &owner])
        .unwrap();
}

/// A tag for this run's names: seconds since the epoch, in base 36.
pub fn run_tag(prefix: &str) -> String {
    let mut n = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut digits = Vec::new();
    while n > 0 {
        digits.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize]);
        n /= 36;
    }
    digits.reverse();
    format!("{prefix}{}", String::from_utf8(digits).unwrap())
}

/// What a worker computes from a slice's datum: a number squared ("data:,7" gives "49"), any
/// other datum reversed. Deterministic, so two honest copies agree and the checks know the answer.
pub fn work(datum: &str) -> String {
    let body = datum.strip_prefix("data:,").unwrap_or(datum);
    match body.parse::<i64>() {
        Ok(n) => (n * n).to_string(),
        Err(_) => body.chars().rev().collect(),
    }
}

/// splitmix64's finaliser: a cheap deterministic stream of measurements without a random crate.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A fraction in [0, 1) from a seed.
pub fn unit(seed: u64) -> f64 {
    (mix(seed) >> 11) as f64 / (1u64 << 53) as f64
}
