//! The simulation: 3 owners, 3 compute groups (one limited), 11 jobs of 100 to 10,000 slices
//! (about 20,000 slices, 26,000 copies; one job's results POSTed to a result store of the
//! simulation's, see store.rs) and 20 workers at once, each its own role and connection; among
//! them one that returns wrong results, one that dies holding a task and one that rejects a job.
//! Then checks of what must hold by construction once every job has finished.

use crate::store::Store;
use crate::{connect, create_roles, make_proxy, mix, run_tag, unit, work};
use pg_jobs_core::eth;
use postgres::error::SqlState;
use postgres::{Client, Row};
use rust_decimal::{Decimal, RoundingStrategy};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Seconds a held copy may stay silent: short, so the dead worker's slices come back quickly.
const PROGRESS_TIMEOUT: i32 = 3;
const WORKERS: usize = 20;
const WRONG: usize = 17;
const DIES: usize = 18;
const REJECTS: usize = 19;
/// The dying worker does this many tasks properly, then takes one more and vanishes with it.
const DIES_AFTER: usize = 5;

pub struct Group {
    pub id: i64,
    pub opaque: String,
    pub join_key: String,
    /// The key of the group's join address.
    pub join_secret: [u8; 32],
    pub owner: usize,
    pub commission_rate: Decimal,
    pub fees: Decimal,
    pub max_sandboxes: Option<i64>,
    pub max_workers: Option<i64>,
}

pub enum Input {
    Range(i64),
    Pattern(&'static str),
    Values(Vec<String>),
}

impl Input {
    /// The datum compute_fetch hands out for a slice (see the statement hand in src/api/compute_fetch.sql, and _as_uri).
    pub fn datum(&self, slice: i32) -> String {
        match self {
            Input::Range(start) => format!("data:,{}", start + i64::from(slice) - 1),
            Input::Pattern(p) => p.replace("{slice}", &slice.to_string()),
            Input::Values(v) => format!("data:,{}", v[slice as usize - 1]),
        }
    }
    fn spec(&self, slices: i32) -> serde_json::Value {
        match self {
            Input::Range(start) => serde_json::json!({"range": {"start": start, "end": start + i64::from(slices) - 1}}),
            Input::Pattern(p) => serde_json::json!({"pattern": p, "count": slices}),
            Input::Values(v) => serde_json::json!({"values": v}),
        }
    }
}

pub struct Job {
    pub id: i64,
    pub name: &'static str,
    pub group: usize,
    pub slices: i32,
    pub consensus: bool,
    /// DCC per accepted report, and what the owner put in (fees and compute_fund's top-up included).
    pub payment: Decimal,
    pub deposit: Decimal,
}

/// What one worker thread saw, for the checks (the server's statistics are compared with it).
#[derive(Default)]
pub struct Tally {
    pub opaque: String,
    tasks: HashMap<i64, i64>,
    slices: HashMap<i64, i64>,
    pub outcomes: BTreeMap<String, i64>,
    pub errors: Vec<String>,
    /// Why the connection was lost, if it was: the thread ended there.
    pub lost: Option<String>,
    died_holding: Vec<(i64, i32)>,
    rejected: Option<i64>,
    slices_after_reject: i64,
    /// Slices handed back because their result's POST to the result store failed.
    returned: i64,
    /// Submits made again after a 55P03 (another copy's report of a slice held it for 5 s).
    submits_again: usize,
}

pub fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}

pub fn run(dsn: &str) -> i32 {
    let mut admin = connect(dsn, None);
    // Two statements: ALTER SYSTEM refuses the implicit transaction of a multi-statement query.
    admin.batch_execute(&format!("ALTER SYSTEM SET pg_jobs.compute_progress_timeout = {PROGRESS_TIMEOUT}")).unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    let failed = simulate(dsn, &mut admin);
    // Put back whatever happened (a panic in simulate ends the process: the caller's cluster is a test's).
    admin.batch_execute("ALTER SYSTEM RESET pg_jobs.compute_progress_timeout").unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    println!("# {failed} of the checks failed");
    i32::from(failed > 0)
}

fn simulate(dsn: &str, admin: &mut Client) -> usize {
    let tag = run_tag("sim");
    let owners: Vec<String> = (1..=3).map(|k| format!("{tag}_owner{k}")).collect();
    let workers: Vec<String> = (0..WORKERS).map(|k| format!("{tag}_w{k:02}")).collect();
    create_roles(admin, &owners);
    create_roles(admin, &workers);
    for (k, worker) in workers.iter().enumerate() {
        make_proxy(admin, dsn, worker, &owners[k % 3]);
    }

    // Group 0: unlimited, with a commission and fees. Group 1: at most 24 copies out and 4 workers
    // holding them. Group 2: consensus jobs only, no commission, where the wrong worker works.
    let groups: Vec<Group> = [
        (0, "0.1", "0.5", "0.25", None, None),
        (1, "0.05", "0", "0", Some(24), Some(4)),
        (2, "0", "0", "0", None, None),
    ]
    .into_iter()
    .map(|plan| create_group(admin, dsn, &tag, &owners, plan))
    .collect();

    // (name, group, input, slices, level, consensus, max_slices_per_task, offer or market value)
    let words = |n: usize, stem: &str| -> Vec<String> { (1..=n).map(|k| format!("{stem}-{k}")).collect() };
    let plan: Vec<JobPlan> = vec![
        ("range, race 1.0", 0, Input::Range(1), 10_000, 1.0, false, 10, Ok("0.001")),
        ("pattern, race 1.5", 0, Input::Pattern("https://data.example/{slice}.json"), 3000, 1.5, false, 25, Ok("0.0005")),
        ("tasks of one slice", 0, Input::Range(1000), 300, 1.0, false, 1, Ok("0.002")),
        ("underfunded", 0, Input::Range(5000), 1000, 1.0, false, 10, Ok("0.01")),
        ("limited group", 1, Input::Range(1), 4000, 1.0, false, 10, Ok("0.001")),
        ("limited group, values, race 1.5", 1, Input::Values(words(2000, "grain")), 2000, 1.5, false, 50, Ok("0.0002")),
        ("limited group, market value", 1, Input::Values(words(100, "pebble")), 100, 1.0, false, 5, Err(2)),
        ("consensus 2.0", 2, Input::Range(1), 2000, 2.0, true, 10, Ok("0.001")),
        ("consensus 2.0, pattern", 2, Input::Pattern("https://data.example/c/{slice}"), 1000, 2.0, true, 20, Ok("0.0003")),
        ("consensus 2.0, values, market value", 2, Input::Values(words(500, "stone")), 500, 2.0, true, 4, Err(1)),
        (STORED_ELSEWHERE, 0, Input::Range(70_000), 1000, 1.5, false, 10, Ok("0.001")),
    ];
    // Group 0 lets its workers send results to the store, where that job's results go.
    let store = Store::start(&format!("{tag}-token"));
    connect(dsn, Some(&owners[groups[0].owner]))
        .execute("INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin, type) VALUES ($1, $2::text, 'sendResults')",
                 &[&groups[0].id, &store.origin])
        .unwrap();
    // Groups 0 and 2 let their workers fetch the pattern jobs' data.
    for group in [&groups[0], &groups[2]] {
        connect(dsn, Some(&owners[group.owner]))
            .execute("INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin, type) VALUES ($1, 'https://data.example', 'fetchData')",
                     &[&group.id])
            .unwrap();
    }
    let result_storage = serde_json::json!({"url": format!("{}/r/{tag}/{{slice}}/{{copy}}", store.origin), "params": {"token": store.token}});
    let mut jobs = Vec::new();
    let mut inputs = Vec::new();
    for plan in plan {
        // Enough for every copy and a tiebreaker each, except the underfunded job: 200 slices.
        let group = &groups[plan.1];
        let deposit = if plan.0 == "underfunded" { group.fees + dec("2") } else { ample(group, &plan) };
        let results = (plan.0 == STORED_ELSEWHERE).then(|| result_storage.clone());
        jobs.push(deploy(dsn, &tag, &owners[group.owner], group, &plan, deposit, results));
        inputs.push(plan.2);
    }
    let job_ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
    // Group 1's CPU budget runs out mid-job (its jobs need about 700,000 ms); its owner grants
    // more once the group has stopped for want of it.
    connect(dsn, Some(&owners[groups[1].owner]))
        .query_one("SELECT granted_cpu_time FROM pgjobs.compute_group_budget($1, cpu_time => $2)", &[&groups[1].id, &BUDGET_MS])
        .unwrap();
    println!("# run {tag}: {} slices in {} jobs, {WORKERS} workers", jobs.iter().map(|j| j.slices).sum::<i32>(), jobs.len());

    // Which groups each worker joins: most are in two or three; the wrong worker only in the
    // consensus group (so its results meet another copy's); the dying and rejecting ones in group 0.
    let memberships = |k: usize| -> Vec<usize> {
        match k {
            WRONG => vec![2],
            DIES | REJECTS => vec![0],
            0..=5 => vec![0, 1],
            6..=11 => vec![0, 1, 2],
            _ => vec![1, 2],
        }
    };
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let monitor = {
        let (dsn, stop, group) = (dsn.to_string(), stop.clone(), groups[1].id);
        thread::spawn(move || watch_limits(&dsn, group, &stop))
    };
    let handles: Vec<_> = (0..WORKERS)
        .map(|k| {
            let (dsn, role, stop) = (dsn.to_string(), workers[k].clone(), stop.clone());
            let joins: Vec<Join> = memberships(k).iter().map(|&g| Join::of(&groups[g])).collect();
            thread::spawn(move || worker(&dsn, k, &role, &joins, &stop))
        })
        .collect();

    // Until every job has ended: the underfunded one is funded for the rest of its slices once
    // it has paused for want of funds.
    let mut nsf_seen: Option<(Decimal, Decimal)> = None;
    let mut budget_spent_seen: Option<i64> = None;
    let underfunded = jobs.iter().position(|j| j.name == "underfunded").unwrap();
    let timed_out = wait_for_jobs(admin, &job_ids, |admin, rows| {
        if budget_spent_seen.is_none() {
            budget_spent_seen = budget_spent(admin, groups[1].id);
            if budget_spent_seen.is_some() {
                connect(dsn, Some(&owners[groups[1].owner]))
                    .query_one("SELECT granted_cpu_time FROM pgjobs.compute_group_budget($1, cpu_time => 10000000)", &[&groups[1].id])
                    .unwrap();
            }
        }
        if nsf_seen.is_none() {
            if let Some(r) = rows.iter().find(|r| r.get::<_, i64>(0) == jobs[underfunded].id) {
                if r.get::<_, &str>(1) == "paused" && r.get::<_, i32>(2) & 64 != 0 {
                    let job = &mut jobs[underfunded];
                    let fin = admin
                        .query_one("SELECT slice_work_payment_total, funds FROM pgjobs.job_fin_data WHERE job_id = $1", &[&job.id])
                        .unwrap();
                    nsf_seen = Some((fin.get(0), fin.get(1)));
                    // Exactly what the rest of its slices cost: it should end with nothing left.
                    let more = job.payment * Decimal::from(job.slices) - fin.get::<_, Decimal>(1);
                    connect(dsn, Some(&owners[0])).query_one("SELECT pgjobs.compute_fund($1, $2)::text", &[&job.id, &more]).unwrap();
                    job.deposit += more;
                }
            }
        }
    });
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let tallies: Vec<Tally> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let limits = monitor.join().unwrap();
    wait_tasks_folded(admin);
    let outcomes = outcomes(&tallies);
    let submits_again: usize = tallies.iter().map(|t| t.submits_again).sum();
    println!("# all jobs ended in {:.1} s; outcomes of submitted slices: {outcomes:?}; {submits_again} submits made again after 55P03",
             elapsed.as_secs_f64());

    let mut checks = Checks::default();
    checks.check("every job ended within 10 minutes, never 60 s without a report", match timed_out {
        Some(when) => Err(when + &statuses(admin, &job_ids)),
        None => Ok(()),
    });
    check_no_errors(&mut checks, &tallies);
    let signers: Vec<String> = workers.iter().skip(1).step_by(2).cloned().collect();
    let signed: usize = (1..WORKERS).step_by(2).map(|k| memberships(k).len()).sum();
    let joined: i64 = admin
        .query_one(
            "SELECT count(*) FROM pgjobs.compute_group_workers m JOIN pgjobs.workers w ON w.opaque_id = m.worker_opaque_id
             WHERE w.identity::regrole::text = ANY ($1)",
            &[&signers],
        )
        .unwrap()
        .get(0);
    checks.check(&format!("the {} workers that joined by signing a challenge are in their {signed} groups", signers.len()),
                 if joined as usize == signed { Ok(()) } else { Err(format!("{joined} memberships")) });
    check_jobs_finished(&mut checks, admin, &job_ids);
    check_results(&mut checks, admin, &jobs, &inputs, Some(&store));
    check_stored_elsewhere(&mut checks, admin, &jobs, &store, &tallies);
    check_wrong_worker(&mut checks, admin, &jobs, &tallies[WRONG]);
    check_averages(&mut checks, admin, &jobs);
    check_money(&mut checks, admin, &jobs, &groups, &tallies);
    checks.check(&format!("the limited group never held more than {} copies nor {} workers ({} samples, at most {} copies and {} workers seen)",
                          groups[1].max_sandboxes.unwrap(), groups[1].max_workers.unwrap(), limits.samples, limits.most_copies, limits.most_workers),
                 if limits.violations.is_empty() { Ok(()) } else { Err(limits.violations.join("; ")) });
    check_period_stats(&mut checks, admin, &jobs, &groups, &tallies, true);
    check_dead_worker(&mut checks, admin, &tallies[DIES]);
    check_rejection(&mut checks, admin, &tallies[REJECTS]);
    check_budget(&mut checks, admin, groups[1].id, budget_spent_seen);
    checks.check("the underfunded job paused with nsf and, funded, finished with nothing left", match nsf_seen {
        None => Err("never seen paused with nsf".into()),
        Some((paid, funds)) => {
            let left: Decimal = admin.query_one("SELECT remaining FROM pgjobs.job_fin_data WHERE job_id = $1", &[&jobs[underfunded].id]).unwrap().get(0);
            println!("# the underfunded job paused with {paid} of {funds} DCC paid");
            if left.is_zero() { Ok(()) } else { Err(format!("{left} DCC remaining")) }
        }
    });
    checks.failed
}

/// The job whose results its workers POST to the simulation's result store.
const STORED_ELSEWHERE: &str = "results stored elsewhere, race 1.5";

/// Group 1's first grant of CPU milliseconds, spent mid-job.
const BUDGET_MS: i64 = 100_000;
/// The most a slice of the simulation measures (see worker): what one copy may overrun by.
const MOST_CPU_MS: i64 = 205;

/// How far past its budget `group` went, once it has stopped for want of it: nothing out, its
/// unfolded reports counted, and less left than a slice costs; None before.
fn budget_spent(admin: &mut Client, group: i64) -> Option<i64> {
    admin
        .query_opt(
            "SELECT -l.left FROM (
                 SELECT b.remaining_cpu_time - coalesce((SELECT sum(round(r.cpu_time))::int8 FROM pgjobs.slice_reports r
                                                          WHERE r.compute_group_id = $1 AND r.folded_seq IS NULL), 0) AS left
                 FROM pgjobs.compute_group_budgets b
                 WHERE b.compute_group_id = $1 AND b.granted_cpu_time = $2
                   AND NOT EXISTS (SELECT FROM pgjobs.compute_slices s WHERE s.compute_group_id = $1 AND s.lease_token IS NOT NULL)) l
             WHERE l.left < $3",
            &[&group, &BUDGET_MS, &MOST_CPU_MS],
        )
        .unwrap()
        .map(|row| row.get(0))
}

/// Group `group`'s budget ran out mid-job, by at most a copy per sandbox the group allows, and
/// what the fold spent is what the reports through it measured: granted = spent + remaining.
fn check_budget(checks: &mut Checks, admin: &mut Client, group: i64, overrun: Option<i64>) {
    checks.check(&format!("group 1's CPU budget of {BUDGET_MS} ms ran out mid-job, overrun by at most 24 copies of {MOST_CPU_MS} ms"),
                 match overrun {
                     None => Err("never seen spent".into()),
                     Some(over) if over > 24 * MOST_CPU_MS => Err(format!("overrun by {over} ms")),
                     Some(over) => {
                         println!("# group 1 stopped for want of CPU time, {} ms {}", over.abs(), if over > 0 { "past its budget" } else { "left" });
                         Ok(())
                     }
                 });
    let row = admin
        .query_one(
            "SELECT b.granted_cpu_time, b.spent_cpu_time, b.remaining_cpu_time,
                    (SELECT sum(round(r.cpu_time))::int8 FROM pgjobs.slice_reports r WHERE r.compute_group_id = $1)
             FROM pgjobs.compute_group_budgets b WHERE b.compute_group_id = $1",
            &[&group],
        )
        .unwrap();
    let (granted, spent, remaining, measured): (i64, i64, i64, i64) = (row.get(0), row.get(1), row.get(2), row.get(3));
    checks.check("group 1 spent exactly what the reports through it measured, and spent + remaining = granted",
                 if spent == measured && spent + remaining == granted {
                     Ok(())
                 } else {
                     Err(format!("granted {granted}, spent {spent}, remaining {remaining}, measured {measured}"))
                 });
}

#[derive(Default)]
pub struct Checks {
    pub failed: usize,
}

impl Checks {
    pub fn check(&mut self, what: &str, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => println!("ok - {what}"),
            Err(detail) => {
                self.failed += 1;
                println!("not ok - {what}: {detail}");
            }
        }
    }
}

/// The jobs' statuses, and what the background worker (which folds the reports and ends the
/// jobs) was doing and how long ago it said so, and what its backend waits for.
pub fn statuses(admin: &mut Client, job_ids: &[i64]) -> String {
    admin
        .query_one(
            "SELECT string_agg(c.job_id || ' ' || c.status || ' (' || (SELECT count(*) FROM pgjobs.compute_slices s WHERE s.job_id = c.job_id) || ' copies left)', ', ')
                    || '; launcher: ' || coalesce((SELECT format('alive %s, doing %s, heartbeat %s ago, waiting for %s %s, state %s, query %s',
                                                                 l.alive, l.doing, now() - l.heartbeat_at, a.wait_event_type, a.wait_event,
                                                                 a.state, left(a.query, 200))
                                                   FROM pgjobs.launcher l LEFT JOIN pg_stat_activity a ON a.pid = l.pid), 'none')
             FROM pgjobs.compute_jobs c WHERE c.job_id = ANY ($1)",
            &[&job_ids],
        )
        .unwrap()
        .get(0)
}

/// Group `owners[owner]`'s compute group, named and keyed `{tag}-g{owner}` with the secret "open
/// sesame, open sesame", and the join address of the key `join_secret(owner)`.
pub type GroupPlan = (usize, &'static str, &'static str, &'static str, Option<i64>, Option<i64>);

pub fn create_group(admin: &mut Client, dsn: &str, tag: &str, owners: &[String], plan: GroupPlan) -> Group {
    let (owner, rate, deploy_fee, add_job_fee, sandboxes, max_workers) = plan;
    let row = admin
        .query_one(
            "INSERT INTO pgjobs.compute_groups (owner, name, join_key, commission_rate, deploy_fee, add_job_fee,
                                                max_concurrent_sandboxes, max_concurrent_workers, join_address)
             VALUES ($1::text::regrole, $2, $2, $3::numeric, $4::numeric, $5::numeric, $6::int8::int4, $7::int8::int4, $8)
             RETURNING id, opaque_id::text",
            &[&owners[owner], &format!("{tag}-g{owner}"), &dec(rate), &dec(deploy_fee), &dec(add_job_fee), &sandboxes, &max_workers,
              &eth::checksummed(&eth::address_of_secret(&join_secret(owner)))],
        )
        .unwrap();
    let opaque: String = row.get(1);
    connect(dsn, Some(&owners[owner]))
        .execute("SELECT pgjobs.compute_group_set_secret($1::text::uuid, 'open sesame, open sesame')", &[&opaque])
        .unwrap();
    group_of(plan, tag, row.get(0), opaque)
}

/// The group `plan` made, as the checks expect it (another process's run: see crash.rs).
pub fn group_of(plan: GroupPlan, tag: &str, id: i64, opaque: String) -> Group {
    let (owner, rate, deploy_fee, add_job_fee, max_sandboxes, max_workers) = plan;
    let (commission_rate, fees) = (dec(rate), dec(deploy_fee) + dec(add_job_fee));
    Group { id, opaque, join_key: format!("{tag}-g{owner}"), join_secret: join_secret(owner), owner, commission_rate, fees, max_sandboxes, max_workers }
}

/// The key of group `owner`'s join address.
fn join_secret(owner: usize) -> [u8; 32] {
    [owner as u8 + 1; 32]
}

/// (name, group, input, slices, level, consensus, max_slices_per_task, offer or market value × 0.001 DCC)
pub type JobPlan = (&'static str, usize, Input, i32, f64, bool, i32, Result<&'static str, i32>);

/// The job `plan` deploys, with `id` (deployed by another process or here) and what was put in.
pub fn job_of(plan: &JobPlan, id: i64, deposit: Decimal) -> Job {
    let &(name, group, _, slices, _, consensus, _, price) = plan;
    let payment = match price {
        Ok(offer) => dec(offer),
        Err(multiplier) => Decimal::from(multiplier) * dec("0.001"),
    };
    Job { id, name, group, slices, consensus, payment, deposit }
}

/// Enough for every copy and a tiebreaker each, and the group's fees.
pub fn ample(group: &Group, plan: &JobPlan) -> Decimal {
    group.fees + job_of(plan, 0, Decimal::ZERO).payment * Decimal::from(plan.3) * Decimal::from(3)
}

/// Deploys `plan`, its results POSTed as `result_storage` says (None: kept in the database).
pub fn deploy(dsn: &str, tag: &str, owner: &str, group: &Group, plan: &JobPlan, deposit: Decimal, result_storage: Option<serde_json::Value>) -> Job {
    let (name, _, input, slices, level, consensus, per_task, price) = plan;
    let mut spec = serde_json::json!({
        "work": "(x) => x", "name": format!("{tag} {name}"), "input": input.spec(*slices),
        "groups": [group.opaque], "funds": deposit.to_string(), "duplication_level": level,
        "duplication_type": if *consensus { "consensus" } else { "race" }, "max_slices_per_task": per_task,
    });
    match price {
        Ok(offer) => spec["offer"] = (*offer).into(),
        Err(multiplier) => spec["market_value"] = (*multiplier).into(),
    }
    if let Some(result_storage) = result_storage {
        spec["result_storage"] = result_storage;
    }
    let id: i64 = connect(dsn, Some(owner)).query_one("SELECT pgjobs.compute_deploy($1::text::jsonb)", &[&spec.to_string()]).unwrap().get(0);
    job_of(plan, id, deposit)
}

/// Polls until every job has ended, calling `each_round` with (job_id, status, flags) rows; gives
/// up after 10 minutes, or 60 s without a new report (every call failing, say), and says when.
pub fn wait_for_jobs(admin: &mut Client, job_ids: &[i64], mut each_round: impl FnMut(&mut Client, &[Row])) -> Option<String> {
    let started = Instant::now();
    let (mut reports_seen, mut moved_at) = (-1i64, Instant::now());
    loop {
        let rows = admin
            .query("SELECT job_id, status::text, flags FROM pgjobs.compute_jobs WHERE job_id = ANY ($1)", &[&job_ids])
            .unwrap();
        if rows.iter().all(|r| matches!(r.get::<_, &str>(1), "finished" | "cancelled" | "corrupted")) {
            return None;
        }
        each_round(admin, &rows);
        let reports: i64 = admin.query_one("SELECT count(*) FROM pgjobs.slice_reports WHERE job_id = ANY ($1)", &[&job_ids]).unwrap().get(0);
        if reports != reports_seen {
            (reports_seen, moved_at) = (reports, Instant::now());
        }
        if started.elapsed() > Duration::from_secs(600) || moved_at.elapsed() > Duration::from_secs(60) {
            return Some(format!("after {:.0} s, {:.0} s without a new report: ", started.elapsed().as_secs_f64(), moved_at.elapsed().as_secs_f64()));
        }
        thread::sleep(Duration::from_millis(250));
    }
}

/// The fetches' records (compute_tasks) are folded by the background worker's next ticks.
pub fn wait_tasks_folded(admin: &mut Client) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while admin.query_one("SELECT count(*) FROM pgjobs.compute_tasks", &[]).unwrap().get::<_, i64>(0) > 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(200));
    }
}

/// What became of the slices the workers submitted ("accepted", "stale", ...), summed.
pub fn outcomes(tallies: &[Tally]) -> BTreeMap<String, i64> {
    let mut outcomes: BTreeMap<String, i64> = BTreeMap::new();
    for (o, n) in tallies.iter().flat_map(|t| &t.outcomes) {
        *outcomes.entry(o.clone()).or_default() += n;
    }
    outcomes
}

pub fn check_no_errors(checks: &mut Checks, tallies: &[Tally]) {
    let errors: Vec<&String> = tallies.iter().flat_map(|t| t.errors.iter().chain(&t.lost)).collect();
    checks.check("no worker's call failed",
                 if errors.is_empty() { Ok(()) } else { Err(format!("{} errors, first: {}", errors.len(), errors[0])) });
}

/// Records a failed call; true if the connection is gone with it (the server stopped), which ends
/// the worker: what it held is left to the watchdog, and only submits that returned count.
fn failed(tally: &mut Tally, client: &mut Client, what: String) -> bool {
    if client.is_valid(Duration::from_secs(2)).is_ok() {
        tally.errors.push(what);
        return false;
    }
    tally.lost = Some(what);
    true
}

/// How a worker joins a group: its opaque id, its join key (with the secret every group here
/// has) and the key of its join address.
#[derive(Clone)]
pub struct Join {
    pub group: String,
    pub key: String,
    pub secret: [u8; 32],
}

impl Join {
    pub fn of(group: &Group) -> Join {
        Join { group: group.opaque.clone(), key: group.join_key.clone(), secret: group.join_secret }
    }
}

/// One simulated worker: registers, joins its groups (the even workers with the join key and
/// secret, the odd ones by signing a challenge with the key of the group's join address), then
/// fetches and submits until told to stop or its connection is lost. A result that goes elsewhere
/// is POSTed first, with its job's parameters, and only a result the store took is submitted: a
/// slice whose POST failed is handed back (compute_return) for another try. Workers 17, 18 and
/// 19 misbehave (WRONG, DIES, REJECTS).
pub fn worker(dsn: &str, k: usize, role: &str, joins: &[Join], stop: &AtomicBool) -> Tally {
    let mut client = connect(dsn, Some(role));
    let mut tally = Tally {
        opaque: client
            .query_one(
                "SELECT pgjobs.compute_worker_register($1, '[]', '{\"map-basic\": \"1.0.0\"}', 2, 0, 4, '{\"hostname\": \"sim\"}')::text",
                &[&role],
            )
            .unwrap()
            .get(0),
        ..Tally::default()
    };
    for Join { group, key, secret } in joins {
        if k.is_multiple_of(2) {
            client.query_one("SELECT pgjobs.compute_worker_join($1::text::uuid, $2, 'open sesame, open sesame')", &[group, key]).unwrap();
        } else {
            let challenge: String = client
                .query_one("SELECT challenge FROM pgjobs.compute_worker_join_challenge($1::text::uuid)", &[group])
                .unwrap()
                .get(0);
            let signature = eth::sign(challenge.as_bytes(), secret);
            client
                .query_one("SELECT pgjobs.compute_worker_join_signed($1::text::uuid, $2, $3)", &[group, &challenge, &signature])
                .unwrap();
        }
    }
    // Workers ask for their job's task size, or fewer (5), or more (50, capped by the job).
    let ask: Option<i32> = [None, Some(5), Some(50)][k % 3];
    let mut done = 0usize;
    let mut seed = (k as u64) << 40;
    while !stop.load(Ordering::Relaxed) {
        let sql = "SELECT task_token::text, job_id, slice_number, datum, result_url, result_params::text FROM pgjobs.compute_fetch($1)";
        let rows = match client.query(sql, &[&ask]) {
            Ok(rows) => rows,
            Err(e) => {
                if failed(&mut tally, &mut client, format!("{role} fetch: {e:?}")) {
                    return tally;
                }
                thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if rows.is_empty() {
            thread::sleep(Duration::from_millis(50));
            continue;
        }
        let token: String = rows[0].get(0);
        let job: i64 = rows[0].get(1);
        let slices: Vec<i32> = rows.iter().map(|r| r.get(2)).collect();
        *tally.tasks.entry(job).or_default() += 1;
        *tally.slices.entry(job).or_default() += slices.len() as i64;
        if tally.rejected == Some(job) {
            tally.slices_after_reject += slices.len() as i64;
        }
        done += 1;
        if k == DIES && done > DIES_AFTER {
            // Gone with the task: the connection closes when the client is dropped.
            tally.died_holding = slices.iter().map(|&s| (job, s)).collect();
            return tally;
        }
        if k == REJECTS && tally.rejected.is_none() {
            let sql = "SELECT pgjobs.compute_reject($1::text::uuid, 'EWORKREJECT', 'the simulation refuses this job', 0)";
            match client.query_one(sql, &[&token]) {
                Ok(_) => tally.rejected = Some(job),
                Err(e) if failed(&mut tally, &mut client, format!("{role} reject: {e:?}")) => return tally,
                Err(_) => {}
            }
            continue;
        }
        seed = mix(seed + 1);
        if seed.is_multiple_of(4) {
            if let Err(e) = client.query_one("SELECT pgjobs.compute_progress($1::text::uuid)", &[&token]) {
                if failed(&mut tally, &mut client, format!("{role} progress: {e:?}")) {
                    return tally;
                }
            }
            thread::sleep(Duration::from_millis(seed % 20));
        }
        let (mut submitted, mut results, mut returned) = (vec![], vec![], vec![]);
        let (mut cpu, mut gpu, mut wall, mut bytes_in, mut bytes_out) = (vec![], vec![], vec![], vec![], vec![]);
        for (row, slice) in rows.iter().zip(&slices) {
            let datum: &str = row.get(3);
            let result = if k == WRONG { format!("wrong {}", work(datum)) } else { work(datum) };
            if let (Some(url), Some(params)) = (row.get::<_, Option<&str>>(4), row.get::<_, Option<&str>>(5)) {
                let mut posted: serde_json::Value = serde_json::from_str(params).unwrap();
                posted["result"] = result.clone().into();
                if ureq::post(url).send_json(&posted).is_err() {
                    returned.push(*slice);
                    continue;
                }
            }
            submitted.push(*slice);
            let s = seed ^ ((job as u64) << 32) ^ (*slice as u64);
            let c = 5.0 + 200.0 * unit(s);
            cpu.push(c);
            gpu.push(if job % 2 == 0 { 0.0 } else { c * unit(s + 1) });
            wall.push(c * (1.0 + unit(s + 2)));
            bytes_in.push(datum.len() as i64 + (1000.0 * unit(s + 3)) as i64);
            bytes_out.push(result.len() as i64);
            results.push(result);
        }
        if !returned.is_empty() {
            tally.returned += returned.len() as i64;
            if let Err(e) = client.query_one("SELECT pgjobs.compute_return($1::text::uuid, $2)", &[&token, &returned]) {
                if failed(&mut tally, &mut client, format!("{role} return: {e:?}")) {
                    return tally;
                }
            }
            if submitted.is_empty() {
                continue;
            }
        }
        let sql = "SELECT outcome FROM pgjobs.compute_submit($1::text::uuid, $2, $3, $4, $5, $6, $7, $8)";
        let mut tries = 0;
        loop {
            match client.query(sql, &[&token, &submitted, &results, &cpu, &gpu, &wall, &bytes_in, &bytes_out]) {
                Ok(rows) => rows.iter().for_each(|r| *tally.outcomes.entry(r.get(0)).or_default() += 1),
                // Another copy of a slice was being reported for 5 s: submitted again, as the
                // error's hint says (the slices are still the task's).
                Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) && tries < SUBMIT_TRIES => {
                    tries += 1;
                    tally.submits_again += 1;
                    continue;
                }
                Err(e) if failed(&mut tally, &mut client, format!("{role} submit: {e:?}")) => return tally,
                Err(_) => {}
            }
            break;
        }
    }
    tally
}

/// How many times a worker submits again a task whose slice another copy's report held.
const SUBMIT_TRIES: usize = 5;

struct Limits {
    samples: usize,
    most_copies: i64,
    most_workers: i64,
    violations: Vec<String>,
}

/// Samples the copies out in the limited group every 50 ms (group 1: 24 copies, 4 workers).
fn watch_limits(dsn: &str, group: i64, stop: &AtomicBool) -> Limits {
    let mut client = connect(dsn, None);
    let mut limits = Limits { samples: 0, most_copies: 0, most_workers: 0, violations: vec![] };
    while !stop.load(Ordering::Relaxed) {
        let row = client
            .query_one(
                "SELECT count(*), count(DISTINCT last_assigned_worker) FROM pgjobs.compute_slices
                 WHERE lease_token IS NOT NULL AND compute_group_id = $1",
                &[&group],
            )
            .unwrap();
        let (copies, workers): (i64, i64) = (row.get(0), row.get(1));
        limits.samples += 1;
        limits.most_copies = limits.most_copies.max(copies);
        limits.most_workers = limits.most_workers.max(workers);
        if (copies > 24 || workers > 4) && limits.violations.len() < 5 {
            limits.violations.push(format!("{copies} copies held by {workers} workers"));
        }
        thread::sleep(Duration::from_millis(50));
    }
    limits
}

pub fn check_jobs_finished(checks: &mut Checks, admin: &mut Client, job_ids: &[i64]) {
    let row = admin
        .query_one(
            "SELECT count(*) FILTER (WHERE c.status = 'finished' AND h.status = 'completed'), string_agg(c.job_id || ': ' || c.status, ', ')
             FROM pgjobs.compute_jobs c LEFT JOIN pgjobs.job_history h ON h.id = c.job_id WHERE c.job_id = ANY ($1)",
            &[&job_ids],
        )
        .unwrap();
    let finished: i64 = row.get(0);
    checks.check("every job is finished and its row moved to job_history as completed",
                  if finished == job_ids.len() as i64 { Ok(()) } else { Err(row.get(1)) });
}

/// Each slice has exactly one result (compute_results' key allows at most one; the count says every
/// slice has one) and it is what an honest worker computes from the slice's datum.
/// Each result is read where it is kept: in the database, or for a job whose results go
/// elsewhere in `store`, at the address compute_results keeps.
pub fn check_results(checks: &mut Checks, admin: &mut Client, jobs: &[Job], inputs: &[Input], store: Option<&Store>) {
    let mut problems = Vec::new();
    for (job, input) in jobs.iter().zip(inputs) {
        let rows = admin
            .query("SELECT slice_number, pgjobs.compute_result_text(value), value FROM pgjobs.compute_results WHERE job_id = $1", &[&job.id])
            .unwrap();
        if rows.len() != job.slices as usize {
            problems.push(format!("job {} has {} results for {} slices", job.id, rows.len(), job.slices));
        }
        for r in rows {
            let slice: i32 = r.get(0);
            let text = r.get::<_, Option<String>>(1).or_else(|| store.and_then(|store| store.result(r.get(2)))).unwrap_or_default();
            if slice < 1 || slice > job.slices || text != work(&input.datum(slice)) {
                problems.push(format!("job {} slice {slice}: {text:?}", job.id));
            }
        }
    }
    problems.truncate(5);
    checks.check("every slice of every job has exactly one result, the right one",
                 if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) });

    // Race: the first report wins, the others are refused: one accepted report a slice. Consensus:
    // every report that agrees with the majority is accepted (and paid), so two or more, and none
    // that agrees is refused (a decision waits for every copy out). Either way the accepted
    // reports carry the slice's result.
    let mut problems = Vec::new();
    for job in jobs {
        let bad: Vec<String> = admin
            .query(
                "SELECT r.slice_number || ': ' || count(*) FILTER (WHERE r.accepted) || ' accepted of ' || count(*)
                 FROM pgjobs.slice_reports r JOIN pgjobs.compute_results j USING (job_id, slice_number)
                 WHERE r.job_id = $1
                 GROUP BY r.slice_number, j.value
                 HAVING bool_or(r.accepted IS NULL)
                     OR count(*) FILTER (WHERE r.accepted AND r.value <> j.value) > 0
                     OR $2 AND count(*) FILTER (WHERE NOT r.accepted AND r.value = j.value) > 0
                     OR CASE WHEN $2 THEN count(*) FILTER (WHERE r.accepted) < 2 ELSE count(*) FILTER (WHERE r.accepted) <> 1 END
                 LIMIT 3",
                &[&job.id, &job.consensus],
            )
            .unwrap()
            .iter()
            .map(|r| format!("job {} slice {}", job.id, r.get::<_, String>(0)))
            .collect();
        problems.extend(bad);
    }
    problems.truncate(5);
    checks.check("race slices have exactly one accepted report, consensus slices two or more that agree, all carrying the result",
                 if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) });
}

/// The job whose results go elsewhere: each result is at its slice's address in the store (the
/// check above read them there), and the POSTs the store refused were handed back by their
/// workers, a slice each, and stored by a later try.
fn check_stored_elsewhere(checks: &mut Checks, admin: &mut Client, jobs: &[Job], store: &Store, tallies: &[Tally]) {
    let job = jobs.iter().find(|j| j.name == STORED_ELSEWHERE).unwrap();
    let row = admin
        .query_one(
            "SELECT count(*) FILTER (WHERE value ~ ('^' || $2 || '/r/[a-z0-9]+/' || slice_number || '/[0-9]+$')), count(*)
             FROM pgjobs.compute_results WHERE job_id = $1",
            &[&job.id, &store.origin],
        )
        .unwrap();
    let (addressed, results): (i64, i64) = (row.get(0), row.get(1));
    let returned: i64 = tallies.iter().map(|t| t.returned).sum();
    let refused = store.refused() as i64;
    checks.check(&format!("the job whose results go elsewhere: {addressed} of {results} results are addresses in the result store; its {refused} refused POSTs were handed back and stored later"),
                 if addressed == i64::from(job.slices) && results == addressed && refused > 0 && returned == refused { Ok(()) }
                 else { Err(format!("{addressed} addresses of {} slices, {refused} POSTs refused, {returned} slices handed back", job.slices)) });
}

/// The wrong worker is only in the consensus group: each of its results meets an honest copy's,
/// the two disagree, a tiebreaker copy (copy 2, the only way a copy 2 is made) goes to another
/// honest worker, and the majority is the honest result.
fn check_wrong_worker(checks: &mut Checks, admin: &mut Client, jobs: &[Job], wrong: &Tally) {
    let consensus: Vec<i64> = jobs.iter().filter(|j| j.consensus).map(|j| j.id).collect();
    let row = admin
        .query_one(
            "SELECT count(*) FILTER (WHERE worker_opaque_id = $1::text::uuid),
                    count(*) FILTER (WHERE worker_opaque_id = $1::text::uuid AND accepted),
                    count(DISTINCT (job_id, slice_number)) FILTER (WHERE copy >= 2)
             FROM pgjobs.slice_reports WHERE job_id = ANY ($2)",
            &[&wrong.opaque, &consensus],
        )
        .unwrap();
    let (reports, accepted, tiebroken): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    checks.check(&format!("the wrong worker's {reports} reports were none accepted, and made as many tiebreakers"),
                 if reports > 0 && accepted == 0 && tiebroken == reports { Ok(()) }
                 else { Err(format!("{reports} reports, {accepted} accepted, {tiebroken} slices tiebroken")) });
}

/// An exponential moving average and variance, as compute_perf_data's comment defines them, written
/// here again so that the check does not use the code it checks.
#[derive(Clone, Copy)]
struct Ema {
    mean: Option<f64>,
    variance: f64,
}

impl Ema {
    fn add(&mut self, x: f64, alpha: f64) {
        match self.mean {
            None => (self.mean, self.variance) = (Some(x), 0.0),
            Some(mean) => {
                let d = x - mean;
                self.mean = Some(mean + alpha * d);
                self.variance = (1.0 - alpha) * (self.variance + alpha * d * d);
            }
        }
    }
}

fn close(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()) + 1e-12,
        (None, None) => true,
        _ => false,
    }
}

/// compute_perf_data against the job's reports in folded_seq order: seven series (cpu, gpu, bytes in,
/// bytes out, cpu and gpu density, wall over the task target), each report weighted
/// alpha = min(0.5, max(total - (seq - 1), 1) / total); and the totals as sums (times rounded).
pub fn check_averages(checks: &mut Checks, admin: &mut Client, jobs: &[Job]) {
    let target_ms: f64 = admin
        .query_one("SELECT extract(epoch FROM current_setting('pg_jobs.compute_task_target')::interval)::float8 * 1000", &[])
        .unwrap()
        .get(0);
    let (mut sequence, mut averages, mut totals) = (Vec::new(), Vec::new(), Vec::new());
    for job in jobs {
        let reports = admin
            .query(
                "SELECT folded_seq, cpu_time, gpu_time, wall_time, in_data_size, out_data_size
                 FROM pgjobs.slice_reports WHERE job_id = $1 ORDER BY folded_seq",
                &[&job.id],
            )
            .unwrap();
        let total = f64::from(job.slices.max(1));
        let mut series = [Ema { mean: None, variance: 0.0 }; 7];
        let mut sums = [0i64; 4];
        for (k, r) in reports.iter().enumerate() {
            let seq: Option<i64> = r.get(0);
            if seq != Some(k as i64 + 1) {
                sequence.push(format!("job {}: report {} has folded_seq {seq:?}", job.id, k + 1));
                break;
            }
            let (cpu, gpu, wall, bytes_in, bytes_out): (f64, f64, f64, i64, i64) = (r.get(1), r.get(2), r.get(3), r.get(4), r.get(5));
            let alpha = ((total - k as f64).max(1.0) / total).min(0.5);
            let density = |t: f64| if wall > 0.0 { t / wall } else { 0.0 };
            let xs = [cpu, gpu, bytes_in as f64, bytes_out as f64, density(cpu), density(gpu), wall / target_ms];
            for (m, x) in series.iter_mut().zip(xs) {
                m.add(x, alpha);
            }
            // PostgreSQL's round(float8) rounds half to even.
            for (s, x) in sums.iter_mut().zip([cpu.round_ties_even() as i64, gpu.round_ties_even() as i64, bytes_in, bytes_out]) {
                *s += x;
            }
        }
        let p = admin
            .query_one(
                "SELECT measured_slices::int8, slice_cpu_time, slice_gpu_time, slice_in_data_size, slice_out_data_size,
                        slice_cpu_density, slice_gpu_density, task_distribution,
                        slice_cpu_time_variance, slice_gpu_time_variance, slice_in_data_size_variance,
                        slice_out_data_size_variance, slice_cpu_density_variance, slice_gpu_density_variance,
                        task_distribution_variance, total_cpu_time, total_gpu_time, total_in_data_size, total_out_data_size
                 FROM pgjobs.compute_perf_data WHERE job_id = $1",
                &[&job.id],
            )
            .unwrap();
        if p.get::<_, i64>(0) != reports.len() as i64 {
            sequence.push(format!("job {}: measured_slices {} for {} reports", job.id, p.get::<_, i64>(0), reports.len()));
        }
        for (k, m) in series.iter().enumerate() {
            let (mean, variance): (Option<f64>, Option<f64>) = (p.get(1 + k), p.get(8 + k));
            if !close(mean, m.mean) || !close(variance, m.mean.map(|_| m.variance)) {
                averages.push(format!("job {} series {}: {mean:?}/{variance:?} stored, {:?}/{} recomputed", job.id, k + 1, m.mean, m.variance));
            }
        }
        let stored: Vec<i64> = (15..19).map(|k| p.get(k)).collect();
        if stored != sums {
            totals.push(format!("job {}: {stored:?} stored, {sums:?} summed", job.id));
        }
    }
    sequence.truncate(5);
    averages.truncate(5);
    checks.check("each report was folded once: a job's folded_seq values are 1..measured_slices, no gap, no duplicate",
                 if sequence.is_empty() { Ok(()) } else { Err(sequence.join("; ")) });
    checks.check("compute_perf_data's averages and variances equal a recomputation from the reports in folded_seq order (1e-9 relative)",
                 if averages.is_empty() { Ok(()) } else { Err(averages.join("; ")) });
    checks.check("compute_perf_data's totals equal the sums of the reports",
                 if totals.is_empty() { Ok(()) } else { Err(totals.join("; ")) });
}

/// Money, exactly: each job's paid + pending + remaining = funds with nothing pending once it has
/// finished; paid is the reports' payments, which are the slice payment for each accepted report
/// and 0 otherwise; commission round(payment × the group's rate, 18) per accepted report; fees
/// the group's, taken off the deposit; each worker's earnings its reports' paid − commission.
pub fn check_money(checks: &mut Checks, admin: &mut Client, jobs: &[Job], groups: &[Group], tallies: &[Tally]) {
    let (mut balance, mut payments, mut commissions, mut fees) = (vec![], vec![], vec![], vec![]);
    for job in jobs {
        let f = admin
            .query_one(
                "SELECT slice_work_payment_total, slice_work_payment_pending, remaining, funds, fees, commission_total
                 FROM pgjobs.job_fin_data WHERE job_id = $1",
                &[&job.id],
            )
            .unwrap();
        let [paid, pending, remaining, funds, fee, commission]: [Decimal; 6] = std::array::from_fn(|k| f.get(k));
        if paid + pending + remaining != funds || !pending.is_zero() || remaining.is_sign_negative() {
            balance.push(format!("job {}: {paid} + {pending} + {remaining} vs {funds}", job.id));
        }
        let r = admin
            .query_one(
                "SELECT coalesce(sum(paid), 0), count(*) FILTER (WHERE accepted),
                        count(*) FILTER (WHERE paid IS DISTINCT FROM CASE WHEN accepted THEN $2::numeric ELSE 0 END)
                 FROM pgjobs.slice_reports WHERE job_id = $1",
                &[&job.id, &job.payment],
            )
            .unwrap();
        let (sum_paid, accepted, misfits): (Decimal, i64, i64) = (r.get(0), r.get(1), r.get(2));
        if sum_paid != paid || paid != job.payment * Decimal::from(accepted) || misfits != 0 {
            payments.push(format!("job {}: paid {paid}, reports {sum_paid}, {accepted} accepted × {}, {misfits} reports misfit", job.id, job.payment));
        }
        let group = &groups[job.group];
        let each = (job.payment * group.commission_rate).round_dp_with_strategy(18, RoundingStrategy::MidpointAwayFromZero);
        if commission != each * Decimal::from(accepted) {
            commissions.push(format!("job {}: {commission} for {accepted} × {each}", job.id));
        }
        if fee != group.fees || funds + fee != job.deposit {
            fees.push(format!("job {}: fees {fee}, funds {funds}, deposit {}", job.id, job.deposit));
        }
    }
    let show = |v: Vec<String>| if v.is_empty() { Ok(()) } else { Err(v.into_iter().take(5).collect::<Vec<_>>().join("; ")) };
    checks.check("for every job paid + pending + remaining = funds exactly, nothing pending, nothing negative", show(balance));
    checks.check("paid = sum(slice_reports.paid) = slice payment × accepted reports; refused reports are paid 0", show(payments));
    checks.check("commission = round(payment × group rate, 18) per accepted report", show(commissions));
    checks.check("fees are the group's deploy and add-job fees, taken off the deposit", show(fees));

    let mut earnings = Vec::new();
    for t in tallies {
        let r = admin
            .query_one(
                "SELECT w.earnings, (SELECT coalesce(sum(r.paid - r.commission), 0) FROM pgjobs.slice_reports r WHERE r.worker_opaque_id = w.worker_opaque_id)
                 FROM pgjobs.worker_run_info w WHERE w.worker_opaque_id = $1::text::uuid",
                &[&t.opaque],
            )
            .unwrap();
        let (stored, summed): (Decimal, Decimal) = (r.get(0), r.get(1));
        if stored != summed {
            earnings.push(format!("worker {}: {stored} stored, {summed} summed", t.opaque));
        }
    }
    checks.check("every worker's earnings = its reports' paid − commission", show(earnings));
}

/// Period statistics against the reports and the fetches the workers saw: summed over periods,
/// per group and job, the totals of compute_group_job_period_stats are those of the job's reports
/// through the group, and tasked_slice_count the slices the workers received; per group and
/// worker, compute_group_worker_period_stats' slices, times, bytes and earnings are that worker's
/// reports' and task_count the tasks it received; compute_perf_data.task_count the job's tasks.
/// Without `fetches_known` (after a crash: a fetch may commit while its answer is lost) only the
/// reports are compared, not the fetches.
pub fn check_period_stats(checks: &mut Checks, admin: &mut Client, jobs: &[Job], groups: &[Group], tallies: &[Tally], fetches_known: bool) {
    let job_ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
    let group_of: HashMap<i64, i64> = jobs.iter().map(|j| (j.id, groups[j.group].id)).collect();
    let mut problems = Vec::new();
    let rows = admin
        .query(
            "WITH stats AS (
                 SELECT compute_group_id, job_id, sum(total_cpu_time) AS cpu, sum(total_gpu_time) AS gpu,
                        sum(total_in_data_size) AS bytes_in, sum(total_out_data_size) AS bytes_out,
                        sum(total_earnings) AS earned, sum(tasked_slice_count) AS tasked
                 FROM pgjobs.compute_group_job_period_stats WHERE job_id = ANY ($1) GROUP BY 1, 2
             ), reports AS (
                 SELECT compute_group_id, job_id, sum(round(cpu_time)) AS cpu, sum(round(gpu_time)) AS gpu,
                        sum(in_data_size) AS bytes_in, sum(out_data_size) AS bytes_out, sum(paid) AS earned
                 FROM pgjobs.slice_reports WHERE job_id = ANY ($1) GROUP BY 1, 2
             )
             SELECT job_id, compute_group_id, (s.cpu, s.gpu, s.bytes_in, s.bytes_out, s.earned)::text,
                    (r.cpu, r.gpu, r.bytes_in, r.bytes_out, r.earned)::text, coalesce(s.tasked, 0)::int8
             FROM stats s FULL JOIN reports r USING (compute_group_id, job_id)",
            &[&job_ids],
        )
        .unwrap();
    let mut fetched: HashMap<i64, i64> = HashMap::new();
    let mut tasks: HashMap<i64, i64> = HashMap::new();
    for t in tallies {
        t.slices.iter().for_each(|(j, n)| *fetched.entry(*j).or_default() += n);
        t.tasks.iter().for_each(|(j, n)| *tasks.entry(*j).or_default() += n);
    }
    for r in &rows {
        let (job, group): (i64, Option<i64>) = (r.get(0), r.get(1));
        let (stats, reports): (Option<String>, Option<String>) = (r.get(2), r.get(3));
        if stats != reports || group != group_of.get(&job).copied() {
            problems.push(format!("job {job} group {group:?}: stats {stats:?}, reports {reports:?}"));
        }
        if fetches_known && r.get::<_, i64>(4) != fetched.get(&job).copied().unwrap_or(0) {
            problems.push(format!("job {job}: tasked_slice_count {}, workers received {:?}", r.get::<_, i64>(4), fetched.get(&job)));
        }
    }
    if rows.len() != jobs.len() {
        problems.push(format!("{} group-job pairs in the statistics for {} jobs", rows.len(), jobs.len()));
    }
    for job in jobs {
        let counted: i64 = admin.query_one("SELECT task_count FROM pgjobs.compute_perf_data WHERE job_id = $1", &[&job.id]).unwrap().get(0);
        if fetches_known && counted != tasks.get(&job.id).copied().unwrap_or(0) {
            problems.push(format!("job {}: task_count {counted}, workers received {:?} tasks", job.id, tasks.get(&job.id)));
        }
    }
    problems.truncate(5);
    let handed_out = if fetches_known { " and the slices handed out" } else { "" };
    checks.check(&format!("group-job period statistics summed over periods equal the reports' totals{handed_out}"),
                 if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) });

    let mut problems = Vec::new();
    for t in tallies {
        let mut expected_tasks: HashMap<i64, i64> = HashMap::new();
        t.tasks.iter().for_each(|(j, n)| *expected_tasks.entry(group_of[j]).or_default() += n);
        let rows = admin
            .query(
                "WITH stats AS (
                     SELECT compute_group_id, sum(task_count) AS tasks, sum(slice_count) AS slices, sum(cpu_time) AS cpu,
                            sum(gpu_time) AS gpu, sum(in_data_size) AS bytes_in, sum(out_data_size) AS bytes_out, sum(earnings) AS earned
                     FROM pgjobs.compute_group_worker_period_stats WHERE worker_opaque_id = $1::text::uuid GROUP BY 1
                 ), reports AS (
                     SELECT compute_group_id, count(*) AS slices, sum(round(cpu_time)) AS cpu, sum(round(gpu_time)) AS gpu,
                            sum(in_data_size) AS bytes_in, sum(out_data_size) AS bytes_out, sum(paid - commission) AS earned
                     FROM pgjobs.slice_reports WHERE worker_opaque_id = $1::text::uuid GROUP BY 1
                 )
                 SELECT compute_group_id, coalesce(s.tasks, 0)::int8, (s.slices, s.cpu, s.gpu, s.bytes_in, s.bytes_out, s.earned)::text,
                        (coalesce(r.slices, 0), coalesce(r.cpu, 0), coalesce(r.gpu, 0), coalesce(r.bytes_in, 0), coalesce(r.bytes_out, 0),
                         coalesce(r.earned, 0))::text
                 FROM stats s LEFT JOIN reports r USING (compute_group_id)",
                &[&t.opaque],
            )
            .unwrap();
        for r in rows {
            let group: i64 = r.get(0);
            let (stats, reports): (String, String) = (r.get(2), r.get(3));
            let tasks_differ = r.get::<_, i64>(1) != expected_tasks.remove(&group).unwrap_or(0);
            if fetches_known && tasks_differ || stats != reports {
                problems.push(format!("worker {} group {group}: tasks {}, {stats} vs reports {reports}", t.opaque, r.get::<_, i64>(1)));
            }
        }
        if fetches_known && !expected_tasks.is_empty() {
            problems.push(format!("worker {}: no statistics for the tasks {expected_tasks:?}", t.opaque));
        }
    }
    problems.truncate(5);
    let and_tasks = if fetches_known { " and tasks" } else { "" };
    checks.check(&format!("group-worker period statistics summed over periods equal each worker's reports{and_tasks}"),
                 if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) });
}

/// The dead worker's copies were retasked by the watchdog and their slices resolved by others.
/// A copy of a slice sent twice (race 1.5) may instead be withdrawn when the other copy wins the
/// race before the watchdog comes: only the held slices sent once must have been retasked.
fn check_dead_worker(checks: &mut Checks, admin: &mut Client, dead: &Tally) {
    let held = dead.died_holding.len();
    let outcome = if held == 0 {
        Err("it never got its last task".to_string())
    } else {
        let job = dead.died_holding[0].0;
        let slices: Vec<i32> = dead.died_holding.iter().map(|h| h.1).collect();
        let row = admin
            .query_one(
                "SELECT (SELECT retasked_count FROM pgjobs.compute_perf_data WHERE job_id = $1)::int8,
                        (SELECT count(*) FROM pgjobs.compute_results WHERE job_id = $1 AND slice_number = ANY ($2)),
                        (SELECT count(*) FROM pgjobs.slice_reports WHERE job_id = $1 AND slice_number = ANY ($2)
                                                                     AND worker_opaque_id = $3::text::uuid),
                        (SELECT count(*) FROM unnest($2::int4[]) s, pgjobs.compute_jobs c
                         WHERE c.job_id = $1 AND pgjobs._slice_copies($1, s, c.duplication_level) = 1)",
                &[&job, &slices, &dead.opaque],
            )
            .unwrap();
        let (retasked, results, own, sent_once): (i64, i64, i64, i64) = (row.get(0), row.get(1), row.get(2), row.get(3));
        if retasked >= sent_once && results == held as i64 && own == 0 { Ok(()) }
        else { Err(format!("job {job}: retasked_count {retasked} (at least {sent_once}), {results} results, {own} reports of its own")) }
    };
    checks.check(&format!("the worker that died holding {held} slices: they were retasked and resolved by others"), outcome);
}

fn check_rejection(checks: &mut Checks, admin: &mut Client, rejecter: &Tally) {
    let outcome = match rejecter.rejected {
        None => Err("it never rejected".to_string()),
        Some(job) => {
            let row = admin
                .query_one(
                    "SELECT (SELECT count(*) FROM pgjobs.work_reject_history WHERE job_id = $1 AND worker_opaque_id = $2::text::uuid
                                                                              AND reason = 'EWORKREJECT'),
                            (SELECT count(*) FROM pgjobs.slice_reports WHERE job_id = $1 AND worker_opaque_id = $2::text::uuid),
                            (SELECT count(*) FROM pgjobs.slice_reports WHERE worker_opaque_id = $2::text::uuid)",
                    &[&job, &rejecter.opaque],
                )
                .unwrap();
            let (history, of_job, all): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
            if history == 1 && of_job == 0 && rejecter.slices_after_reject == 0 && all > 0 { Ok(()) }
            else { Err(format!("job {job}: {history} history rows, {of_job} reports of it, {} slices received after, {all} reports in all", rejecter.slices_after_reject)) }
        }
    };
    checks.check("the rejection is in work_reject_history, and the worker got none of that job's slices after it (but others')", outcome);
}
