//! Flow control of an identity's queues: when their jobs may be claimed. A claim first asks
//! whether a queue has any (`states`, from a cache in each backend). A pause stops every claim of
//! a queue (`queue_pauses`) until the queue is resumed; a concurrency limit lets claims take at
//! most so many of its jobs leased at once (`queue_limits`, whose slots the claims of a limited
//! queue take: `claim_limited`), and a rate limit so many in any window of time (`queue_rates`,
//! whose tokens they take likewise), and a key limit so many of each concurrency key at once or
//! in a window of time (`queue_key_limits`, one row per prefix of the keys, the longest a key
//! starts with holding for it; whose gates, slots and tokens they take likewise). Statements in
//! `flow.sql`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use pgrx::datum::Interval;
use pgrx::pg_sys::{Datum, Oid, TEXTOID};
use pgrx::prelude::*;
use pgrx::IntoDatum;

use super::arguments::Arg;
use super::cached::{reads_may_be_kept, relation, watch};
use super::call::{invalid, record, refuse, Caller, Planning, Section, Statement};
use super::datum::{array, interval_text};
use super::queue::{callers_queue, outside, KEY_BYTES};
use super::ready::queue_hash;
use super::services::{no_wish, Service};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("flow.sql"));

static PAUSE: Statement = statement("pause");
static RESUME: Statement = statement("resume");
static SLOTS_HELD: Statement = statement("slots_held");
static LIMIT: Statement = statement("limit");
static RATE_LIMIT: Statement = statement("rate_limit");
static TOKENS_HELD: Statement = statement("tokens_held");
static KEY_LIMIT: Statement = statement("key_limit");
static KEY_RATE_LIMIT: Statement = statement("key_rate_limit");
static GATES_HELD: Statement = statement("gates_held");
static UNLIMIT: Statement = statement("unlimit");
static KEY_UNLIMIT: Statement = statement("key_unlimit");
/// free_key_slots in its two forms: the slots alone, and the tokens out of their window too.
static FREE_KEY_SLOTS: [Statement; 2] = [
    statement("free_key_slots").without(&["tokens"]),
    statement("free_key_slots"),
];
/// How often the launcher removes the key tokens out of their window, in microseconds.
const TOKEN_SWEEP_EVERY: i64 = 60_000_000;

thread_local! {
    /// When the launcher last removed key tokens (the round's time), if it has.
    static TOKENS_SWEPT: std::cell::Cell<Option<i64>> = const { std::cell::Cell::new(None) };
}

/// The launcher's removal of the key slots no job holds, each round, and of the key tokens out
/// of their window, once a minute (free_key_slots). A round whose time is a minute from the last
/// sweep, either way, sweeps: a round run by hand (`_launcher_tick`) may be given any time.
pub(crate) static KEY_SLOTS: Service = Service {
    name: "free key slots",
    work: |section, at| {
        let at = unsafe { TimestampWithTimeZone::from_datum(at, false) }.map(|at| at.into_inner());
        let sweep = TOKENS_SWEPT.with(|swept| match (swept.get(), at) {
            (Some(last), Some(at)) if (at - last).abs() < TOKEN_SWEEP_EVERY => false,
            _ => {
                swept.set(at);
                true
            }
        });
        section.run(&FREE_KEY_SLOTS[usize::from(sweep)], &[]);
    },
    next: no_wish,
};

/// The most jobs of a queue a limit lets run at once, or be claimed in a rate limit's window: a
/// claim reads the slots it passes over.
const MOST_RUNNING: i32 = 1000;
/// What a rate limit's window may be: more than nothing, at most a day (in microseconds).
const RATE_WINDOW: std::ops::RangeInclusive<i128> = 1..=86_400_000_000;

const SLOT_WAITERS: usize = 1024;

/// Limited queues whose last claim found fewer free slots than it asked for: its worker may go
/// to sleep while jobs are ready, and nothing is added to wake it (src/api/ready.rs wakes workers
/// for adds). So the end of a lease there wakes it, as an add of ready work would. A word per
/// queue hash, holding the queue's tag (never 0) while a claim waits; a collision loses the
/// other queue's mark, whose worker then finds its slot at its next poll.
pub(crate) static SLOT_WAITERS_STATE: pgrx::PgAtomic<[AtomicU64; SLOT_WAITERS]> =
    unsafe { pgrx::PgAtomic::new(c"pg_jobs slot waiters") };
/// The words holding a mark: every end of a lease asks, and reads its jobs' queues only when
/// some are (a word going from 0 to a mark counts one, from a mark to 0 one less).
pub(crate) static SLOT_WAITERS_MARKED: pgrx::PgAtomic<AtomicU32> =
    unsafe { pgrx::PgAtomic::new(c"pg_jobs slot waiters marked") };

pub(crate) fn init_slot_waiters() {
    pgrx::pg_shmem_init!(SLOT_WAITERS_STATE = std::array::from_fn(|_| AtomicU64::new(0)));
    pgrx::pg_shmem_init!(SLOT_WAITERS_MARKED = AtomicU32::new(0));
}

/// A queue's word and tag.
fn waiter_slot(claimable_by: Oid, queue: &str) -> (usize, u64) {
    let hash = queue_hash(claimable_by, queue);
    ((hash % SLOT_WAITERS as u64) as usize, (hash >> 16).max(1))
}

/// Called by a claim of a limited queue that found fewer free slots than it asked for.
pub(crate) fn waiting_for_slots(claimable_by: Oid, queue: &str) {
    let (slot, tag) = waiter_slot(claimable_by, queue);
    if SLOT_WAITERS_STATE.get()[slot].swap(tag, Ordering::SeqCst) == 0 {
        SLOT_WAITERS_MARKED.get().fetch_add(1, Ordering::SeqCst);
    }
}

/// Whether any claim waits for a slot.
pub(crate) fn any_waiting_for_slots() -> bool {
    SLOT_WAITERS_MARKED.get().load(Ordering::SeqCst) > 0
}

/// The queues, of those whose leases just ended (claimable_by, queue), where a claim waits for a
/// slot; each is taken off the marks, to be woken by this transaction's NOTIFY, and marked again
/// if the (sub)transaction rolls back (its NOTIFY goes, and the slot was not freed).
pub(crate) fn slots_freed<'a>(
    leases_ended: impl Iterator<Item = (Oid, &'a str)>,
) -> Vec<(Oid, &'a str)> {
    let words = SLOT_WAITERS_STATE.get();
    leases_ended
        .filter(|&(claimable_by, queue)| {
            let (slot, tag) = waiter_slot(claimable_by, queue);
            let taken = words[slot].load(Ordering::Relaxed) == tag
                && words[slot]
                    .compare_exchange(tag, 0, Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok();
            if taken {
                SLOT_WAITERS_MARKED.get().fetch_sub(1, Ordering::SeqCst);
                let queue = queue.to_owned();
                super::at_commit::at_rollback(move || waiting_for_slots(claimable_by, &queue));
            }
            taken
        })
        .collect()
}

/// What a claim must know of a queue before it looks for jobs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Neither paused nor limited: the plain claim statements take its jobs.
    Free,
    Paused,
    /// A concurrency, a rate or a key limit: its claims take slots and tokens (claim_limited).
    Limited(Limits),
}

/// The limits of a limited queue: which parts of claim_limited its claims run.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// A concurrency limit (`queue_limits`): its slots.
    pub(crate) slots: bool,
    /// A rate limit (`queue_rates`): its tokens.
    pub(crate) rated: bool,
    /// Key limits (`queue_key_limits`): its keys' gates and slots.
    pub(crate) keys: bool,
    /// A key limit with a rate: its keys' tokens.
    pub(crate) key_rates: bool,
    /// The key limit of every key, where the queue's only key limit is that of the empty prefix:
    /// claims take it as given rather than find each key's.
    pub(crate) every_key: Option<KeyLimit>,
}

/// A key limit (a row of `queue_key_limits`), as the claims of its queue take it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyLimit {
    pub(crate) max_per_key: Option<i32>,
    pub(crate) ordered: bool,
    pub(crate) rate_claims: Option<i32>,
    /// Months, days and microseconds.
    pub(crate) rate_per: Option<(i32, i32, i64)>,
}

impl KeyLimit {
    /// As the parameters of claim_limited and key_candidates (null where the limit is not given).
    pub(crate) fn parameters(limit: Option<KeyLimit>) -> [(&'static str, Option<Datum>); 4] {
        [
            ("key_max", limit.and_then(|l| l.max_per_key).into_datum()),
            ("key_ordered", limit.map(|l| l.ordered).into_datum()),
            (
                "key_rate_claims",
                limit.and_then(|l| l.rate_claims).into_datum(),
            ),
            (
                "key_rate_per",
                limit
                    .and_then(|l| l.rate_per)
                    .map(|(months, days, micros)| {
                        Interval::new(months, days, micros).expect("an interval read as such")
                    })
                    .into_datum(),
            ),
        ]
    }
}

/// The flow control of the queues this backend claimed from, by claimant and queue (looked up by
/// the queue's name as given, with no copy of it), so that a claim of a queue with none reads
/// none of its four tables (their four probes were a tenth of a claim of one job), and the oids
/// of those tables, whose invalidation forgets every entry.
#[derive(Default)]
struct Flows {
    tables: Option<[Oid; 4]>,
    known: std::collections::HashMap<Oid, std::collections::HashMap<String, Flow>>,
    /// Counts the invalidations that forgot the entries: an answer read before one is not kept.
    forgotten: u64,
}

/// At most this many queues known, past which they are forgotten at once.
const MOST_KNOWN: usize = 10_000;

thread_local! {
    static FLOWS: std::cell::RefCell<Flows> = std::cell::RefCell::default();
    static WATCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

unsafe extern "C-unwind" fn forget_flows(_arg: Datum, relid: Oid) {
    FLOWS.with(|flows| {
        let mut flows = flows.borrow_mut();
        if relid == pg_sys::InvalidOid || flows.tables.is_some_and(|t| t.contains(&relid)) {
            flows.tables = None;
            flows.known.clear();
            flows.forgotten += 1;
        }
    });
}

static FLOW_OF: Statement = Statement::new(STATEMENTS, "flow_of", Planning::Probes);

/// The flow control of `claimant`'s `queues`, in their order: every change committed before the
/// call is seen (cached.rs). A queue not known is read (flow_of), and kept where nothing can have
/// changed unseen since: under read committed (a repeatable read reads with a snapshot from
/// before the call, which may miss a change whose invalidation was taken in already), and with no
/// invalidation taken in while it was read. A change that commits while a claim runs may or may
/// not stop that claim, as with any claim and change that overlap.
pub(crate) fn states(section: &Section, claimant: Oid, queues: &[&str]) -> Vec<Flow> {
    watch(&WATCHING, forget_flows);
    let mut states: Vec<Option<Flow>> = FLOWS.with(|flows| {
        let flows = flows.borrow();
        let known = flows.known.get(&claimant);
        queues
            .iter()
            .map(|&queue| known.and_then(|known| known.get(queue)).copied())
            .collect()
    });
    let unknown: Vec<usize> = (0..queues.len()).filter(|&i| states[i].is_none()).collect();
    if unknown.is_empty() {
        return states.into_iter().flatten().collect();
    }
    if FLOWS.with(|flows| flows.borrow().tables.is_none()) {
        let tables = [
            relation(c"queue_pauses"),
            relation(c"queue_limits"),
            relation(c"queue_rates"),
            relation(c"queue_key_limits"),
        ];
        FLOWS.with(|flows| flows.borrow_mut().tables = Some(tables));
    }
    let forgotten = FLOWS.with(|flows| flows.borrow().forgotten);
    let names: Vec<Option<Datum>> = unknown.iter().map(|&i| queues[i].into_datum()).collect();
    let read = section.run(
        &FLOW_OF,
        parameters! {
            claimant: Some(Datum::from(claimant)),
            queues: Some(array(TEXTOID, &names)),
        },
    );
    let found: Vec<Flow> = (0..unknown.len())
        .map(|row| {
            let has = |column| read.get::<bool>(row, column) == Some(true);
            let limits = Limits {
                slots: has(1),
                rated: has(2),
                keys: has(3),
                key_rates: has(4),
                every_key: has(5).then(|| KeyLimit {
                    max_per_key: read.get::<i32>(row, 6),
                    ordered: has(7),
                    rate_claims: read.get::<i32>(row, 8),
                    rate_per: read
                        .get::<Interval>(row, 9)
                        .map(|per| (per.months(), per.days(), per.micros())),
                }),
            };
            if has(0) {
                Flow::Paused
            } else if limits.slots || limits.rated || limits.keys {
                Flow::Limited(limits)
            } else {
                Flow::Free
            }
        })
        .collect();
    FLOWS.with(|flows| {
        let mut flows = flows.borrow_mut();
        if !reads_may_be_kept() || flows.forgotten != forgotten {
            return;
        }
        let count: usize = flows.known.values().map(|known| known.len()).sum();
        if count + unknown.len() > MOST_KNOWN {
            flows.known.clear();
        }
        let known = flows.known.entry(claimant).or_default();
        for (&i, &flow) in unknown.iter().zip(&found) {
            known.insert(queues[i].to_owned(), flow);
        }
    });
    for (&i, flow) in unknown.iter().zip(found) {
        states[i] = Some(flow);
    }
    states.into_iter().flatten().collect()
}

/// What a pause refuses of the extension's queues.
const RESERVED: (&str, &str) = (
    "cannot be paused",
    "Stop batch jobs with batch_cancel, SQL jobs with jobs_abort, schedules with jobs_disable_schedule.",
);
/// What a limit refuses of them.
const RESERVED_LIMIT: (&str, &str) = (
    "cannot be limited",
    "pg_jobs.max_workers bounds the SQL jobs run at once; an agent's --batchjobs its batch jobs.",
);

/// Refuses a change of `queue`'s limit while a claim holds one of its slots, tokens or gates
/// (`held`: SLOTS_HELD, TOKENS_HELD or GATES_HELD): it would wait for that claim's transaction,
/// which its worker ends when it will.
fn refuse_if_held(section: &Section, held: &'static Statement, identity: Datum, queue: &str) {
    if section
        .run(
            held,
            parameters! { owner: Some(identity), queue: queue.into_datum() },
        )
        .get::<bool>(0, 0)
        == Some(true)
    {
        refuse(
            PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
            "a claim in progress holds one of the queue's slots, tokens or key gates",
            Some("Try again when the claim's transaction has ended: claim in a transaction of its own."),
        );
    }
}

/// A limit's count (max_running, claims or max_per_key), refused outside 1 to MOST_RUNNING.
fn limit_count(count: Arg<i32>) -> i32 {
    let what = count.name;
    match count.get() {
        Some(most) if (1..=MOST_RUNNING).contains(&most) => most,
        most => invalid(
            format!(
                "{what} must be from 1 to {MOST_RUNNING}, not {}",
                most.map_or("null".into(), |most| most.to_string())
            ),
            Some("jobs_pause stops a queue's claims; jobs_unlimit removes its limits."),
        ),
    }
}

/// The prefix of the concurrency keys a key limit is for ('' for every key), refused when null or
/// longer than a key can be.
fn key_prefix(given: Arg<String>) -> Option<Datum> {
    let Some(prefix) = given.get() else {
        invalid(
            "prefix must not be null",
            Some("The empty prefix ('') is every key of the queue."),
        )
    };
    if prefix.len() > KEY_BYTES {
        invalid(
            format!(
                "prefix must be at most {KEY_BYTES} bytes, as a key, not {}",
                prefix.len()
            ),
            None,
        );
    }
    given.datum()
}

/// Sets one of `queue`'s limits with `set` ($owner, $queue, then `settings`, then $set_by, the role
/// setting it), once no claim holds what `held` asks about (SLOTS_HELD, TOKENS_HELD, GATES_HELD):
/// the limit in force, a record of `columns` columns.
fn set_limit(
    fcinfo: pg_sys::FunctionCallInfo,
    queue: &str,
    held: &'static Statement,
    set: &'static Statement,
    settings: &[(&str, Option<Datum>)],
    columns: usize,
) -> Datum {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let identity = Datum::from(caller.identity);
    refuse_if_held(&section, held, identity, queue);
    let mut arguments = vec![("owner", Some(identity)), ("queue", queue.into_datum())];
    arguments.extend_from_slice(settings);
    arguments.push(("set_by", Some(Datum::from(caller.role))));
    let limit = section.run(set, &arguments);
    let values: Vec<Option<Datum>> = (0..columns).map(|column| limit.datum(0, column)).collect();
    drop(section);
    record(fcinfo, &values)
}

// jobs_pause(queue) -> (paused_at, paused_by)
entry!(jobs_pause, |fcinfo, arguments| {
    let caller = Caller::current();
    let queue = callers_queue(arguments.queue, "jobs_pause('emails')", RESERVED);
    let section = Section::as_owner(fcinfo);
    let pause = section.run(
        &PAUSE,
        parameters! {
            owner: Some(Datum::from(caller.identity)),
            queue: queue.into_datum(),
            paused_by: Some(Datum::from(caller.role)),
        },
    );
    let values = [pause.datum(0, 0), pause.datum(0, 1)];
    drop(section);
    record(fcinfo, &values)
});

// jobs_resume(queue) -> whether it was paused
entry!(jobs_resume, |fcinfo, arguments| {
    let caller = Caller::current();
    let queue = callers_queue(arguments.queue, "jobs_resume('emails')", RESERVED);
    let section = Section::as_owner(fcinfo);
    let resumed = section.run(
        &RESUME,
        parameters! { owner: Some(Datum::from(caller.identity)), queue: queue.into_datum() },
    );
    Datum::from(resumed.len() > 0)
});

// jobs_limit(queue, max_running) -> (max_running, set_at, set_by)
entry!(jobs_limit, |fcinfo, arguments| {
    let queue = callers_queue(arguments.queue, "jobs_limit('emails', 8)", RESERVED_LIMIT);
    let most = limit_count(arguments.max_running);
    set_limit(
        fcinfo,
        &queue,
        &SLOTS_HELD,
        &LIMIT,
        parameters! { max_running: Some(Datum::from(most)) },
        3,
    )
});

// jobs_key_limit(queue, max_per_key, ordered, prefix) -> (max_per_key, ordered, set_at, set_by)
entry!(jobs_key_limit, |fcinfo, arguments| {
    let queue = callers_queue(
        arguments.queue,
        "jobs_key_limit('emails', 1)",
        RESERVED_LIMIT,
    );
    let most = limit_count(arguments.max_per_key);
    let ordered = match arguments.ordered.get() {
        Some(true) if most > 1 => invalid(
            format!("an ordered key runs one job at a time, not {most}"),
            Some("jobs_key_limit('emails', 1, ordered => true)"),
        ),
        Some(ordered) => ordered,
        None => invalid("ordered must not be null", None),
    };
    set_limit(
        fcinfo,
        &queue,
        &GATES_HELD,
        &KEY_LIMIT,
        parameters! {
            max_per_key: Some(Datum::from(most)),
            ordered: Some(Datum::from(ordered)),
            prefix: key_prefix(arguments.prefix),
        },
        4,
    )
});

/// A rate limit (jobs_rate_limit's, jobs_key_rate_limit's, with its `prefix`; `example` and
/// `hint` for the messages) set by `set` (RATE_LIMIT, KEY_RATE_LIMIT) as set_limit does.
fn rate_limit(
    fcinfo: pg_sys::FunctionCallInfo,
    (queue, claims, per, prefix): (Arg<String>, Arg<i32>, Arg<Interval>, Option<Arg<String>>),
    example: &'static str,
    hint: &'static str,
    held: &'static Statement,
    set: &'static Statement,
) -> Datum {
    let queue = callers_queue(queue, example, RESERVED_LIMIT);
    let claims = limit_count(claims);
    let per = per.datum();
    if per.is_none() || outside(per, RATE_WINDOW) {
        invalid(
            format!(
                "per must be more than 0 and at most 1 day, not {}",
                interval_text(per)
            ),
            Some(hint),
        );
    }
    let mut settings = vec![("claims", Some(Datum::from(claims))), ("per", per)];
    if let Some(prefix) = prefix {
        settings.push(("prefix", key_prefix(prefix)));
    }
    set_limit(fcinfo, &queue, held, set, &settings, 4)
}

// jobs_rate_limit(queue, claims, per) -> (claims, per, set_at, set_by)
entry!(jobs_rate_limit, |fcinfo, arguments| {
    rate_limit(
        fcinfo,
        (arguments.queue, arguments.claims, arguments.per, None),
        "jobs_rate_limit('emails', 100, '1 minute')",
        "For 100 claims a minute: jobs_rate_limit('emails', 100, '1 minute').",
        &TOKENS_HELD,
        &RATE_LIMIT,
    )
});

// jobs_key_rate_limit(queue, claims, per, prefix) -> (claims, per, set_at, set_by)
entry!(jobs_key_rate_limit, |fcinfo, arguments| {
    rate_limit(
        fcinfo,
        (
            arguments.queue,
            arguments.claims,
            arguments.per,
            Some(arguments.prefix),
        ),
        "jobs_key_rate_limit('emails', 10, '1 minute')",
        "For 10 claims of each key a minute: jobs_key_rate_limit('emails', 10, '1 minute').",
        &GATES_HELD,
        &KEY_RATE_LIMIT,
    )
});

// jobs_unlimit(queue) -> whether it had a concurrency, a rate or a key limit
entry!(jobs_unlimit, |fcinfo, arguments| {
    let caller = Caller::current();
    let queue = callers_queue(arguments.queue, "jobs_unlimit('emails')", RESERVED_LIMIT);
    let section = Section::as_owner(fcinfo);
    let identity = Datum::from(caller.identity);
    refuse_if_held(&section, &SLOTS_HELD, identity, &queue);
    refuse_if_held(&section, &TOKENS_HELD, identity, &queue);
    refuse_if_held(&section, &GATES_HELD, identity, &queue);
    let unlimited = section.run(
        &UNLIMIT,
        parameters! { owner: Some(identity), queue: queue.into_datum() },
    );
    Datum::from(unlimited.len() > 0)
});

// jobs_key_unlimit(queue, prefix) -> whether it had key limits of that prefix
entry!(jobs_key_unlimit, |fcinfo, arguments| {
    let caller = Caller::current();
    let queue = callers_queue(
        arguments.queue,
        "jobs_key_unlimit('emails', 'customer:')",
        RESERVED_LIMIT,
    );
    let prefix = key_prefix(arguments.prefix);
    let section = Section::as_owner(fcinfo);
    let identity = Datum::from(caller.identity);
    refuse_if_held(&section, &GATES_HELD, identity, &queue);
    let unlimited = section.run(
        &KEY_UNLIMIT,
        parameters! { owner: Some(identity), queue: queue.into_datum(), prefix },
    );
    Datum::from(unlimited.len() > 0)
});
