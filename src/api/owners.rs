//! The rows whose owner is their parent's (`sql/080_compute_tables.sql`): a compute job's results
//! and settings are its job's owner's, a group's accounting its group's, a worker's settings its
//! worker's. A BEFORE trigger copies the parent's owner into the row, whoever writes it, members'
//! own writes through their policies included; it runs as the extension's owner, since the writer
//! may not be allowed to read the parent (a worker owner adding an origin to a group it does not
//! own must be refused by the policy, which needs the group's real owner in the row to do so).
//! When the parent is unknown the row keeps the owner it was given, and the policies refuse it if
//! that is not the caller's. Statements in `owners.sql`.
//!
//! C rather than PL/pgSQL: the PL/pgSQL trigger set up a read of the job's live row and of every
//! month of its history for each row it saw (a fifth of a `compute_submit`).

use std::ffi::CStr;

use pgrx::pg_sys::{self, Datum};

use super::call::{trigger_column, trigger_data, trigger_row, Section, Statement};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("owners.sql"));

static JOB_OWNER: Statement = statement("job_owner");
static FINISHED_JOB_OWNER: Statement = statement("finished_job_owner");
static GROUP_OWNER: Statement = statement("group_owner");
static WORKER_OWNER: Statement = statement("worker_owner");
static CREDS_LIST_OWNER: Statement = statement("creds_list_owner");

thread_local! {
    /// The last job whose owner was read in this transaction (by its local id), and its owner: a
    /// job's owner never changes (no statement sets it), and the rows of one statement mostly name
    /// one job (a submit's reports and results: a read per row was a tenth of a submit). Not kept
    /// past the transaction: a job's id may be given again (its sequence restarted, or the
    /// extension made anew in the same session), to another owner's job.
    static LAST_JOB_OWNER: std::cell::Cell<Option<(u32, i64, Datum)>> = const { std::cell::Cell::new(None) };
}

/// For a call that read job `job`'s owner (`owner`, an oid) with the job: the owner triggers of
/// the rows it writes for the job in this transaction take it rather than read it again (a
/// submit's accepted results: the read was a sixth of a submit of one slice).
pub(crate) fn job_owner_known(job: i64, owner: Datum) {
    LAST_JOB_OWNER.set(Some((unsafe { (*pg_sys::MyProc).lxid }, job, owner)));
}

/// What a row's owner is copied from: the column that names the parent, and the parent's kind.
#[derive(Clone, Copy)]
enum Parent {
    Job,
    Group,
    Worker,
    CredsList,
}

impl Parent {
    fn column(self) -> &'static CStr {
        match self {
            Parent::Job => c"job_id",
            Parent::Group => c"compute_group_id",
            Parent::Worker => c"worker_opaque_id",
            Parent::CredsList => c"creds_list_id",
        }
    }

    /// The owner of the parent named `key`, if there is one (a job's, live or finished).
    fn owner(self, section: &Section, key: Datum) -> Option<Datum> {
        if let Parent::Job = self {
            let (transaction, job) = (unsafe { (*pg_sys::MyProc).lxid }, key.value() as i64);
            if let Some((read_in, last, owner)) = LAST_JOB_OWNER.get() {
                if read_in == transaction && last == job {
                    return Some(owner);
                }
            }
            let owner = self.read_owner(section, key);
            if let Some(owner) = owner {
                job_owner_known(job, owner);
            }
            return owner;
        }
        self.read_owner(section, key)
    }

    fn read_owner(self, section: &Section, key: Datum) -> Option<Datum> {
        let key = Some(key);
        let first = match self {
            Parent::Job => section.run(&JOB_OWNER, parameters! { job: key }),
            Parent::Group => section.run(&GROUP_OWNER, parameters! { compute_group: key }),
            Parent::Worker => section.run(&WORKER_OWNER, parameters! { worker: key }),
            Parent::CredsList => section.run(&CREDS_LIST_OWNER, parameters! { creds_list: key }),
        };
        match (first.datum(0, 0), self) {
            (None, Parent::Job) => section
                .run(&FINISHED_JOB_OWNER, parameters! { job: key })
                .datum(0, 0),
            (found, _) => found,
        }
    }
}

/// The trigger's new row with each owner column in `owners` set from its parent; the row as it
/// was when no parent is known (or none is named).
unsafe fn copy_owners(
    fcinfo: pg_sys::FunctionCallInfo,
    name: &str,
    owners: &[(&CStr, Parent)],
) -> Datum {
    let trigger = trigger_data(fcinfo, name);
    let row = trigger_row(trigger);
    let columns = (*(*trigger).tg_relation).rd_att;
    let mut changes: Vec<(i32, Datum)> = Vec::with_capacity(owners.len());
    {
        let section = Section::as_owner(fcinfo);
        for &(owner_column, parent) in owners {
            let key = trigger_column(trigger, row, parent.column());
            if let Some(owner) = key.and_then(|key| parent.owner(&section, key)) {
                changes.push((pg_sys::SPI_fnumber(columns, owner_column.as_ptr()), owner));
            }
        }
    }
    if changes.is_empty() {
        return Datum::from(row);
    }
    let (mut numbers, mut values): (Vec<i32>, Vec<Datum>) = changes.into_iter().unzip();
    let nulls = vec![false; numbers.len()];
    Datum::from(pg_sys::heap_modify_tuple_by_cols(
        row,
        columns,
        numbers.len() as i32,
        numbers.as_mut_ptr(),
        values.as_mut_ptr(),
        nulls.as_ptr() as *mut bool,
    ))
}

/// A trigger that copies each of its rows' owner columns from the parent each names.
macro_rules! owner_copy {
    ($name:ident, $($column:literal from $parent:ident),+) => {
        entry!($name, |fcinfo, _| copy_owners(
            fcinfo,
            stringify!($name),
            &[$(($column, Parent::$parent)),+]
        ));
    };
}

owner_copy!(_owner_from_job, c"owner" from Job);
owner_copy!(_owner_from_group, c"owner" from Group);
owner_copy!(_owner_from_worker, c"owner" from Worker);
owner_copy!(_owner_from_creds_list, c"owner" from CredsList);
// A group's membership of a job has two owners: the group's, and the job's for the job's side.
owner_copy!(_compute_group_job_owners, c"owner" from Group, c"job_owner" from Job);

// The seed's autoNow: last_update follows every change, whoever makes it (now(): the
// transaction's start, as the PL/pgSQL trigger it replaces set it).
entry!(_touch_last_update, |fcinfo, _| {
    let trigger = trigger_data(fcinfo, "_touch_last_update");
    let columns = (*(*trigger).tg_relation).rd_att;
    let mut number = [pg_sys::SPI_fnumber(columns, c"last_update".as_ptr())];
    let mut now = [Datum::from(pg_sys::GetCurrentTransactionStartTimestamp())];
    Datum::from(pg_sys::heap_modify_tuple_by_cols(
        (*trigger).tg_newtuple,
        columns,
        1,
        number.as_mut_ptr(),
        now.as_mut_ptr(),
        [false].as_mut_ptr(),
    ))
});
