//! API tokens: a role's bearer credentials for the SCHED page's HTTP API (`web/`). The web
//! server logs in as a member of `pgjobs_api` and, for a request with a token, sets its role to
//! the token's role (`_api_token_role`), as PostgREST's authenticator does; `pgjobs_api` is a
//! member of each role while the role has a live token, and of no other. Statements in
//! `api_tokens.sql`.

use pg_jobs_core::hex;
use pgrx::pg_sys::TEXTOID;
use pgrx::prelude::*;
use pgrx::IntoDatum;

use super::call::{invalid, record, refuse, Caller, Section, Statement};
use super::identity::{_is_admin, role_name};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("api_tokens.sql"));

static CREATE: Statement = statement("create");
static REVOKE: Statement = statement("revoke");
static TOKEN_ROLE: Statement = statement("token_role");
static NOTE_USE: Statement = statement("note_use");
static API_MEMBER: Statement = statement("api_member");

/// The longest label.
const LABEL_MAX: usize = 200;

/// The role the web server logs in as is a member of this one.
fn api_role() -> pg_sys::Oid {
    unsafe { pg_sys::get_role_oid(c"pgjobs_api".as_ptr(), false) }
}

/// Whether `role` may act through a token: not a superuser, not one that bypasses row-level
/// security (the token would carry either past every policy).
fn may_have_tokens(role: pg_sys::Oid) -> bool {
    !_is_admin(role) && !unsafe { pg_sys::has_bypassrls_privilege(role) }
}

/// Makes `pgjobs_api` a member of `role`, or no longer one. Role membership is a utility
/// statement naming the role, so it is written out, the name quoted as `regrole` prints it.
fn api_membership(section: &Section, role: pg_sys::Oid, member: bool) {
    let is_member = section
        .run(
            &API_MEMBER,
            parameters! { role: Some(pg_sys::Datum::from(role)) },
        )
        .get::<bool>(0, 0)
        == Some(true);
    let statement = match (member, is_member) {
        (true, false) => format!("GRANT {} TO pgjobs_api", role_name(role)),
        (false, true) => format!("REVOKE {} FROM pgjobs_api", role_name(role)),
        _ => return,
    };
    Spi::run(&statement).unwrap_or_else(|problem| error!("pg_jobs: {statement}: {problem}"));
}

/// 32 bytes from PostgreSQL's strong random source, as hex, behind a prefix that says what the
/// secret is (secret scanners look for such prefixes).
fn new_token() -> String {
    let mut bytes = [0u8; 32];
    if !unsafe { pg_sys::pg_strong_random(bytes.as_mut_ptr().cast(), bytes.len()) } {
        error!("pg_jobs: no strong random bytes for a token");
    }
    format!("pgjobs_{}", hex(&bytes))
}

// jobs_api_token_create(label) -> (id, token)
entry!(jobs_api_token_create, |fcinfo, arguments| {
    let caller = Caller::current();
    let label = arguments.label.get().unwrap_or_default();
    if label.trim().is_empty() || label.len() > LABEL_MAX {
        invalid(
            format!(
                "label must be a text of 1 to {LABEL_MAX} bytes, not {} bytes",
                label.len()
            ),
            Some("Say where the token is used, for example 'nightly report script'."),
        );
    }
    if !may_have_tokens(caller.role) {
        refuse(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "{} is a superuser or bypasses row-level security: it cannot have API tokens",
                role_name(caller.role)
            ),
            Some("Make the token as a role with only the rights the script needs."),
        );
    }
    if pg_sys::is_member_of_role(caller.role, api_role()) {
        refuse(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "{} is a member of pgjobs_api, the web server's: it cannot have API tokens",
                role_name(caller.role)
            ),
            None,
        );
    }
    let token = new_token();
    let section = Section::as_owner(fcinfo);
    let id = section
        .run(
            &CREATE,
            parameters! {
                role: Some(pg_sys::Datum::from(caller.role)),
                label: label.as_str().into_datum(),
                token: token.as_str().into_datum(),
            },
        )
        .datum(0, 0);
    api_membership(&section, caller.role, true);
    let token = section.text(&token);
    drop(section);
    record(fcinfo, &[id, Some(token)])
});

// jobs_api_token_revoke(id)
entry!(jobs_api_token_revoke, |fcinfo, arguments| {
    let caller = Caller::current();
    let Some(id) = arguments.id.datum() else {
        refuse(
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            "id must name one of your API tokens",
            None,
        )
    };
    let section = Section::as_owner(fcinfo);
    let revoked = section.run(
        &REVOKE,
        parameters! {
            role: Some(pg_sys::Datum::from(caller.role)),
            id: Some(id),
            admin: Some(pg_sys::Datum::from(_is_admin(caller.role))),
        },
    );
    let Some(role) = revoked.get::<pg_sys::Oid>(0, 0) else {
        refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!("API token {} does not exist", id.value() as i64),
            Some("jobs_api_tokens lists yours."),
        )
    };
    if revoked.get::<bool>(0, 1) == Some(false) {
        api_membership(&section, role, false);
    }
    pg_sys::Datum::from(0)
});

// _api_token_role(token) -> the name of the role a live token acts as
entry!(_api_token_role, |fcinfo, arguments| {
    let refused = || -> ! {
        refuse(
            PgSqlErrorCode::ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION,
            "invalid or revoked API token",
            None,
        )
    };
    let Some(token) = arguments.token.datum() else {
        refused()
    };
    let section = Section::as_owner(fcinfo);
    let found = section.run(&TOKEN_ROLE, parameters! { token: Some(token) });
    // A role made a superuser, or given BYPASSRLS, since its token was made: refused as at the
    // token's making.
    let (Some(id), Some(name), Some(role)) = (
        found.datum(0, 0),
        found.datum(0, 1),
        found
            .get::<pg_sys::Oid>(0, 3)
            .filter(|&role| may_have_tokens(role)),
    ) else {
        refused()
    };
    if found.get::<bool>(0, 2) == Some(true) {
        section.run(&NOTE_USE, parameters! { id: Some(id) });
    }
    // A restore brings the tokens but not the memberships, which belong to the cluster's roles:
    // the first use makes it again.
    api_membership(&section, role, true);
    section.keep(name, TEXTOID)
});
