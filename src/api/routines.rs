//! Routine schedules (`sql/087_routines.sql`): the public functions of owners, watchers and
//! routines (statements in `routines.sql`), and the scheduler's round as a service. The rules of
//! `pg_jobs_core::routine` that the SQL calls are in `routine_rules.rs`.
//!
//! A function that edits a definition (create, put, remove, import, export, drop, grant, revoke)
//! acts on the caller's own schedule of that name; one that watches or commands (reload, mode,
//! set_mode, restart, stop) takes, when the caller has none of that name, the one schedule of
//! that name granted to it. OWNER/NAME names another's schedule (two granted ones of one name
//! must be named so).

use pg_jobs_core::routine;
use pgrx::pg_sys::{self, Datum, Oid, JSONBOID};
use pgrx::prelude::*;
use pgrx::{IntoDatum, JsonB};
use serde_json::{json, Value};

use super::arguments::Arg;
use super::call::{invalid, materialize, refuse, required, Caller, Section, Statement};
use super::datum::{input, literal_or_null, quote_literal, text_of};
use super::identity::_is_admin;
use super::routine_rounds::post;
use super::routine_rules::{csv, csv_rows, level_ok, problem};
use super::schedules::{_wake_launcher, time_zone_problem};
use super::services::{wished, Service};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("routines.sql"));

static NEXT_LOOK: Statement = statement("next_look");
static NAMED_OWNER: Statement = statement("named_owner");
static NAME_OK: Statement = statement("name_ok");
static FIND: Statement = statement("find");
static OWN_SCHEDULE: Statement = statement("own_schedule");
static MAKE_SCHEDULE: Statement = statement("make_schedule");
static WATCHED_ELSEWHERE: Statement = statement("watched_elsewhere");
static LOCK_SCHEDULE: Statement = statement("lock_schedule");
static SET_TIME_ZONE: Statement = statement("set_time_zone");
static FIRST_SEQ: Statement = statement("first_seq");
static CLEAR_DEFINITION: Statement = statement("clear_definition");
static WRITE_ROUTINE: Statement = statement("write_routine");
static MISSING_DEPENDENCY: Statement = statement("missing_dependency");
static DEPENDENCIES: Statement = statement("dependencies");
static COUNT_ROUTINES: Statement = statement("count_routines");
static DEPENDENT: Statement = statement("dependent");
static REMOVE_ROUTINE: Statement = statement("remove_routine");
static DEFINITION: Statement = statement("definition");
static DROP_SCHEDULE: Statement = statement("drop_schedule");
static MAY_GRANT: Statement = statement("may_grant");
static SET_OPERATOR: Statement = statement("set_operator");
static ASK_RELOAD: Statement = statement("ask_reload");
static MODE: Statement = statement("mode");
static SET_MODE: Statement = statement("set_mode");
static MESSAGE: Statement = statement("message");
static COMMANDED: Statement = statement("commanded");
static LOG_COMMAND: Statement = statement("log_command");
static RESTART_ASKED: Statement = statement("restart_asked");
static STOP_ASKED: Statement = statement("stop_asked");
static GROUPS: Statement = statement("groups");

/// The routine schedules' scheduler (routine_rounds.rs).
pub(crate) static ROUTINES: Service = Service {
    name: "routines",
    work: |section, at| super::routine_rounds::tick(section, at),
    next: |section, at| wished(section, &NEXT_LOOK, parameters! { at: Some(at) }),
};

/// A schedule a call acts on: its id, and its name as it was given.
struct Schedule {
    id: Datum,
    name: String,
}

/// The schedule named `name` that the caller may watch (its own first), or None. Two granted
/// ones of that name, and none of its own, must be named as OWNER/NAME.
fn find(section: &Section, caller: &Caller, name: &str) -> Option<(Datum, Oid)> {
    let found = section.run(
        &FIND,
        parameters! { role: Some(Datum::from(caller.role)), schedule: name.into_datum() },
    );
    let owner = |row| found.get::<Oid>(row, 1).expect("an owner");
    if found.len() > 1 && owner(0) != caller.identity {
        let names: Vec<String> = (0..found.len())
            .map(|row| found.get::<String>(row, 2).expect("a name"))
            .collect();
        invalid(
            format!("{name} names {} schedules granted to you", found.len()),
            Some(&format!("Name one as OWNER/NAME: {}.", names.join(" or "))),
        );
    }
    Some((found.datum(0, 0)?, owner(0)))
}

/// The schedule the caller edits: its own of that name (OWNER/NAME: an administrator's way to
/// name another's), made if it does not exist yet and `make`; locked.
fn own(section: &Section, caller: &Caller, name: &str, make: bool) -> Schedule {
    let named_owner = section
        .run(&NAMED_OWNER, parameters! { schedule: name.into_datum() })
        .get::<Oid>(0, 0);
    let look = || match named_owner {
        None => {
            let own = section.run(
                &OWN_SCHEDULE,
                parameters! {
                    owner: Some(Datum::from(caller.identity)),
                    schedule: name.into_datum(),
                },
            );
            own.datum(0, 0).map(|id| (id, caller.identity))
        }
        Some(_) => find(section, caller, name),
    };
    let mut found = look();
    if found.is_none() && make && named_owner.is_none() {
        let name_ok = section.run(&NAME_OK, parameters! { schedule: name.into_datum() });
        if name_ok.get::<bool>(0, 0) != Some(true) {
            invalid(
                format!("invalid schedule name {}", quote_literal(name)),
                Some(
                    "A schedule's name is up to 63 letters, digits, _ . and -, for example MASTER.",
                ),
            );
        }
        section.run(
            &MAKE_SCHEDULE,
            parameters! { owner: Some(Datum::from(caller.identity)), schedule: name.into_datum() },
        );
        found = look();
        _wake_launcher();
    }
    let Some((id, owner)) = found else {
        let elsewhere = named_owner.is_none()
            && section
                .run(
                    &WATCHED_ELSEWHERE,
                    parameters! {
                        role: Some(Datum::from(caller.role)),
                        schedule: name.into_datum(),
                    },
                )
                .get::<bool>(0, 0)
                == Some(true);
        if elsewhere {
            refuse(
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!("only the owner of schedule {name} edits it"),
                Some("Names are each owner's own: routines_put and routines_import make a schedule of yours of that name."),
            );
        }
        refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!("no schedule {name}"),
            Some("See pgjobs.routine_schedule_list."),
        )
    };
    if owner != caller.identity && !_is_admin(caller.role) {
        refuse(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("only the owner of schedule {name} edits it"),
            None,
        );
    }
    section.run(&LOCK_SCHEDULE, parameters! { schedule_id: Some(id) });
    Schedule {
        id,
        name: name.to_string(),
    }
}

/// The schedule the caller watches or commands.
fn watched(section: &Section, caller: &Caller, name: &str) -> Schedule {
    match find(section, caller, name) {
        Some((id, _)) => Schedule {
            id,
            name: name.to_string(),
        },
        None => refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!("no schedule {name}"),
            Some("See pgjobs.routine_schedule_list for the schedules you may watch."),
        ),
    }
}

/// Writes routines into a schedule's definition (rows of text fields: routine, group, external,
/// realtime, runtimes, args, dependencies, computer, seq, command), replacing all of it or adding
/// to it, then checks the whole; returns how many routines it has.
fn write(section: &Section, schedule: &Schedule, rows: &[Value], replace_all: bool) -> i32 {
    let stored_name = section
        .run(
            &LOCK_SCHEDULE,
            parameters! { schedule_id: Some(schedule.id) },
        )
        .get::<String>(0, 1)
        .expect("the schedule's name");
    if replace_all {
        section.run(
            &CLEAR_DEFINITION,
            parameters! { schedule_id: Some(schedule.id) },
        );
    }
    let mut next_seq = section
        .run(&FIRST_SEQ, parameters! { schedule_id: Some(schedule.id) })
        .get::<i32>(0, 0)
        .unwrap_or(0);
    for row in rows {
        let field = |key: &str| row.get(key).and_then(text_of);
        let realtime = row.get("realtime").and_then(Value::as_bool);
        if let Some(problem) = problem(
            field("routine").as_deref(),
            field("runtimes").as_deref(),
            field("args").as_deref(),
            realtime,
        ) {
            invalid(
                problem,
                Some("A routine is user@COMPUTER:path; runtimes are HH:MM, separated by commas."),
            );
        }
        let given = section
            .run(
                &WRITE_ROUTINE,
                parameters! {
                    schedule_id: Some(schedule.id),
                    fields: Some(input(row.to_string(), JSONBOID)),
                    last_seq: Some(Datum::from(next_seq)),
                },
            )
            .get::<i32>(0, 0);
        next_seq = next_seq.max(given.unwrap_or(next_seq + 1));
    }
    let missing = section.run(
        &MISSING_DEPENDENCY,
        parameters! { schedule_id: Some(schedule.id), schedule: stored_name.as_str().into_datum() },
    );
    if let Some(problem) = missing.get::<String>(0, 0) {
        refuse(
            PgSqlErrorCode::ERRCODE_FOREIGN_KEY_VIOLATION,
            problem,
            Some("A dependency names another routine of the same schedule."),
        );
    }
    let edges = section.run(
        &DEPENDENCIES,
        parameters! { schedule_id: Some(schedule.id) },
    );
    let routines: Vec<String> = edges.get(0, 0).unwrap_or_default();
    let dependencies: Vec<String> = edges.get(0, 1).unwrap_or_default();
    let edges: Vec<(String, String)> = routines.into_iter().zip(dependencies).collect();
    if let Some(path) = routine::dependency_cycle(&edges) {
        invalid(
            format!(
                "dependency cycle in schedule {stored_name}: {}",
                path.join(" → ")
            ),
            Some("Remove one of these dependencies."),
        );
    }
    count_routines(section, schedule)
}

fn count_routines(section: &Section, schedule: &Schedule) -> i32 {
    section
        .run(
            &COUNT_ROUTINES,
            parameters! { schedule_id: Some(schedule.id) },
        )
        .get::<i32>(0, 0)
        .unwrap_or(0)
}

entry!(routines_create, |fcinfo, arguments| {
    let caller = Caller::current();
    let time_zone: Option<String> = arguments.time_zone.get();
    if let Some(problem) = time_zone_problem(time_zone.as_deref().unwrap_or("")) {
        invalid(
            format!(
                "unknown time zone {}: {problem}",
                literal_or_null(time_zone.as_deref())
            ),
            Some("Name an IANA time zone, for example Europe/Paris, or UTC."),
        );
    }
    let section = Section::as_owner(fcinfo);
    let schedule = own(&section, &caller, &arguments.schedule.required(), true);
    section.run(
        &SET_TIME_ZONE,
        parameters! { schedule_id: Some(schedule.id), time_zone: arguments.time_zone.datum() },
    );
    _wake_launcher();
    Datum::from(0)
});

// routines_put(schedule, routine, group_name, realtime, runtimes, args, dependencies, computer,
// seq, external, command)
entry!(routines_put, |fcinfo, arguments| {
    let caller = Caller::current();
    let a = &arguments;
    let row = json!({
        "routine": a.routine.get(), "group": a.group_name.get(), "realtime": a.realtime.get(),
        "runtimes": a.runtimes.get(), "args": a.args.get(), "dependencies": a.dependencies.get(),
        "computer": a.computer.get(), "seq": a.seq.get(), "external": a.external.get(),
        "command": a.command.get(),
    });
    let section = Section::as_owner(fcinfo);
    let schedule = own(&section, &caller, &arguments.schedule.required(), true);
    Datum::from(write(&section, &schedule, &[row], false))
});

entry!(routines_remove, |fcinfo, arguments| {
    let caller = Caller::current();
    let routine = arguments.routine.get().unwrap_or_default();
    let section = Section::as_owner(fcinfo);
    let schedule = own(&section, &caller, &arguments.schedule.required(), false);
    let dependent = section.run(
        &DEPENDENT,
        parameters! { schedule_id: Some(schedule.id), routine: arguments.routine.datum() },
    );
    if let Some(dependent) = dependent.get::<String>(0, 0) {
        refuse(
            PgSqlErrorCode::ERRCODE_FOREIGN_KEY_VIOLATION,
            format!(
                "routine {dependent} of schedule {} depends on {routine}",
                schedule.name
            ),
            Some("Remove that dependency first (routines_put)."),
        );
    }
    let removed = section.run(
        &REMOVE_ROUTINE,
        parameters! { schedule_id: Some(schedule.id), routine: arguments.routine.datum() },
    );
    if removed.len() == 0 {
        refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!("schedule {} lists no routine {routine}", schedule.name),
            None,
        );
    }
    Datum::from(count_routines(&section, &schedule))
});

entry!(routines_import, |fcinfo, arguments| {
    let caller = Caller::current();
    let name = arguments.schedule.required();
    let text = arguments.csv.required();
    let section = Section::as_owner(fcinfo);
    let schedule = own(&section, &caller, &name, true);
    Datum::from(write(&section, &schedule, &csv_rows(&text), true))
});

entry!(routines_export, |fcinfo, arguments| {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let schedule = own(&section, &caller, &arguments.schedule.required(), false);
    let rows = section
        .run(&DEFINITION, parameters! { schedule_id: Some(schedule.id) })
        .get::<JsonB>(0, 0)
        .unwrap_or(JsonB(Value::Array(Vec::new())));
    section.text(&csv(rows))
});

entry!(routines_drop, |fcinfo, arguments| {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let schedule = own(&section, &caller, &arguments.schedule.required(), false);
    section.run(
        &DROP_SCHEDULE,
        parameters! { schedule_id: Some(schedule.id) },
    );
    Datum::from(0)
});

/// A grant puts the schedule on the page of the role's members and lets them command it: only
/// to a role the granter belongs to, not into anyone else's hands, and not to the extension's
/// roles, which every member (or agent) belongs to.
fn grant(
    fcinfo: pg_sys::FunctionCallInfo,
    schedule: Arg<String>,
    role: Arg<Oid>,
    granted: bool,
) -> Datum {
    let caller = Caller::current();
    let name = schedule.required();
    let role = role.required();
    let section = Section::as_owner(fcinfo);
    let schedule = own(&section, &caller, &name, false);
    if granted {
        let may = section.run(
            &MAY_GRANT,
            parameters! { role: Some(Datum::from(caller.role)), grantee: Some(Datum::from(role)) },
        );
        let member = may.get::<bool>(0, 0) == Some(true);
        if !member || may.get::<bool>(0, 1) == Some(true) {
            refuse(
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!(
                    "cannot grant schedule {name} to {}: {}",
                    super::datum::output(Datum::from(role), pg_sys::REGROLEOID),
                    if member {
                        "every member of pg_jobs is in it"
                    } else {
                        "you are not a member of it"
                    }
                ),
                Some("Grant a schedule to a team's role you are a member of; its members then watch and command it."),
            );
        }
    }
    section.run(
        &SET_OPERATOR,
        parameters! {
            schedule_id: Some(schedule.id),
            grantee: Some(Datum::from(role)),
            granted: Some(Datum::from(granted)),
        },
    );
    Datum::from(0)
}

entry!(routines_grant, |fcinfo, arguments| grant(
    fcinfo,
    arguments.schedule,
    arguments.role,
    true
));
entry!(routines_revoke, |fcinfo, arguments| grant(
    fcinfo,
    arguments.schedule,
    arguments.role,
    false
));

entry!(routines_reload, |fcinfo, arguments| {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let schedule = watched(&section, &caller, &arguments.schedule.required());
    section.run(&ASK_RELOAD, parameters! { schedule_id: Some(schedule.id) });
    _wake_launcher();
    Datum::from(0)
});

/// A schedule's switch: what was asked, by whom, when, and what the scheduler says it does.
fn return_mode(fcinfo: pg_sys::FunctionCallInfo, section: &Section, schedule: &Schedule) -> Datum {
    section
        .run(&MODE, parameters! { schedule_id: Some(schedule.id) })
        .return_all(fcinfo);
    Datum::from(0)
}

entry!(routines_mode, |fcinfo, arguments| {
    let caller = Caller::current();
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    let schedule = watched(&section, &caller, &arguments.schedule.required());
    return_mode(fcinfo, &section, &schedule)
});

entry!(routines_set_mode, |fcinfo, arguments| {
    let caller = Caller::current();
    let mode: Option<String> = arguments.mode.get();
    if !matches!(mode.as_deref(), Some("observe" | "control")) {
        invalid(
            format!(
                "unknown mode {}",
                literal_or_null(mode.as_deref())
            ),
            Some("observe: status only, no command is sent; control: the scheduler starts and restarts routines."),
        );
    }
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    let schedule = watched(&section, &caller, &arguments.schedule.required());
    section.run(
        &SET_MODE,
        parameters! {
            schedule_id: Some(schedule.id),
            mode: arguments.mode.datum(),
            mode_by: Some(Datum::from(caller.role)),
        },
    );
    _wake_launcher();
    return_mode(fcinfo, &section, &schedule)
});

/// Today's row of a routine that a person commands, locked: (realtime, its run has not ended).
fn commanded(section: &Section, schedule: &Schedule, routine: &str) -> (bool, bool) {
    let day = section.run(
        &COMMANDED,
        parameters! { schedule_id: Some(schedule.id), routine: routine.into_datum() },
    );
    if day.len() == 0 {
        refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!(
                "routine {routine} is not in today's state of schedule {}",
                schedule.name
            ),
            Some("A routine added to the definition is read at the next day, or now with routines_reload."),
        );
    }
    if day.get::<bool>(0, 0) == Some(true) {
        refuse(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!(
                "{routine} is the scheduler: it is not restarted or stopped from its own schedule"
            ),
            Some("The scheduler is pg_jobs' launcher; the server keeps it running."),
        );
    }
    if day.get::<bool>(0, 1) == Some(true) {
        refuse(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("{routine} is external: something else runs it"),
            None,
        );
    }
    (
        day.get::<bool>(0, 2) == Some(true),
        day.get::<bool>(0, 3) == Some(true),
    )
}

/// A person's command of a routine, logged with who sent it.
fn command(section: &Section, schedule: &Schedule, routine: &str, what: &str, caller: &Caller) {
    section.run(
        &LOG_COMMAND,
        parameters! {
            schedule_id: Some(schedule.id),
            routine: routine.into_datum(),
            what: what.into_datum(),
            sender: Some(Datum::from(caller.role)),
        },
    );
}

entry!(routine_restart, |fcinfo, arguments| {
    let caller = Caller::current();
    let routine = arguments.routine.get().unwrap_or_default();
    let section = Section::as_owner(fcinfo);
    let schedule = watched(&section, &caller, &arguments.schedule.required());
    let (_, alive) = commanded(&section, &schedule, &routine);
    command(&section, &schedule, &routine, "restart", &caller);
    let answer = if alive {
        post(&section, schedule.id, &routine, "kill", false);
        section.run(
            &RESTART_ASKED,
            parameters! {
                schedule_id: Some(schedule.id),
                routine: routine.as_str().into_datum(),
                asked_by: Some(Datum::from(caller.role)),
            },
        );
        _wake_launcher();
        "ending the run; it starts again once ended"
    } else {
        post(&section, schedule.id, &routine, "routine", false);
        "started"
    };
    section.text(answer)
});

entry!(routine_stop, |fcinfo, arguments| {
    let caller = Caller::current();
    let routine = arguments.routine.get().unwrap_or_default();
    let section = Section::as_owner(fcinfo);
    let schedule = watched(&section, &caller, &arguments.schedule.required());
    let (realtime, _) = commanded(&section, &schedule, &routine);
    command(&section, &schedule, &routine, "stop", &caller);
    post(&section, schedule.id, &routine, "kill", false);
    section.run(
        &STOP_ASKED,
        parameters! { schedule_id: Some(schedule.id), routine: routine.as_str().into_datum() },
    );
    let answer = if realtime {
        "ending it; the scheduler starts it again once it has been silent for 45 s \
         (remove it from the definition to keep it stopped)"
    } else {
        "ending it"
    };
    section.text(answer)
});

entry!(routine_message, |fcinfo, arguments| {
    let caller = Caller::current();
    let level: Option<String> = arguments.level.get();
    if !level.as_deref().is_some_and(level_ok) {
        invalid(
            format!("unknown level {}", literal_or_null(level.as_deref())),
            Some("A message's level is info, warning, error or completed."),
        );
    }
    if arguments.message.datum().is_none() {
        required("message");
    }
    let routine = arguments.routine.get().unwrap_or_default();
    let section = Section::as_owner(fcinfo);
    let written = section.run(
        &MESSAGE,
        parameters! {
            routine: arguments.routine.datum(),
            level: arguments.level.datum(),
            message: arguments.message.datum(),
            sender: Some(Datum::from(caller.role)),
        },
    );
    if written.len() == 0 {
        refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!("no schedule of yours lists routine {routine}"),
            Some("A message is kept for the schedules that list the routine and whose owner you act for."),
        );
    }
    Datum::from(written.len() as i32)
});

// routine_groups(by, realtime, schedule): the caller's routines of today in groups (by group,
// computer, status or schedule), read as the caller.
entry!(routine_groups, |fcinfo, arguments| {
    let by = arguments.by.get();
    if !by
        .as_deref()
        .is_some_and(|by| ["group", "computer", "status", "schedule"].contains(&by))
    {
        invalid(
            format!(
                "cannot group routines by {}",
                literal_or_null(by.as_deref())
            ),
            Some("Group by group, computer, status or schedule; for the run order, SELECT * FROM pgjobs.routines_today ORDER BY run_order."),
        );
    }
    materialize(fcinfo);
    let section = Section::as_current_user();
    section
        .run(
            &GROUPS,
            parameters! {
                by: arguments.by.datum(),
                realtime: arguments.realtime.datum(),
                schedule: arguments.schedule.datum(),
            },
        )
        .return_all(fcinfo);
    Datum::from(0)
});
