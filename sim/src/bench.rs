//! The compute scheduler's drain beside the queue's: one job of N slices (race, level 1, offer 0,
//! no estimation phase) drained by W worker threads fetching tasks of 1, 10 and 100 slices (one
//! round trip to fetch, one to submit), then N queued no-op jobs drained by the same threads with
//! jobs_claim(n) and jobs_complete(ids, tokens) (also two round trips), at the same batch sizes.
//! Each phase runs for at most `seconds` (or until nothing is left), so that tasks of one slice
//! do not take an hour; the counts drained are in the table. The background worker's fold of the
//! reports into statistics runs meanwhile, as it would in production, and is part of the cost.

use crate::{connect, create_roles, make_proxy, run_tag, work};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const SIZES: [i32; 3] = [1, 10, 100];
const FILL_CHUNK: i64 = 1000;

pub fn run(dsn: &str, slices: i64, workers: usize, seconds: u64) -> i32 {
    let mut admin = connect(dsn, None);
    let tag = run_tag("bench");
    let owner = format!("{tag}_owner");
    let roles: Vec<String> = (0..workers).map(|k| format!("{tag}_w{k}")).collect();
    create_roles(&mut admin, std::slice::from_ref(&owner));
    create_roles(&mut admin, &roles);
    roles.iter().for_each(|w| make_proxy(&mut admin, dsn, w, &owner));
    let group: String = admin
        .query_one("INSERT INTO pgjobs.compute_groups (owner, join_key) VALUES ($1::text::regrole, 'bench') RETURNING opaque_id::text", &[&owner])
        .unwrap()
        .get(0);
    let mut as_owner = connect(dsn, Some(&owner));
    as_owner.execute("SELECT pgjobs.compute_group_set_secret($1::text::uuid, 'bench bench bench')", &[&group]).unwrap();

    let started = Instant::now();
    let spec = serde_json::json!({
        "work": "(x) => x * x", "input": {"range": {"start": 1, "end": slices}}, "groups": [group],
        "offer": 0, "max_slices_per_task": 100, "estimation_slices": 0, "name": format!("{tag} drain"),
    });
    let job: i64 = as_owner.query_one("SELECT pgjobs.compute_deploy($1::text::jsonb)", &[&spec.to_string()]).unwrap().get(0);
    let deployed = started.elapsed().as_secs_f64();
    eprintln!("deployed job {job} of {slices} slices in {deployed:.1} s");
    let mut clients: Vec<_> = roles
        .iter()
        .map(|role| {
            let mut c = connect(dsn, Some(role));
            c.query_one("SELECT pgjobs.compute_worker_register($1, '[]', '{\"map-basic\": \"1.0.0\"}')::text", &[role]).unwrap();
            c.query_one("SELECT pgjobs.compute_worker_join($1::text::uuid, 'bench', 'bench bench bench')", &[&group]).unwrap();
            c
        })
        .collect();

    let task = |c: &mut postgres::Client, size: i32| -> i64 {
        let rows = c.query("SELECT task_token::text, slice_number, datum FROM pgjobs.compute_fetch($1)", &[&size]).unwrap();
        if rows.is_empty() {
            return 0;
        }
        let token: String = rows[0].get(0);
        let numbers: Vec<i32> = rows.iter().map(|r| r.get(1)).collect();
        let results: Vec<String> = rows.iter().map(|r| work(r.get(2))).collect();
        let ms: Vec<f64> = vec![1.0; rows.len()];
        let bytes: Vec<i64> = vec![8; rows.len()];
        c.query("SELECT pgjobs.compute_submit($1::text::uuid, $2, $3, $4, $5, $4, $6, $6)", &[&token, &numbers, &results, &ms, &vec![0.0f64; rows.len()], &bytes])
            .unwrap()
            .len() as i64
    };
    // One task first, not timed: the first fetch moves the new job to running while holding it,
    // and the fetches that meet it held pass it over and find nothing, which would end a drain.
    task(&mut clients[0], 1);
    let compute: Vec<(i64, f64)> = SIZES
        .iter()
        .map(|&size| {
            let result = drain(&mut clients, seconds, |c| task(c, size));
            eprintln!("compute, tasks of {size}: {} slices in {:.1} s", result.0, result.1);
            result
        })
        .collect();
    // What is left of the job goes: the queue's phases should not share the server with it.
    as_owner.query_one("SELECT pgjobs.compute_cancel($1)::text", &[&job]).unwrap();

    let queue = format!("{tag}_queue");
    let filled = Instant::now();
    let next = AtomicI64::new(0);
    thread::scope(|s| {
        for role in &roles {
            let (queue, next) = (&queue, &next);
            s.spawn(move || {
                let mut c = connect(dsn, Some(role));
                let batch = serde_json::to_string(&vec![serde_json::json!({"task": "noop", "queue": queue}); FILL_CHUNK as usize]).unwrap();
                while next.fetch_add(FILL_CHUNK, Ordering::Relaxed) < slices {
                    c.query_one("SELECT count(*) FROM pgjobs.jobs_add_batch($1::text::jsonb)", &[&batch]).unwrap();
                }
            });
        }
    });
    let queued = next.load(Ordering::Relaxed).min((slices + FILL_CHUNK - 1) / FILL_CHUNK * FILL_CHUNK);
    eprintln!("queued {queued} jobs in {:.1} s", filled.elapsed().as_secs_f64());
    let queue_rates: Vec<(i64, f64)> = SIZES
        .iter()
        .map(|&size| {
            let result = drain(&mut clients, seconds, |c| {
                let rows = c.query("SELECT id, lease_token::text FROM pgjobs.jobs_claim('bench', ARRAY[$1], $2)", &[&queue, &size]).unwrap();
                if rows.is_empty() {
                    return 0;
                }
                let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                let tokens: Vec<String> = rows.iter().map(|r| r.get(1)).collect();
                c.execute("SELECT pgjobs.jobs_complete($1, $2::text[]::uuid[])", &[&ids, &tokens]).unwrap();
                ids.len() as i64
            });
            eprintln!("queue, batches of {size}: {} jobs in {:.1} s", result.0, result.1);
            result
        })
        .collect();
    admin.execute("DELETE FROM pgjobs.jobs WHERE queue = $1", &[&queue]).unwrap();

    let version: String = admin.query_one("SHOW server_version", &[]).unwrap().get(0);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let cpus = thread::available_parallelism().map_or(0, |n| n.get());
    let mut table = format!(
        "Compute drain beside the queue's: {workers} workers, {seconds} s at most per row, one job of {slices} slices \
         (deployed in {deployed:.1} s) and {queued} queued jobs; PostgreSQL {version}, {cpus} CPUs, load {}\n\n\
         | task size | compute slices/s | queue jobs/s | ratio | drained (compute / queue) |\n|---|---|---|---|---|\n",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    for ((size, c), q) in SIZES.iter().zip(&compute).zip(&queue_rates) {
        let (cr, qr) = (c.0 as f64 / c.1, q.0 as f64 / q.1);
        table += &format!("| {size} | {cr:.0} | {qr:.0} | {:.2} | {} / {} |\n", cr / qr, c.0, q.0);
    }
    print!("{table}");
    let out = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/bench");
    std::fs::create_dir_all(out).and_then(|_| std::fs::write(format!("{out}/compute.md"), &table)).unwrap();
    0
}

/// Runs `step` on every client, each in its own thread, until `seconds` have passed or a step
/// finds nothing left; returns the items the steps handled and the seconds taken.
fn drain(clients: &mut [postgres::Client], seconds: u64, step: impl Fn(&mut postgres::Client) -> i64 + Sync) -> (i64, f64) {
    let (done, empty) = (AtomicI64::new(0), AtomicBool::new(false));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    thread::scope(|s| {
        for c in clients.iter_mut() {
            let (done, empty, step) = (&done, &empty, &step);
            s.spawn(move || {
                while Instant::now() < deadline && !empty.load(Ordering::Relaxed) {
                    match step(c) {
                        0 => empty.store(true, Ordering::Relaxed),
                        n => _ = done.fetch_add(n, Ordering::Relaxed),
                    }
                }
            });
        }
    });
    (done.load(Ordering::Relaxed), started.elapsed().as_secs_f64())
}
