//! Opaque ids: a job's is computed from its id and owner under the installation's key
//! (`pg_jobs_core::opaque_id`, the key in `opaque_id_key`, sql/030_queue.sql); groups and workers
//! keep stored ones (`_opaque_id`). Statements in `opaque_ids.sql`.

use pgrx::pg_sys::{self, Oid};
use pgrx::prelude::*;
use pgrx::{IntoDatum, Uuid};

use super::cached::secret;
use super::call::{materialize, null, refuse, Caller, Section, Statement};
use crate::{entry, named_statements, parameters};
use pg_jobs_core::opaque_id::{job_of_opaque_id, job_opaque_id, time_ordered_uuid};

named_statements!(include_str!("opaque_ids.sql"));

static KEY: Statement = statement("key");
static LISTED: Statement = statement("listed");
static PUBLIC_FIELDS: Statement = statement("public_fields");

/// A new stored opaque id, for a group or a worker (see pg_jobs_core::opaque_id).
#[pg_extern(volatile, parallel_safe)]
fn _opaque_id() -> Uuid {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64);
    let mut random = [0u8; 10];
    crate::strong_random(&mut random);
    Uuid::from_bytes(time_ordered_uuid(millis, random))
}

// _fence(value) (strict): the value itself, from a function the planner neither inlines nor may
// see through (not leakproof): see sql/010_types.sql.
entry!(_fence, |_fcinfo, arguments| {
    arguments.value.datum().expect("strict")
});

/// The key of the jobs' opaque ids; called inside a section as the extension's owner.
fn key() -> [u8; 32] {
    secret(c"opaque_id_key", &KEY)
        .try_into()
        .unwrap_or_else(|_| error!("pg_jobs: the key in opaque_id_key is not of 32 bytes"))
}

// _job_opaque_id(id, owner): the opaque id of a job, for the views that show them
// (job_opaque_ids, jobs_public), which every member may read and so every member may call: it
// answers for the caller's own jobs and for listed ones, and refuses any other.
entry!(_job_opaque_id, |fcinfo, arguments| {
    let caller = Caller::current();
    let (Some(id), Some(owner)) = (arguments.id.get(), arguments.owner.get()) else {
        return null(fcinfo);
    };
    let opaque_id = {
        let section = Section::as_owner(fcinfo);
        let shown = owner == caller.identity
            || caller.admin()
            || section
                .run(
                    &LISTED,
                    parameters! {
                        id: Some(pg_sys::Datum::from(id)),
                        owner: Some(pg_sys::Datum::from(owner)),
                    },
                )
                .get::<bool>(0, 0)
                .unwrap_or(false);
        if !shown {
            refuse(
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!("job {id} is neither yours nor listed"),
                Some("Its owner reads its opaque id in job_opaque_ids."),
            );
        }
        job_opaque_id(&key(), id, owner.to_u32())
    };
    // Made once the section is over: memory allocated inside it goes with its SPI connection.
    Uuid::from_bytes(opaque_id).into_datum().unwrap()
});

// jobs_public_lookup(opaque_id): the public fields of any job, live or finished, listed or not,
// by its opaque id; no row for an id that names no job.
entry!(jobs_public_lookup, |fcinfo, arguments| {
    materialize(fcinfo);
    let Some(opaque) = arguments.opaque_id.get() else {
        return pg_sys::Datum::from(0);
    };
    let section = Section::as_owner(fcinfo);
    let bytes: [u8; 16] = *opaque.as_bytes();
    if let Some((id, owner)) = job_of_opaque_id(&key(), bytes) {
        section
            .run(
                &PUBLIC_FIELDS,
                parameters! {
                    id: Some(pg_sys::Datum::from(id)),
                    owner: Some(pg_sys::Datum::from(Oid::from(owner))),
                    opaque_id: opaque.into_datum(),
                },
            )
            .return_all(fcinfo);
    }
    pg_sys::Datum::from(0)
});
