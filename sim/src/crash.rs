//! A crash under load, in two processes since the server goes away between them:
//! `crash-load` deploys two jobs and works on them until the server is stopped under it
//! (immediately, by the caller: scripts/compute_tests.sh); `crash-check`, after the restart,
//! finishes the jobs with the same workers and runs the simulation's checks on them. Nothing
//! acknowledged may be lost, nothing done twice, and the statistics folded from committed reports
//! must be exact.

use crate::simulate::{
    ample, check_averages, check_jobs_finished, check_money, check_no_errors, check_period_stats, check_results,
    create_group, deploy, group_of, job_of, outcomes, statuses, wait_for_jobs, wait_tasks_folded, worker, Checks, Group,
    GroupPlan, Input, JobPlan, Join, Tally,
};
use crate::{connect, create_roles, make_proxy, run_tag};
use postgres::Client;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

const WORKERS: usize = 8;
/// One group of owner 0's, with a commission and fees so that the money checks have something to add.
const GROUP: GroupPlan = (0, "0.1", "0.5", "0.25", None, None);

/// Both processes build the plan: crash-check finds the jobs by their names and knows the rest.
fn plan() -> Vec<JobPlan> {
    vec![
        ("crash, race 1.0", 0, Input::Range(1), 20_000, 1.0, false, 10, Ok("0.0001")),
        ("crash, consensus 2.0", 0, Input::Range(100_000), 4_000, 2.0, true, 10, Ok("0.001")),
    ]
}

fn names(tag: &str) -> (Vec<String>, Vec<String>) {
    ((1..=2).map(|k| format!("{tag}_owner{k}")).collect(), (0..WORKERS).map(|k| format!("{tag}_w{k:02}")).collect())
}

fn start_workers(dsn: &str, workers: &[String], group: &Group, stop: &Arc<AtomicBool>) -> Vec<JoinHandle<Tally>> {
    workers
        .iter()
        .enumerate()
        .map(|(k, role)| {
            let (dsn, role, stop, joins) = (dsn.to_string(), role.clone(), stop.clone(), [Join::of(group)]);
            thread::spawn(move || worker(&dsn, k, &role, &joins, &stop))
        })
        .collect()
}

/// Prints the run's tag first, then works until every worker has lost its connection; at the end
/// `submitted N`, the reports whose submit returned (only those must survive the crash). Exits 1
/// if the server was still there after `seconds`, or a call failed otherwise.
pub fn load(dsn: &str, seconds: u64) -> i32 {
    let mut admin = connect(dsn, None);
    let tag = run_tag("crash");
    println!("{tag}");
    // Short, so that the copies held by the connections the crash ends come back soon after it.
    // Reset by crash-check. Two statements: ALTER SYSTEM refuses a multi-statement query's transaction.
    admin.batch_execute("ALTER SYSTEM SET pg_jobs.compute_progress_timeout = 3").unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    let (owners, workers) = names(&tag);
    create_roles(&mut admin, &owners);
    create_roles(&mut admin, &workers);
    for (k, worker) in workers.iter().enumerate() {
        make_proxy(&mut admin, dsn, worker, &owners[k % 2]);
    }
    let group = create_group(&mut admin, dsn, &tag, &owners, GROUP);
    for plan in plan() {
        deploy(dsn, &tag, &owners[0], &group, &plan, ample(&group, &plan), None);
    }
    drop(admin);

    let stop = Arc::new(AtomicBool::new(false));
    let handles = start_workers(dsn, &workers, &group, &stop);
    let started = Instant::now();
    while !handles.iter().all(|h| h.is_finished()) && started.elapsed() < Duration::from_secs(seconds) {
        thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    let tallies: Vec<Tally> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let outcomes = outcomes(&tallies);
    let submitted: i64 = outcomes.iter().filter(|(o, _)| o.as_str() != "stale").map(|(_, n)| n).sum();
    println!("# outcomes before the crash: {outcomes:?}");
    println!("submitted {submitted}");
    let errors: Vec<&String> = tallies.iter().flat_map(|t| &t.errors).collect();
    let lost = tallies.iter().filter(|t| t.lost.is_some()).count();
    if !errors.is_empty() || lost < WORKERS {
        eprintln!("{lost} of {WORKERS} workers saw the server go; {} errors before: {errors:?}", errors.len());
        return 1;
    }
    0
}

/// After the restart: the same workers finish the jobs, then the checks. `submitted` is what
/// crash-load acknowledged.
pub fn check(dsn: &str, tag: &str, submitted: Option<i64>) -> i32 {
    let mut admin = connect(dsn, None);
    let failed = finish_and_check(dsn, tag, submitted, &mut admin);
    admin.batch_execute("ALTER SYSTEM RESET pg_jobs.compute_progress_timeout").unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    println!("# {failed} of the checks failed");
    i32::from(failed > 0)
}

fn finish_and_check(dsn: &str, tag: &str, submitted: Option<i64>, admin: &mut Client) -> usize {
    let (_, workers) = names(tag);
    let row = admin
        .query_one("SELECT id, opaque_id::text FROM pgjobs.compute_groups WHERE name = $1", &[&format!("{tag}-g{}", GROUP.0)])
        .unwrap();
    let group = group_of(GROUP, tag, row.get(0), row.get(1));
    let groups = [group];
    let (mut jobs, mut inputs) = (vec![], vec![]);
    for plan in plan() {
        let id: i64 = admin
            .query_one("SELECT id FROM pgjobs.jobs WHERE name = $1 UNION ALL SELECT id FROM pgjobs.job_history WHERE name = $1",
                       &[&format!("{tag} {}", plan.0)])
            .unwrap()
            .get(0);
        jobs.push(job_of(&plan, id, ample(&groups[0], &plan)));
        inputs.push(plan.2);
    }
    let job_ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
    let mut checks = Checks::default();

    // Reports made before the restart: at least every one whose submit returned (a submit whose
    // commit was not answered may add a few more).
    let before: i64 = admin
        .query_one("SELECT count(*) FROM pgjobs.slice_reports WHERE job_id = ANY ($1) AND reported_at < pg_postmaster_start_time()", &[&job_ids])
        .unwrap()
        .get(0);
    let acknowledged = submitted.unwrap_or(0);
    checks.check(&format!("every report acknowledged before the crash is there ({acknowledged} acknowledged, {before} reports from before the restart)"),
                 if submitted.is_some() && before >= acknowledged && acknowledged > 0 { Ok(()) } else { Err(format!("submitted {submitted:?}")) });

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let handles = start_workers(dsn, &workers, &groups[0], &stop);
    let timed_out = wait_for_jobs(admin, &job_ids, |_, _| {});
    stop.store(true, Ordering::Relaxed);
    let tallies: Vec<Tally> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    wait_tasks_folded(admin);
    let retasked: i64 = admin
        .query_one("SELECT coalesce(sum(retasked_count), 0)::int8 FROM pgjobs.compute_perf_data WHERE job_id = ANY ($1)", &[&job_ids])
        .unwrap()
        .get(0);
    println!("# jobs ended {:.1} s after the restart; {retasked} copies retasked; outcomes after it: {:?}",
             started.elapsed().as_secs_f64(), outcomes(&tallies));

    checks.check("the jobs ended within 10 minutes of the restart, never 60 s without a report", match timed_out {
        Some(when) => Err(when + &statuses(admin, &job_ids)),
        None => Ok(()),
    });
    check_no_errors(&mut checks, &tallies);
    check_jobs_finished(&mut checks, admin, &job_ids);
    check_results(&mut checks, admin, &jobs, &inputs, None);
    check_averages(&mut checks, admin, &jobs);
    check_money(&mut checks, admin, &jobs, &groups, &tallies);
    // The fetches answered before the crash are unknown here: only the reports are compared.
    check_period_stats(&mut checks, admin, &jobs, &groups, &tallies, false);
    checks.failed
}
