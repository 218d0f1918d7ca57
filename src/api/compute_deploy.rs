//! Deploying a compute job (`sql/083_compute_work.sql`): `compute_deploy`, which checks a
//! deployment, takes its groups' fees and job budgets and makes the job and its slices; and the
//! slices' copies, which `compute_add_slices` adds too. Statements in `compute_deploy.sql`.

use pg_jobs_core::compute::{self, job_flag, CAPABILITY_NAMES, DEPLOYABLE_JOB_FLAG_NAMES};
use pg_jobs_core::literal::{is_numeric, uuid_bytes};
use pgrx::pg_sys::{self, Datum, FLOAT8OID, JSONBOID, NUMERICOID, UUIDOID};
use pgrx::prelude::*;
use pgrx::{IntoDatum, JsonB, Uuid};
use serde_json::Value;

use super::call::{invalid, refuse, Caller, LockTimeout, Section, Statement, CALL_LOCK_WAIT_MS};
use super::compute_origins::{check_contacts, contacts_of_values, origin_of, Contact};
use super::compute_settings::join_check;
use super::datum::{int8_array, output, quote_literal, text_of};
use crate::{entry, gucs, named_statements, parameters};

named_statements!(include_str!("compute_deploy.sql"));

static NUMBERS: Statement = statement("numbers");
static VALUES: Statement = statement("values");
static RANGE_TEXTS: Statement = statement("range_texts");
static RANGE_SLICES: Statement = statement("range_slices");
static PATTERN: Statement = statement("pattern");
static MARKET_SCALE: Statement = statement("market_scale");
static GROUP: Statement = statement("group");
static FEES: Statement = statement("fees");
static TAKE_JOB_BUDGET: Statement = statement("take_job_budget");
static ADD_JOB: Statement = statement("add_job");
static ADD_COMPUTE_JOB: Statement = statement("add_compute_job");
static ADD_JOB_PARTS: Statement = statement("add_job_parts");
static ADD_VALUES: Statement = statement("add_values");
static ADD_COPIES: Statement = statement("add_copies");
static SLICES_TABLE: Statement = statement("slices_table");
static ANALYZE_SLICES: Statement = statement("analyze_slices");

/// The keys a deployment may have.
const KNOWN_KEYS: [&str; 24] = [
    "work",
    "dependencies",
    "require_path",
    "module_path",
    "arguments",
    "input",
    "name",
    "description",
    "link",
    "listed",
    "groups",
    "max_slices_per_task",
    "offer",
    "market_value",
    "funds",
    "payment_account",
    "duplication_level",
    "duplication_type",
    "capabilities",
    "worktime",
    "worktime_version",
    "flags",
    "estimation_slices",
    "result_storage",
];

/// The bits of `names` (a JSON array of names, null for none), bit n for the n-th of `known`;
/// `what` names them in a refusal, whose hint lists the known ones and ends with `note`.
fn name_bits(names: Option<&Value>, known: &[&str], what: &str, note: &str) -> i32 {
    let hint = format!("Known: {}{note}.", known.join(", "));
    let names = match names {
        None | Some(Value::Null) => return 0,
        Some(Value::Array(names)) => names,
        Some(_) => invalid(format!("the {what} names must be an array"), Some(&hint)),
    };
    names.iter().fold(0, |bits, name| {
        let name = text_of(name).unwrap_or_else(|| "null".into());
        match known.iter().position(|known| *known == name) {
            Some(bit) => bits | 1 << bit,
            None => invalid(
                format!("unknown {what} {}", quote_literal(&name)),
                Some(&hint),
            ),
        }
    })
}

/// The capability bits of `names` (see [`name_bits`]).
pub(super) fn capability_bits(names: Option<&Value>) -> i32 {
    name_bits(names, &CAPABILITY_NAMES, "capability", "")
}

/// The groups a deployment names, each checked: the caller's own group, or (a group whose
/// deploy_access is join) one whose join key and secret it gives. Anything else gets one error,
/// whether the group exists or not.
fn deploy_groups(section: &Section, caller: &Caller, groups: Option<&Value>) -> Vec<i64> {
    let entries = match groups {
        Some(Value::Array(entries)) if !entries.is_empty() => entries,
        _ => invalid(
            "a compute job needs at least one compute group",
            Some("groups: [\"<group opaque id>\"] for your own groups, [{\"group\": ..., \"join_key\": ..., \"secret\": ...}] for others."),
        ),
    };
    entries
        .iter()
        .map(|entry| {
            let field = |name: &str| entry.get(name).and_then(text_of);
            let named = field("group").or_else(|| text_of(entry));
            let wanted = named.as_deref().map(|named| {
                uuid_bytes(named).map(Uuid::from_bytes).unwrap_or_else(|| {
                    invalid(format!("{} does not name a compute group by its opaque id", jsonb_text(entry)), None)
                })
            });
            let wanted_datum = wanted.map(|wanted| wanted.into_datum().expect("a uuid"));
            let shown = wanted_datum.map_or_else(String::new, |wanted| output(wanted, UUIDOID));
            let group = section.run(&GROUP, parameters! { opaque_id: wanted_datum });
            let text = |name: &str| field(name).map(|text| section.text(&text));
            let admitted = group.get::<i64>(0, 0).filter(|_| {
                group.get::<pg_sys::Oid>(0, 1) == Some(caller.identity)
                    || group.get::<bool>(0, 2) == Some(true)
                        && join_check(section, caller.identity, wanted_datum, text("join_key"), text("secret"))
                            .is_some()
            });
            // Said only to whom may deploy into it, as its existence is.
            if admitted.is_some() && group.get::<bool>(0, 3) != Some(true) {
                refuse(
                    PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
                    format!("compute group {shown} is being changed by its owner"),
                    Some("Deploy again when its owner's transaction has ended."),
                );
            }
            admitted.unwrap_or_else(|| {
                refuse(
                    PgSqlErrorCode::ERRCODE_INVALID_PASSWORD,
                    format!("compute group {shown} does not exist or does not take your deployments"),
                    Some("Deploy into your own groups, or give the join key and secret of a group that lets members deploy."),
                )
            })
        })
        .collect()
}

/// A JSON value as jsonb prints it.
fn jsonb_text(value: &Value) -> String {
    output(
        JsonB(value.clone()).into_datum().expect("a jsonb"),
        JSONBOID,
    )
}

/// Refuses a call that would add more than `pg_jobs.compute_max_slices` slices.
pub(super) fn check_slice_count(count: i64) {
    let most = gucs::COMPUTE_MAX_SLICES.get();
    if count > i64::from(most) {
        refuse(
            PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("{count} slices in one call are more than pg_jobs.compute_max_slices ({most})"),
            Some("Deploy the job open and add the rest with compute_add_slices, a part a call, or ask a superuser to raise the setting."),
        );
    }
}

/// Adds the copies of job `job`'s (of identity `owner`) `count` slices from slice `first` on, with
/// their `values` (a JSON array) for a job of values.
pub(super) fn add_copies(
    section: &Section,
    job: i64,
    owner: pg_sys::Oid,
    first: i64,
    count: i32,
    values: Option<Datum>,
) {
    let (job, owner, first) = (
        Some(Datum::from(job)),
        Some(Datum::from(owner)),
        Some(Datum::from(first)),
    );
    if values.is_some() {
        section.run(
            &ADD_VALUES,
            parameters! { job, owner, first_slice: first, values },
        );
    }
    section.run(
        &ADD_COPIES,
        parameters! { job, owner, first_slice: first, count: Some(Datum::from(count)) },
    );
    // Planned from statistics that had not seen these rows, fetches scanned every copy of a large
    // job until autovacuum analyzed the table (seconds a fetch with 300,000 slices). Not where
    // the table's ANALYZE lock is held: another identity's deployment in a transaction left open
    // holds it until that ends, and this one waited for it; autovacuum then analyzes.
    if count >= 10_000 {
        let table: pg_sys::Oid = section
            .run(&SLICES_TABLE, &[])
            .get(0, 0)
            .expect("the slices' table");
        let free = unsafe {
            pg_sys::ConditionalLockRelationOid(table, pg_sys::ShareUpdateExclusiveLock as i32)
        };
        if free {
            section.run(&ANALYZE_SLICES, &[]);
        }
    }
}

/// What a deployment's input set is.
struct InputSet {
    storage_type: &'static str,
    /// As kept in `data_storage_details`: none for a list of values.
    details: Option<String>,
    /// None when a range lacks its start or end.
    slices: Option<i64>,
    values: Option<Datum>,
}

fn input_set(section: &Section, spec: Datum, input: Option<&Value>) -> InputSet {
    let has = |key: &str| input.is_some_and(|input| input.get(key).is_some());
    if has("range") {
        let range = section.run(&RANGE_TEXTS, parameters! { spec: Some(spec) });
        let texts: Vec<Option<String>> = (0..3)
            .map(|column| range.get::<String>(0, column))
            .collect();
        let range_text = range.get::<String>(0, 3).unwrap_or_default();
        if texts.iter().flatten().any(|text| !is_numeric(text)) {
            invalid(format!("a range is numbers: {range_text}"), None);
        }
        let text = |column: usize| texts[column].as_deref().map(|text| section.text(text));
        let counted = section.run(
            &RANGE_SLICES,
            parameters! { start: text(0), end: text(1), step: text(2) },
        );
        if counted.get::<bool>(0, 0) == Some(false) {
            invalid(
                "a range's start and end must be finite numbers from -1e15 to 1e15, and its step a positive one",
                Some("NaN and Infinity are not numbers of a range."),
            );
        }
        let slices = counted.get::<i64>(0, 1);
        if slices.is_some_and(|slices| slices > i64::from(i32::MAX)) {
            invalid("a range gives at most 2147483647 slices", None);
        }
        InputSet {
            storage_type: "range",
            details: Some(range_text),
            slices,
            values: None,
        }
    } else if has("pattern") {
        let pattern = section.run(&PATTERN, parameters! { spec: Some(spec) });
        if pattern.get::<bool>(0, 2) == Some(false) {
            invalid(
                "a URL pattern must contain {slice}",
                Some("For example https://data.example/{slice}.json."),
            );
        }
        InputSet {
            storage_type: "pattern",
            details: pattern.get::<String>(0, 0),
            slices: pattern.get::<i32>(0, 1).map(i64::from),
            values: None,
        }
    } else if let Some(Value::Array(values)) = input.and_then(|input| input.get("values")) {
        InputSet {
            storage_type: "values",
            details: None,
            slices: Some(values.len() as i64),
            values: section
                .run(&VALUES, parameters! { spec: Some(spec) })
                .datum(0, 0),
        }
    } else {
        invalid(
            "the input set must be a range, a URL pattern or a list of values",
            Some("input: {\"range\": {\"start\": 1, \"end\": 100}}, {\"pattern\": \"https://.../{slice}\", \"count\": 100} or {\"values\": [...]}."),
        )
    }
}

/// Where a deployment's results go: `None` for the database (`compute_results`, with larger
/// ones in `result_store`); otherwise a URL pattern the workers POST each result to, with the
/// parameters they send beside it (the README: Result storage).
struct ResultStorage {
    pattern: String,
    params: Option<Value>,
    /// The pattern's origin, which each of the job's groups must let its workers send results to.
    origin: String,
}

/// The longest result URL pattern and the most bytes of its parameters.
const RESULT_PATTERN_BYTES: usize = 2048;
const RESULT_PARAMS_BYTES: usize = 8192;

fn result_storage(value: Option<&Value>, copies: bool) -> Option<ResultStorage> {
    const HINT: &str = "result_storage: {\"url\": \"https://results.example/{slice}/{copy}\", \"params\": {...}}, or leave it out to keep results in the database.";
    let fields = match value {
        None | Some(Value::Null) => return None,
        Some(Value::Object(fields)) => fields,
        Some(_) => invalid("result_storage must be an object", Some(HINT)),
    };
    if let Some(unknown) = fields
        .keys()
        .find(|key| !["url", "params"].contains(&key.as_str()))
    {
        invalid(
            format!("unknown key {} in result_storage", quote_literal(unknown)),
            Some(HINT),
        );
    }
    let Some(Value::String(pattern)) = fields.get("url") else {
        invalid("result_storage needs its url, a text", Some(HINT))
    };
    if pattern.len() > RESULT_PATTERN_BYTES {
        invalid(
            format!(
                "a result storage URL has at most {RESULT_PATTERN_BYTES} bytes, not {}",
                pattern.len()
            ),
            None,
        );
    }
    if !pattern.contains("{slice}") || copies && !pattern.contains("{copy}") {
        invalid(
            format!("the result storage URL {} must contain {{slice}}{}", quote_literal(pattern), if copies { " and {copy}" } else { "" }),
            Some("Each result has an address of its own: {slice} is its slice's number and {copy} its copy's (needed when a slice is sent more than once)."),
        );
    }
    // Parsed with its placeholders filled in, as a worker's POST goes.
    let url = url::Url::parse(&pattern.replace("{slice}", "1").replace("{copy}", "0"))
        .ok()
        .filter(|url| ["http", "https"].contains(&url.scheme()) && url.has_host())
        .unwrap_or_else(|| {
            invalid(
                format!(
                    "the result storage URL {} is not an http or https URL",
                    quote_literal(pattern)
                ),
                Some(HINT),
            )
        });
    if !url.username().is_empty() || url.password().is_some() || url.fragment().is_some() {
        invalid(
            format!("the result storage URL {} may carry neither credentials nor a fragment", quote_literal(pattern)),
            Some("Give what the result store needs to accept a POST in params: the workers send them with each result."),
        );
    }
    let params = fields.get("params").filter(|params| !params.is_null());
    match params {
        None => {}
        Some(Value::Object(params)) if params.contains_key("result") => invalid(
            "result_storage params may not name \"result\"",
            Some("The workers send each result under that name beside the parameters."),
        ),
        Some(Value::Object(_))
            if params.map_or(0, |params| params.to_string().len()) <= RESULT_PARAMS_BYTES => {}
        Some(Value::Object(_)) => invalid(
            format!("result_storage params have at most {RESULT_PARAMS_BYTES} bytes as JSON"),
            None,
        ),
        Some(_) => invalid("result_storage params must be an object", Some(HINT)),
    }
    Some(ResultStorage {
        pattern: pattern.clone(),
        params: params.cloned(),
        origin: url.origin().ascii_serialization(),
    })
}

// compute_deploy(spec): the caller's compute job of many slices in the compute groups `spec`
// names (the README lists its keys), its fees taken off its funds and a job off each group's job
// budget; its id.
entry!(compute_deploy, |fcinfo, arguments| {
    let _bounded = LockTimeout::of(CALL_LOCK_WAIT_MS);
    let caller = Caller::current();
    let spec_datum = arguments.spec.datum();
    let spec = arguments.spec.get();
    let section = Section::as_owner(fcinfo);
    let numbers = section.run(&NUMBERS, parameters! { spec: spec_datum });
    let level: f64 = numbers.get(0, 0).expect("a duplication level");
    let (offer, multiplier) = (numbers.datum(0, 1), numbers.datum(0, 2));
    let funds = numbers.datum(0, 3).expect("funds");
    let per_task: i32 = numbers.get(0, 4).expect("a largest task");
    let estimation: i32 = numbers.get(0, 5).expect("estimation slices");
    let (Some(spec_datum), Some(JsonB(Value::Object(fields)))) = (spec_datum, spec.as_ref()) else {
        invalid(
            "a deployment is a JSON object",
            Some("See compute_deploy in the README."),
        )
    };
    // The first unknown key in jsonb's order of keys (shorter first), as a refusal named it when
    // the deployment was read in SQL.
    if let Some(unknown) = fields
        .keys()
        .filter(|key| !KNOWN_KEYS.contains(&key.as_str()))
        .min_by_key(|key| (key.len(), key.as_bytes()))
    {
        invalid(
            format!("unknown key {} in the deployment", quote_literal(unknown)),
            Some(&format!("Known keys: {}.", KNOWN_KEYS.join(", "))),
        );
    }
    let text = |name: &str| fields.get(name).and_then(text_of);
    if text("work").unwrap_or_default().is_empty() {
        invalid(
            "a compute job needs its work function",
            Some("work: the function as text, a data: URI or a URL to it."),
        );
    }
    let input = input_set(&section, spec_datum, fields.get("input"));
    let flags = name_bits(
        fields.get("flags"),
        DEPLOYABLE_JOB_FLAG_NAMES,
        "flag",
        " (nsf is set by the scheduler)",
    );
    let slices = input.slices.unwrap_or(0);
    if slices < 1 && !(flags & job_flag::OPEN != 0 && input.storage_type == "values") {
        invalid(
            "the input set is empty",
            Some("A job needs at least one slice; an open job may start with none and get more with compute_add_slices."),
        );
    }
    check_slice_count(slices);
    // Not a range that holds NaN.
    if !(1.0..=10.0).contains(&level) {
        invalid(
            format!(
                "duplication_level must be between 1 and 10, not {}",
                output(level.into_datum().expect("a float8"), FLOAT8OID)
            ),
            Some("1.0 sends each slice once, 2.0 twice, 1.5 half of them twice."),
        );
    }
    let duplication_type = text("duplication_type").unwrap_or_else(|| "race".into());
    if !["race", "consensus"].contains(&duplication_type.as_str()) {
        invalid(
            format!(
                "unknown duplication_type {}",
                quote_literal(&duplication_type)
            ),
            Some("Use race or consensus."),
        );
    }
    if offer.is_some() == multiplier.is_some() {
        invalid(
            "give either offer (DCC per slice) or market_value (a multiplier of compute_market_value())",
            None,
        );
    }
    if let Some(multiplier) = multiplier {
        if section
            .run(
                &MARKET_SCALE,
                parameters! { market_value: Some(multiplier) },
            )
            .get::<bool>(0, 0)
            == Some(true)
        {
            invalid(
                format!(
                    "market_value {} makes a slice payment of more than 18 decimals",
                    output(multiplier, NUMERICOID)
                ),
                Some("The smallest unit is 1e-18 DCC: give market_value with at most 15 decimals."),
            );
        }
    }
    if per_task < 1 {
        invalid(
            format!("max_slices_per_task must be at least 1, not {per_task}"),
            None,
        );
    }
    if estimation < 0 {
        invalid(
            format!("estimation_slices must not be negative, not {estimation}"),
            None,
        );
    }
    let versions = text("worktime_version").unwrap_or_else(|| "*".into());
    if !compute::worktime_range_ok(&versions) {
        invalid(
            format!(
                "worktime_version {} is not a version range",
                quote_literal(&versions)
            ),
            Some("For example ^1.0.0, ~0.23 or >=1, <2."),
        );
    }
    let capabilities = capability_bits(fields.get("capabilities"));
    let results = result_storage(fields.get("result_storage"), level > 1.0);
    let groups = Some(int8_array(deploy_groups(
        &section,
        &caller,
        fields.get("groups"),
    )));
    // What the workers contact: the work function, the arguments, the data (a pattern's or the
    // values') and where the results go, refused in that order.
    let work = text("work").and_then(|work| origin_of(&work));
    let given_input = fields.get("input");
    let pattern = match given_input.and_then(|input| input.get("pattern")) {
        Some(Value::String(pattern)) => origin_of(&pattern.replace("{slice}", "1")),
        _ => None,
    };
    check_contacts(
        &section,
        groups,
        work.map(|origin| (Contact::WorkFunction, origin))
            .into_iter()
            .chain(pattern.map(|origin| (Contact::Data, origin)))
            .chain(contacts_of_values(
                Contact::Argument,
                fields.get("arguments"),
            ))
            .chain(contacts_of_values(
                Contact::Data,
                given_input.and_then(|input| input.get("values")),
            ))
            .chain(
                results
                    .as_ref()
                    .map(|results| (Contact::Results, results.origin.clone())),
            ),
    );
    let fees = section.run(&FEES, parameters! { groups, funds: Some(funds) });
    let fee = fees.datum(0, 0);
    if fees.get::<bool>(0, 1) == Some(true) {
        refuse(
            PgSqlErrorCode::ERRCODE_CHECK_VIOLATION,
            format!(
                "the funds ({} DCC) do not cover the groups' fees ({} DCC)",
                output(funds, NUMERICOID),
                output(fee.expect("fees"), NUMERICOID)
            ),
            Some("Fund the job with at least the fees and what its slices are to be paid."),
        );
    }
    if section
        .run(&TAKE_JOB_BUDGET, parameters! { groups })
        .get::<bool>(0, 0)
        == Some(true)
    {
        refuse(
            PgSqlErrorCode::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            "a compute group named has no jobs left in its budget",
            Some("Its owner grants it more jobs (compute_group_budget)."),
        );
    }
    let owner = Some(Datum::from(caller.identity));
    let spec = Some(spec_datum);
    let job: i64 = section
        .run(&ADD_JOB, parameters! { owner, spec })
        .get(0, 0)
        .expect("the job's id");
    let id = Some(Datum::from(job));
    // At most 2147483647 (a range's count is checked, a pattern's is an integer).
    let slices = Some(Datum::from(slices as i32));
    let texts = |value: &str| Some(section.text(value));
    section.run(
        &ADD_COMPUTE_JOB,
        parameters! {
            job: id,
            owner,
            spec,
            slices,
            max_slices_per_task: Some(Datum::from(per_task)),
            offer,
            market_value: multiplier,
            duplication_level: level.into_datum(),
            duplication_type: texts(&duplication_type),
            flags: Some(Datum::from(flags)),
            capabilities: Some(Datum::from(capabilities)),
            data_storage_type: texts(input.storage_type),
            data_storage_details: input.details.as_deref().and_then(texts),
            worktime_version: texts(&versions),
            funds: Some(funds),
            fees: fee,
            estimation_slices: Some(Datum::from(estimation)),
            result_url: results.as_ref().and_then(|results| texts(&results.pattern)),
            result_params: results
                .and_then(|results| results.params)
                .and_then(|params| JsonB(params).into_datum()),
        },
    );
    section.run(
        &ADD_JOB_PARTS,
        parameters! {
            job: id,
            owner,
            spec,
            estimation_slices: Some(Datum::from(estimation)),
            slices,
            fees: fee,
            groups,
        },
    );
    add_copies(
        &section,
        job,
        caller.identity,
        1,
        input.slices.unwrap_or(0) as i32,
        input.values,
    );
    Datum::from(job)
});
