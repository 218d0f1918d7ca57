//! The boundary of the API.
//!
//! Every public function is a C function of this library, declared in `sql/` (`LANGUAGE c`) and
//! written once, here in `src/api/`. It reads its caller with `GetUserId()` at entry, checks its
//! arguments, and runs its statements as the owner of the function only for as long as they run,
//! the way pg_cron's functions do: `SetUserIdAndSecContext(owner, SECURITY_LOCAL_USERID_CHANGE)`
//! around SPI, restored on the way out, error or not (and by PostgreSQL itself when the
//! (sub)transaction aborts). Nothing else runs with the owner's rights: no SECURITY DEFINER
//! function, no ticket naming the caller.
//!
//! The statements are kept in `.sql` files by domain beside the code that runs them, one named
//! statement each, whose header declares its parameters by name and type (`-- name:
//! add_proxy(proxy oid, root oid, created_by oid)`, see `pg_jobs_core::statements`), given by
//! name when it runs (`parameters!`); prepared once per backend and kept: a generic plan, planned
//! without JIT, with the search path pinned to the extension's schema and `pg_catalog` while it
//! is planned and run, so no name in it can be taken over by the caller's search path.

use std::ffi::{c_char, c_int, CString};
use std::sync::atomic::{AtomicPtr, Ordering};

use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::prelude::*;
use pgrx::{FromDatum, IntoDatum};

/// Who called: the role, and the identity it acts for, read at entry (a call's section then runs
/// as the function's owner).
#[derive(Clone, Copy)]
pub struct Caller {
    pub role: Oid,
    pub identity: Oid,
}

impl Caller {
    pub fn current() -> Self {
        let role = unsafe { pg_sys::GetUserId() };
        Caller {
            role,
            identity: super::identity::_identity_of(role),
        }
    }

    /// Whether the caller acts on every identity's rows: its identity is a superuser.
    pub fn admin(&self) -> bool {
        unsafe { pg_sys::superuser_arg(self.identity) }
    }
}

/// How a statement is planned besides generically and without JIT.
#[derive(Clone, Copy, PartialEq)]
pub enum Planning {
    /// As PostgreSQL would.
    Default,
    /// Rows found by the ids or keys given, never by scanning or hashing: with a batch of ids,
    /// the planner, pricing every index probe as a disk read, chose to hash the batch and scan
    /// the whole table (1 ms for 100 jobs of 10,000 queued, growing with the queue), where 100
    /// probes of a primary key in memory take 0.1 ms.
    Probes,
    /// As Probes, and the first rows of an index read in its order, never through a bitmap: once
    /// ANALYZE had seen a queue of a few live jobs, the claim was planned as a bitmap scan of the
    /// whole ready range and a sort, which reads every dead row version of that range on every
    /// claim (a bitmap scan cannot mark index entries dead, as an index scan does), so under a
    /// steady load the round trip grew with the dead rows until VACUUM, 0.8 to 7 ms in a minute.
    /// (Not for Probes: with those statistics the planner then probed the batch's ids through
    /// the ready index, whose last column is the id, rather than the primary key.)
    Head,
}

/// One named statement of a domain's file of statements.
pub struct Statement {
    source: &'static str,
    name: &'static str,
    planning: Planning,
    /// The parts of the text left out (see [`Statement::without`]).
    omitted: &'static [&'static str],
    plan: AtomicPtr<pg_sys::_SPI_plan>,
    /// Its parameters' names, in the order of their numbers; set when it is prepared, and kept
    /// as its plan is.
    names: AtomicPtr<Vec<String>>,
}

impl Statement {
    pub const fn new(source: &'static str, name: &'static str, planning: Planning) -> Self {
        Statement {
            source,
            name,
            planning,
            omitted: &[],
            plan: AtomicPtr::new(std::ptr::null_mut()),
            names: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The same statement without its lines from each `-- <part> {` to the next `-- } <part>`, for
    /// each of `parts`: one text run in several forms where a part would cost the calls that
    /// never need it (a data-modifying CTE is set up, and run, whether or not it has rows).
    pub const fn without(self, parts: &'static [&'static str]) -> Self {
        Statement {
            omitted: parts,
            ..self
        }
    }

    /// The text to prepare and its parameters' types, as its header declares them (types read as
    /// PostgreSQL reads a type's name, under the section's search path).
    fn declared(&self) -> (String, Vec<Oid>) {
        let prepared = pg_jobs_core::statements::prepared(self.source, self.name, self.omitted)
            .unwrap_or_else(|problem| error!("pg_jobs: {problem}"));
        let types = prepared
            .parameters
            .iter()
            .map(|(_, sql_type)| {
                let name = CString::new(sql_type.as_str()).expect("a type's name");
                let (mut type_oid, mut type_modifier) = (pg_sys::InvalidOid, -1);
                unsafe {
                    pg_sys::parseTypeString(name.as_ptr(), &mut type_oid, &mut type_modifier, false)
                };
                type_oid
            })
            .collect();
        let names = prepared
            .parameters
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        self.names
            .store(Box::into_raw(Box::new(names)), Ordering::Relaxed);
        (prepared.text, types)
    }

    /// The kept plan; prepared on first use in this backend, inside a [`Section`].
    fn plan(&self) -> pg_sys::SPIPlanPtr {
        let kept = self.plan.load(Ordering::Relaxed);
        if !kept.is_null() {
            return kept;
        }
        let (text, mut types) = self.declared();
        let text = CString::new(text).expect("statements contain no NUL");
        // Parsed and analysed now; planned when first run, and again after an invalidation.
        let plan = unsafe {
            pg_sys::SPI_prepare_cursor(
                text.as_ptr(),
                types.len() as c_int,
                types.as_mut_ptr(),
                pg_sys::CURSOR_OPT_GENERIC_PLAN as c_int,
            )
        };
        if plan.is_null() || unsafe { pg_sys::SPI_keepplan(plan) } != 0 {
            error!("pg_jobs: could not prepare statement {}", self.name);
        }
        self.plan.store(plan, Ordering::Relaxed);
        plan
    }
}

/// The planner settings a statement is planned with, for as long as it runs: it may be planned
/// anew whenever it is run (after an invalidation). Set on the settings' variables directly, as
/// a function's SET clause costs a GUC nesting level on every call; nothing that can change
/// them runs meanwhile, and they are restored on the way out, error or not.
struct PlannerSettings {
    jit: bool,
    seqscan: bool,
    hashjoin: bool,
    bitmapscan: bool,
}

impl PlannerSettings {
    /// No JIT, ever: a generic plan prices LIMIT n as a tenth of the queue, which with a million
    /// queued passed jit_above_cost and compiled the claim (10 ms) on every call.
    fn pin(planning: Planning) -> Self {
        unsafe {
            let saved = PlannerSettings {
                jit: pg_sys::jit_enabled,
                seqscan: pg_sys::enable_seqscan,
                hashjoin: pg_sys::enable_hashjoin,
                bitmapscan: pg_sys::enable_bitmapscan,
            };
            pg_sys::jit_enabled = false;
            if planning != Planning::Default {
                pg_sys::enable_seqscan = false;
                pg_sys::enable_hashjoin = false;
            }
            if planning == Planning::Head {
                pg_sys::enable_bitmapscan = false;
            }
            saved
        }
    }
}

impl Drop for PlannerSettings {
    fn drop(&mut self) {
        unsafe {
            pg_sys::jit_enabled = self.jit;
            pg_sys::enable_seqscan = self.seqscan;
            pg_sys::enable_hashjoin = self.hashjoin;
            pg_sys::enable_bitmapscan = self.bitmapscan;
        }
    }
}

/// An SPI connection with the search path pinned and, for a caller's call, the function's owner
/// as the current user. Everything is undone when it is dropped, also while an error unwinds.
pub struct Section {
    saved_user: Option<(Oid, c_int)>,
}

impl Section {
    /// For a call of the public function of `fcinfo` by a member: runs as the function's owner,
    /// as SECURITY DEFINER would, but only for the statements of this section.
    pub fn as_owner(fcinfo: pg_sys::FunctionCallInfo) -> Self {
        let function = unsafe { (*(*fcinfo).flinfo).fn_oid };
        let (owner, schema) = owner_and_schema(function);
        Self::enter(Some(owner), schema)
    }

    /// For the extension's own work (the background workers, internal functions): as the
    /// current user.
    pub fn as_current_user() -> Self {
        let schema = unsafe { pg_sys::get_namespace_oid(c"pgjobs".as_ptr(), false) };
        Self::enter(None, schema)
    }

    fn enter(owner: Option<Oid>, schema: Oid) -> Self {
        unsafe {
            if pg_sys::SPI_connect() != pg_sys::SPI_OK_CONNECT as c_int {
                error!("pg_jobs: SPI_connect failed");
            }
            let saved_user = owner.map(|owner| {
                let mut user = pg_sys::InvalidOid;
                let mut context: c_int = 0;
                pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
                pg_sys::SetUserIdAndSecContext(
                    owner,
                    context | pg_sys::SECURITY_LOCAL_USERID_CHANGE as c_int,
                );
                (user, context)
            });
            let mut path = pg_sys::OverrideSearchPath {
                schemas: pg_sys::lappend_oid(
                    pg_sys::lappend_oid(std::ptr::null_mut(), schema),
                    Oid::from(pg_sys::PG_CATALOG_NAMESPACE),
                ),
                addCatalog: false,
                addTemp: false,
                generation: 0,
            };
            pg_sys::PushOverrideSearchPath(&mut path);
            Section { saved_user }
        }
    }

    /// Runs a statement with its parameters given by name (see [`parameters!`]), None for null;
    /// a parameter left out, or one it does not declare, is an error of the extension.
    pub fn run(&self, statement: &'static Statement, given: &[(&str, Option<Datum>)]) -> Rows {
        let plan = statement.plan();
        // Set by plan(), never freed.
        let names = unsafe { &*statement.names.load(Ordering::Relaxed) };
        if given.len() != names.len() {
            error!(
                "pg_jobs: statement {} takes {} parameters, not {}",
                statement.name,
                names.len(),
                given.len()
            );
        }
        let (mut values, mut nulls) = (
            Vec::with_capacity(names.len()),
            Vec::with_capacity(names.len()),
        );
        for name in names {
            let Some(&(_, value)) = given.iter().find(|(given, _)| given == name) else {
                error!("pg_jobs: statement {} needs ${name}", statement.name)
            };
            values.push(value.unwrap_or(Datum::from(0)));
            nulls.push(if value.is_some() { b' ' } else { b'n' } as c_char);
        }
        unsafe {
            let _planner = PlannerSettings::pin(statement.planning);
            let status =
                pg_sys::SPI_execute_plan(plan, values.as_mut_ptr(), nulls.as_ptr(), false, 0);
            if status < 0 {
                error!("pg_jobs: statement {} failed ({status})", statement.name);
            }
            Rows {
                table: pg_sys::SPI_tuptable,
                count: pg_sys::SPI_processed as usize,
                columns: Default::default(),
            }
        }
    }

    /// A text that outlives the section: a function's result made while its section is open
    /// (what is allocated inside a section goes with its SPI connection's memory).
    pub fn text(&self, text: &str) -> Datum {
        self.keep(text.into_datum().expect("a text"), pg_sys::TEXTOID)
    }

    /// A copy of a value of the section's results that outlives the section.
    pub fn keep(&self, datum: Datum, type_oid: Oid) -> Datum {
        unsafe {
            let mut length: i16 = 0;
            let mut by_value = false;
            pg_sys::get_typlenbyval(type_oid, &mut length, &mut by_value);
            pg_sys::SPI_datumTransfer(datum, by_value, c_int::from(length))
        }
    }
}

impl Drop for Section {
    fn drop(&mut self) {
        unsafe {
            pg_sys::PopOverrideSearchPath();
            if let Some((user, context)) = self.saved_user {
                pg_sys::SetUserIdAndSecContext(user, context);
            }
            // While an error unwinds, the (sub)transaction's abort closes the connection.
            if !std::thread::panicking() {
                pg_sys::SPI_finish();
            }
        }
    }
}

/// The owner and the schema of a function: one lookup of the system cache.
fn owner_and_schema(function: Oid) -> (Oid, Oid) {
    unsafe {
        let tuple = pg_sys::SearchSysCache1(
            pg_sys::SysCacheIdentifier::PROCOID as c_int,
            Datum::from(function),
        );
        if tuple.is_null() {
            error!("pg_jobs: function {function:?} is missing");
        }
        let proc = pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_proc>(tuple);
        let found = ((*proc).proowner, (*proc).pronamespace);
        pg_sys::ReleaseSysCache(tuple);
        found
    }
}

/// The rows a statement returned; valid until its section ends. At the first read of a column,
/// every row is split into its columns at once (`heap_deform_tuple`), and each read after is an
/// index: `SPI_getbinval` reads a column past a text or a jsonb by walking its row from the
/// start, at every read, and a claim's or a completion's rows are read a dozen times.
pub struct Rows {
    table: *mut pg_sys::SPITupleTable,
    count: usize,
    columns: std::cell::OnceCell<Columns>,
}

/// Every row's values and null flags, row after row, `width` of each.
struct Columns {
    width: usize,
    values: Vec<Datum>,
    nulls: Vec<bool>,
}

impl Rows {
    /// No rows: what a statement that did not need to run would have returned.
    pub fn none() -> Rows {
        Rows {
            table: std::ptr::null_mut(),
            count: 0,
            columns: Default::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    /// Column `column` (from 0) of row `row`, None for null or when there is no such row.
    pub fn datum(&self, row: usize, column: usize) -> Option<Datum> {
        if row >= self.count {
            return None;
        }
        let columns = self.columns();
        let at = row * columns.width + column;
        (column < columns.width && !columns.nulls[at]).then(|| columns.values[at])
    }

    fn columns(&self) -> &Columns {
        self.columns.get_or_init(|| unsafe {
            let descriptor = (*self.table).tupdesc;
            let width = (*descriptor).natts as usize;
            let mut columns = Columns {
                width,
                values: vec![Datum::from(0); width * self.count],
                nulls: vec![false; width * self.count],
            };
            for row in 0..self.count {
                pg_sys::heap_deform_tuple(
                    *(*self.table).vals.add(row),
                    descriptor,
                    columns.values[row * width..].as_mut_ptr(),
                    columns.nulls[row * width..].as_mut_ptr(),
                );
            }
            columns
        })
    }

    pub fn get<T: FromDatum>(&self, row: usize, column: usize) -> Option<T> {
        self.datum(row, column)
            .and_then(|datum| unsafe { T::from_datum(datum, false) })
    }

    /// Appends every row to the result of a set-returning function (see [`materialize`]).
    pub fn return_all(&self, fcinfo: pg_sys::FunctionCallInfo) {
        if self.count == 0 {
            return;
        }
        let columns = self.columns();
        for row in 0..self.count {
            let row = row * columns.width..(row + 1) * columns.width;
            return_row(fcinfo, &columns.values[row.clone()], &columns.nulls[row]);
        }
    }
}

/// Appends a row to the result of a set-returning function (see [`materialize`]).
pub fn return_row(fcinfo: pg_sys::FunctionCallInfo, values: &[Datum], nulls: &[bool]) {
    unsafe {
        let result = (*fcinfo).resultinfo.cast::<pg_sys::ReturnSetInfo>();
        // tuplestore_putvalues only reads them (its C parameters lack const).
        pg_sys::tuplestore_putvalues(
            (*result).setResult,
            (*result).setDesc,
            values.as_ptr().cast_mut(),
            nulls.as_ptr().cast_mut(),
        );
    }
}

/// The record a function with OUT parameters returns.
pub fn record(fcinfo: pg_sys::FunctionCallInfo, values: &[Option<Datum>]) -> Datum {
    unsafe {
        let mut descriptor: pg_sys::TupleDesc = std::ptr::null_mut();
        if pg_sys::get_call_result_type(fcinfo, std::ptr::null_mut(), &mut descriptor)
            != pg_sys::TypeFuncClass::TYPEFUNC_COMPOSITE
        {
            error!("pg_jobs: a record was expected");
        }
        let descriptor = pg_sys::BlessTupleDesc(descriptor);
        let mut datums: Vec<Datum> = values.iter().map(|v| v.unwrap_or(Datum::from(0))).collect();
        let mut nulls: Vec<bool> = values.iter().map(Option::is_none).collect();
        let tuple = pg_sys::heap_form_tuple(descriptor, datums.as_mut_ptr(), nulls.as_mut_ptr());
        pg_sys::HeapTupleHeaderGetDatum((*tuple).t_data)
    }
}

/// Makes a set-returning function's result a tuple store, filled with [`Rows::return_all`].
/// Called before its section begins: the store belongs to the caller's query.
pub fn materialize(fcinfo: pg_sys::FunctionCallInfo) {
    // The descriptor the caller expects: for a set of a scalar type too.
    unsafe {
        pg_sys::InitMaterializedSRF(fcinfo, pg_sys::MAT_SRF_USE_EXPECTED_DESC as pg_sys::bits32)
    };
}

/// The null result of a call.
pub fn null(fcinfo: pg_sys::FunctionCallInfo) -> Datum {
    unsafe {
        (*fcinfo).isnull = true;
    }
    Datum::from(0)
}

/// Raises an error: a SQLSTATE, a message naming the argument and the rule, a hint only when
/// it helps. Nothing of the call has been written, or it is rolled back with the statement.
pub fn refuse(code: PgSqlErrorCode, message: impl Into<String>, hint: Option<&str>) -> ! {
    refuse_with_detail(code, message, None, hint)
}

pub fn refuse_with_detail(
    code: PgSqlErrorCode,
    message: impl Into<String>,
    detail: Option<String>,
    hint: Option<&str>,
) -> ! {
    let mut report = pgrx::pg_sys::panic::ErrorReport::new(code, message.into(), "pg_jobs");
    if let Some(detail) = detail {
        report = report.set_detail(detail);
    }
    if let Some(hint) = hint {
        report = report.set_hint(hint);
    }
    report.report(PgLogLevel::ERROR);
    unreachable!("ERROR returns no control")
}

/// `invalid_parameter_value` (22023), the error of most bad arguments.
pub fn invalid(message: impl Into<String>, hint: Option<&str>) -> ! {
    refuse(
        PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
        message,
        hint,
    )
}

/// `null_value_not_allowed` (22004) for an argument that must be given.
pub fn required(name: &str) -> ! {
    refuse(
        PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
        format!("{name} must not be null"),
        None,
    )
}

/// An array argument's elements (none for a null array); one with a null element is refused
/// (`null_value_not_allowed`, 22004).
pub fn without_nulls<T>(array: Option<Vec<Option<T>>>, name: &str) -> Vec<T> {
    let elements = array.unwrap_or_default();
    if elements.iter().any(Option::is_none) {
        refuse(
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            format!("{name} must not contain null"),
            None,
        );
    }
    elements.into_iter().flatten().collect()
}

/// The hint of PostgreSQL's own lock timeout, which says only that the statement was cancelled:
/// a call's bounded wait (CALL_LOCK_WAIT_MS), or the caller's lock_timeout, ran out.
const LOCK_WAIT_HINT: &str = "Another transaction holds a row this call needs; the call changed \
                              nothing. Make it again once that transaction has ended.";

/// Runs a call's body. An error PostgreSQL raised inside one of its statements is raised again as
/// a caller would see it from SQL: its code, message, detail and hint, without the statement's
/// context (which names internal functions) and without the Rust backtrace pgrx adds to DETAIL
/// when the server runs with RUST_BACKTRACE set.
pub fn as_from_sql(body: impl FnOnce() -> Datum) -> Datum {
    use pgrx::pg_sys::panic::{CaughtError, ErrorReport};
    let payload = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(datum) => return datum,
        Err(payload) => payload,
    };
    match payload.downcast::<CaughtError>() {
        Ok(caught) => match *caught {
            CaughtError::PostgresError(raised) => {
                let mut report = ErrorReport::new(
                    raised.sql_error_code(),
                    raised.message().to_owned(),
                    "pg_jobs",
                );
                if let Some(detail) = raised.detail() {
                    report = report.set_detail(detail);
                }
                let lock_wait =
                    raised.sql_error_code() == PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE;
                if let Some(hint) = raised.hint().or(lock_wait.then_some(LOCK_WAIT_HINT)) {
                    report = report.set_hint(hint);
                }
                report.report(raised.level());
                unreachable!("ERROR returns no control")
            }
            other => std::panic::resume_unwind(Box::new(other)),
        },
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// A domain's file of named statements, planned as PostgreSQL would: defines `STATEMENTS` and
/// `statement(name)` in the module that says `named_statements!(include_str!("history.sql"));`.
#[macro_export]
macro_rules! named_statements {
    ($source:expr) => {
        const STATEMENTS: &str = $source;

        const fn statement(name: &'static str) -> $crate::api::call::Statement {
            $crate::api::call::Statement::new(
                STATEMENTS,
                name,
                $crate::api::call::Planning::Default,
            )
        }
    };
}

/// A statement's parameters by name, for [`Section::run`]: `parameters! { queue, n: Some(n) }`
/// gives `$queue` the value of `queue` and `$n` that of `Some(n)`.
#[macro_export]
macro_rules! parameters {
    ($($name:ident $(: $value:expr)?),* $(,)?) => {
        &[$((stringify!($name), $crate::parameters!(@value $name $(: $value)?))),*]
    };
    (@value $name:ident : $value:expr) => {
        $value
    };
    (@value $name:ident) => {
        $name
    };
}

/// Defines a C function of the API by the name PostgreSQL looks it up by:
/// `entry!(jobs_add, |fcinfo, arguments| body)`, where `arguments` are the call's arguments as its
/// declaration in `sql/` names and types them, and its info record comes with them (see
/// [`super::arguments`]).
#[macro_export]
macro_rules! entry {
    ($name:ident, |$fcinfo:ident, $arguments:pat_param| $body:expr) => {
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name(
            $fcinfo: ::pgrx::pg_sys::FunctionCallInfo,
        ) -> ::pgrx::pg_sys::Datum {
            unsafe {
                ::pgrx::pg_sys::submodules::panic::pgrx_extern_c_guard(|| {
                    $crate::api::call::as_from_sql(|| {
                        let $arguments = $crate::api::arguments::$name::Arguments::read($fcinfo);
                        $body
                    })
                })
            }
        }
    };
}

/// The trigger data of a C trigger function's call; refused when `name` is called otherwise.
pub unsafe fn trigger_data(
    fcinfo: pg_sys::FunctionCallInfo,
    name: &str,
) -> *mut pg_sys::TriggerData {
    let trigger = (*fcinfo).context as *mut pg_sys::TriggerData;
    if trigger.is_null() || (*trigger).type_ != pg_sys::NodeTag::T_TriggerData {
        error!("pg_jobs: {name} runs only as a trigger");
    }
    trigger
}

/// The row a trigger's call is about: the new row of an update, else the row inserted or deleted.
pub unsafe fn trigger_row(trigger: *mut pg_sys::TriggerData) -> pg_sys::HeapTuple {
    if (*trigger).tg_event & pg_sys::TRIGGER_EVENT_OPMASK == pg_sys::TRIGGER_EVENT_UPDATE {
        (*trigger).tg_newtuple
    } else {
        (*trigger).tg_trigtuple
    }
}

/// Column `name` of `row`, a row of the trigger's table; None for null.
pub unsafe fn trigger_column(
    trigger: *mut pg_sys::TriggerData,
    row: pg_sys::HeapTuple,
    name: &std::ffi::CStr,
) -> Option<Datum> {
    let columns = (*(*trigger).tg_relation).rd_att;
    let mut missing = false;
    let datum = pg_sys::heap_getattr(
        row,
        pg_sys::SPI_fnumber(columns, name.as_ptr()),
        columns,
        &mut missing,
    );
    (!missing).then_some(datum)
}

/// An error caught by [`in_subtransaction`]: its SQLSTATE and its message.
pub struct Failure {
    pub code: PgSqlErrorCode,
    pub message: String,
}

impl Failure {
    /// The failure, unless it is a cancel (a statement timeout, pg_cancel_backend), which is
    /// raised again, as a PL/pgSQL handler of OTHERS lets it through.
    pub fn unless_cancelled(self) -> Self {
        if self.code == PgSqlErrorCode::ERRCODE_QUERY_CANCELED {
            self.raise();
        }
        self
    }

    /// Raises the caught error again: its code and its message.
    pub fn raise(self) -> ! {
        refuse(self.code, self.message, None)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// How long a member's compute call waits at most for a row another identity's transaction holds
/// (a job's owner changing or cancelling it, a worker fetching or reporting, a deployment into the
/// same group, each left open as long as its session likes); then it is refused, 55P03, nothing
/// changed, to be made again.
pub const CALL_LOCK_WAIT_MS: i32 = 1000;

/// `lock_timeout` for as long as it lives, as a function's SET clause would set it (a lock waits
/// by the variable's value when it starts to wait).
pub struct LockTimeout(i32);

impl LockTimeout {
    pub fn of(milliseconds: i32) -> Self {
        let was = unsafe { pg_sys::LockTimeout };
        unsafe { pg_sys::LockTimeout = milliseconds };
        LockTimeout(was)
    }
}

impl Drop for LockTimeout {
    fn drop(&mut self) {
        unsafe { pg_sys::LockTimeout = self.0 };
    }
}

/// Runs `body` in a subtransaction, as a PL/pgSQL block with an EXCEPTION clause does: an error
/// in it rolls back what it wrote and comes back as a [`Failure`]; the caller's statements, its
/// section and its memory are as they were.
pub fn in_subtransaction<R>(body: impl FnOnce() -> R) -> Result<R, Failure> {
    let (context, owner) = unsafe { (pg_sys::CurrentMemoryContext, pg_sys::CurrentResourceOwner) };
    let back = move || unsafe {
        pg_sys::MemoryContextSwitchTo(context);
        pg_sys::CurrentResourceOwner = owner;
    };
    unsafe {
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(context);
    }
    PgTryBuilder::new(std::panic::AssertUnwindSafe(|| {
        let result = body();
        unsafe { pg_sys::ReleaseCurrentSubTransaction() };
        back();
        Ok(result)
    }))
    .catch_others(|caught| {
        back();
        unsafe { pg_sys::RollbackAndReleaseCurrentSubTransaction() };
        back();
        let code = match &caught {
            pg_sys::panic::CaughtError::PostgresError(report)
            | pg_sys::panic::CaughtError::ErrorReport(report)
            | pg_sys::panic::CaughtError::RustPanic {
                ereport: report, ..
            } => report.sql_error_code(),
        };
        Err(Failure {
            code,
            message: crate::bgworker::caught_message(caught),
        })
    })
    .execute()
}
