//! What a compute group lets its workers contact (seed 000's computeGroupWorkerOrigins): every URL
//! a job's workers are to fetch from or send to (its work function, its arguments, its data and
//! where its results go) must be of an origin that each group of the job lets its workers contact
//! for that (a row of `compute_group_worker_origins` of that type, or of type any), so that a
//! deployer cannot turn a group's workers on a host its owner did not name. Checked when a job is
//! deployed, when an open job takes more values, and when its owner changes a datum or an
//! argument (a trigger); and a group's owner may not remove or change an origin an open job of the
//! group still contacts (another trigger; the two sides take turns on the group's origins' lock,
//! see [`origins_lock`]). Only
//! http and https URLs are contacts: a `data:` URI carries its value, a value or a work function
//! without a scheme is made one (`_as_uri`), and the workers fetch no other scheme. Statements in
//! `compute_origins.sql`.

use pgrx::pg_sys::{self, Datum, UUIDOID};
use pgrx::prelude::*;
use pgrx::FromDatum;
use serde_json::Value;

use super::call::{invalid, refuse, trigger_column, trigger_data, trigger_row, Section, Statement};
use super::datum::{elements, output};
use super::keyed::{lock_key, tried};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("compute_origins.sql"));

static WORKER_ORIGINS: Statement = statement("worker_origins");
static JOB_GROUPS: Statement = statement("job_groups");
static OPEN_JOBS: Statement = statement("open_jobs");
static JOB_CONTACTS: Statement = statement("job_contacts");
static GROUP_OPAQUE_ID: Statement = statement("group_opaque_id");

/// What a job's workers contact a URL for: the types of `compute_group_worker_origins`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Contact {
    WorkFunction,
    Argument,
    Data,
    Results,
}

/// Every type of `compute_group_worker_origins` (its CHECK lists them too): any, or a contact's.
pub(crate) const ORIGIN_TYPES: [&str; 5] = [
    "any",
    Contact::WorkFunction.type_name(),
    Contact::Argument.type_name(),
    Contact::Data.type_name(),
    Contact::Results.type_name(),
];

impl Contact {
    const fn type_name(self) -> &'static str {
        match self {
            Contact::WorkFunction => "fetchWorkFunctions",
            Contact::Argument => "fetchArguments",
            Contact::Data => "fetchData",
            Contact::Results => "sendResults",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Contact::WorkFunction => "fetch work functions from",
            Contact::Argument => "fetch arguments from",
            Contact::Data => "fetch data from",
            Contact::Results => "send results to",
        }
    }
}

/// The origin `uri` contacts (scheme, host and port, as a browser compares them), if it is an
/// http or https URL; None for anything else. The scheme must open the text, as `_as_uri` wants
/// of a URI (the URL parser would skip leading spaces); looked at first, so that the values of a
/// large input set that are no URL are not parsed.
pub(crate) fn origin_of(uri: &str) -> Option<String> {
    let opens = |scheme: &str| {
        uri.get(..scheme.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
    };
    if !opens("http:") && !opens("https:") {
        return None;
    }
    url::Url::parse(uri)
        .ok()
        .filter(|url| ["http", "https"].contains(&url.scheme()) && url.has_host())
        .map(|url| url.origin().ascii_serialization())
}

/// The contacts of the values of a job's input set or arguments (a JSON array): each string that
/// is an http or https URL (a number or an object is made a `data:` URI).
pub(crate) fn contacts_of_values(
    contact: Contact,
    values: Option<&Value>,
) -> impl Iterator<Item = (Contact, String)> + '_ {
    values
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(move |value| Some((contact, origin_of(value.as_str()?)?)))
}

/// Of `contacts`, the first that one of `groups` (a bigint[]) does not let its workers make, in
/// the order of [`Contact`], then of the origins, of the first group in id order: that group's
/// opaque id, the contact and its origin.
fn refused(
    section: &Section,
    groups: Option<Datum>,
    contacts: impl Iterator<Item = (Contact, String)>,
) -> Option<(String, Contact, String)> {
    let mut contacts: Vec<(Contact, String)> = contacts.collect();
    if contacts.is_empty() {
        return None;
    }
    contacts.sort();
    contacts.dedup();
    let origins = section.run(&WORKER_ORIGINS, parameters! { groups });
    for row in 0..origins.len() {
        let allowed: Vec<(Option<String>, String)> = origins
            .get::<Vec<String>>(row, 1)
            .unwrap_or_default()
            .iter()
            .map(|origin| origin_of(origin))
            .zip(origins.get::<Vec<String>>(row, 2).unwrap_or_default())
            .collect();
        for (contact, origin) in &contacts {
            let admits = allowed.iter().any(|(allowed, kind)| {
                allowed.as_ref() == Some(origin) && (kind == "any" || kind == contact.type_name())
            });
            if !admits {
                let group = origins
                    .datum(row, 0)
                    .map_or_else(String::new, |group| output(group, UUIDOID));
                return Some((group, *contact, origin.clone()));
            }
        }
    }
    None
}

/// The lock of group `group`'s origins: held shared by every check of contacts against the group
/// until its transaction ends, alone by a change of its origins (`_compute_origin_removed`), so
/// that neither a deployment (or a job's new input) nor a change of the origins misses the other
/// made meanwhile. Only ever tried: neither waits for the other's transaction, which a member may
/// keep open as long as it likes; the one that finds it taken is refused (55P03), nothing changed.
fn origins_lock(group: i64) -> i64 {
    lock_key("compute_origins", &group.to_string())
}

/// Refuses (55P03) group `group`'s origins' lock taken by another transaction, with `message`
/// about the group (its opaque id).
fn origins_busy(section: &Section, group: i64, message: impl Fn(&str) -> String) -> ! {
    let opaque = section
        .run(
            &GROUP_OPAQUE_ID,
            parameters! { group_id: Some(Datum::from(group)) },
        )
        .datum(0, 0)
        .map_or_else(String::new, |id| output(id, UUIDOID));
    refuse(
        PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
        message(&opaque),
        Some("Try again once that transaction has ended."),
    )
}

/// Refuses (22023) a contact of `contacts` that one of `groups` (a bigint[]) does not let its
/// workers make (see [`refused`]), under each group's origins' lock, held shared. Without contacts
/// no origin matters, and the lock is not taken: a group's owner changing its origins in a
/// transaction left open holds back only the work that contacts something.
pub(crate) fn check_contacts(
    section: &Section,
    groups: Option<Datum>,
    contacts: impl Iterator<Item = (Contact, String)>,
) {
    let mut contacts = contacts.peekable();
    if contacts.peek().is_none() {
        return;
    }
    let ids = groups.map(elements).unwrap_or_default();
    for group in ids.into_iter().flatten().map(|id| id.value() as i64) {
        if !tried(
            pg_sys::pg_try_advisory_xact_lock_shared_int8,
            origins_lock(group),
        ) {
            origins_busy(section, group, |opaque| {
                format!("the owner of compute group {opaque} is changing its origins")
            });
        }
    }
    if let Some((group, contact, origin)) = refused(section, groups, contacts) {
        invalid(
            format!("compute group {group} does not let its workers {} {origin}", contact.what()),
            Some(&format!(
                "The group's owner adds the origin: INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin, type) VALUES (<group id>, '{origin}', '{}').",
                contact.type_name()
            )),
        );
    }
}

/// Refuses contacts that the groups of deployed job `job` do not let their workers make.
pub(crate) fn check_job_contacts(
    section: &Section,
    job: i64,
    contacts: impl Iterator<Item = (Contact, String)>,
) {
    let mut contacts = contacts.peekable();
    if contacts.peek().is_none() {
        return;
    }
    let groups = section
        .run(&JOB_GROUPS, parameters! { job: Some(Datum::from(job)) })
        .datum(0, 0);
    check_contacts(section, groups, contacts);
}

// A trigger BEFORE UPDATE OF value of compute_data (argument fetchData) and compute_arguments
// (fetchArguments): the job owner's new value is a contact its groups must let their workers make.
entry!(_compute_contact_admitted, |fcinfo, _| {
    let trigger = trigger_data(fcinfo, "_compute_contact_admitted");
    let row = trigger_row(trigger);
    let column = |name| trigger_column(trigger, row, name);
    let given = (*(*trigger).tg_trigger).tgargs;
    let contact = match (!given.is_null()).then(|| std::ffi::CStr::from_ptr(*given).to_bytes()) {
        Some(b"fetchData") => Contact::Data,
        Some(b"fetchArguments") => Contact::Argument,
        _ => error!("pg_jobs: _compute_contact_admitted takes fetchData or fetchArguments"),
    };
    let value = column(c"value").and_then(|value| String::from_datum(value, false));
    if let (Some(job), Some(origin)) = (column(c"job_id"), value.as_deref().and_then(origin_of)) {
        let section = Section::as_owner(fcinfo);
        check_job_contacts(
            &section,
            job.value() as i64,
            std::iter::once((contact, origin)),
        );
    }
    Datum::from(row)
});

/// What deployed job `job` has its workers contact, read back as its deployment gave it (see
/// compute_deploy.rs): its work function, its pattern's first URL, where its results go, and the
/// origins of its arguments and values (found by the statement, one per origin, whatever their
/// number).
fn deployed_contacts(section: &Section, job: Datum) -> Vec<(Contact, String)> {
    let read = section.run(&JOB_CONTACTS, parameters! { job: Some(job) });
    let text = |column| read.get::<String>(0, column);
    let prefixes = |column| {
        read.get::<Vec<Option<String>>>(0, column)
            .unwrap_or_default()
    };
    let mut contacts: Vec<(Contact, String)> = [
        (Contact::WorkFunction, text(0)),
        (Contact::Data, text(1)),
        (Contact::Results, text(2)),
    ]
    .into_iter()
    .filter_map(|(contact, uri)| Some((contact, origin_of(&uri?)?)))
    .collect();
    for (contact, column) in [(Contact::Argument, 3), (Contact::Data, 4)] {
        contacts.extend(
            prefixes(column)
                .into_iter()
                .flatten()
                .filter_map(|prefix| Some((contact, origin_of(&prefix)?))),
        );
    }
    contacts
}

// A trigger AFTER DELETE OR UPDATE OF compute_group_id, origin, type of compute_group_worker_origins:
// a group's origin removed or changed may not leave an open job of the group whose workers contact
// what its groups no longer let them (55006), since deployment and changes alone were checked.
entry!(_compute_origin_removed, |fcinfo, _| {
    let trigger = trigger_data(fcinfo, "_compute_origin_removed");
    let Some(group) = trigger_column(trigger, (*trigger).tg_trigtuple, c"compute_group_id") else {
        return Datum::from(0);
    };
    let section = Section::as_owner(fcinfo);
    let id = group.value() as i64;
    if !tried(pg_sys::pg_try_advisory_xact_lock_int8, origins_lock(id)) {
        origins_busy(&section, id, |opaque| {
            format!("a job of compute group {opaque} is being deployed or given new inputs")
        });
    }
    let jobs = section.run(&OPEN_JOBS, parameters! { group_id: Some(group) });
    for row in 0..jobs.len() {
        let job = jobs.datum(row, 0).expect("a job");
        let contacts = deployed_contacts(&section, job);
        if let Some((group, contact, origin)) =
            refused(&section, jobs.datum(row, 1), contacts.into_iter())
        {
            refuse(
                PgSqlErrorCode::ERRCODE_OBJECT_IN_USE,
                format!(
                    "compute job {} of group {group} has its workers {} {origin}: the group's origins must still let them",
                    job.value() as i64,
                    contact.what()
                ),
                Some("Keep an origin that admits it until the job ends (compute_cancel or compute_close by its owner)."),
            );
        }
    }
    Datum::from(0)
});
