//! Posting batch jobs (`sql/085_batch.sql`): `batch_post`, `batch_post_many` and the routines'
//! scheduler's `_batch_post`; a post's checks, its command (the job's spec and key), its
//! dependencies, and its job added, or the waiting job of its command replaced. Statements in
//! `batch_post.sql`. The rest of the poster's side (cancel, release) and the counts: batch.rs.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;

use pg_jobs_core::hex;
use pgrx::pg_sys::{self, Datum, Oid, JSONBOID, TEXTOID, TIMESTAMPTZOID};
use pgrx::prelude::*;
use pgrx::{FromDatum, IntoDatum};

use super::batch::{batch_queue, silence, tally_added, tally_one, Added};
use super::batch_waits::check_cycle;
use super::call::{invalid, materialize, refuse, Caller, Planning, Section, Statement};
use super::datum::{
    array, elements, int8_array, jsonb_root, literal_or_null, output, JsonbBuilder,
};
use super::identity::_identity_of;
use super::keyed::{advisory, lock_key, sha256, tried};
use super::queue::{add, add_free, check_all, return_ids, Field, Problem, Spec};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("batch_post.sql"));

static POSTS: Statement = statement("posts");
static COMPUTER_KNOWN: Statement = statement("computer_known");
static JOB_OF_HASH: Statement = statement("job_of_hash");
static LOCK_DEPENDENCIES: Statement = statement("lock_dependencies");
static WAITING_FOR: Statement = statement("waiting_for");
static SHORTEN_LOCK_WAITS: Statement = statement("shorten_lock_waits");
static RESTORE_LOCK_WAITS: Statement = statement("restore_lock_waits");
/// A job found by its key's row, by primary keys only: found through the indexes of jobs, the
/// plan, before ANALYZE had seen the jobs, read the owner's index (alone, or in a bitmap AND with
/// the key's), which is every job of the poster on every post (0.5 ms a post with 2,000 posted,
/// growing with them).
static WAITING_JOB: Statement = Statement::new(STATEMENTS, "waiting_job", Planning::Probes);
static WAITING_JOB_NOWAIT: Statement =
    Statement::new(STATEMENTS, "waiting_job_nowait", Planning::Probes);
static MADE_NOW: Statement = statement("made_now");
static STILL_WAITING: Statement = statement("still_waiting");
static CLEAR_WAITS: Statement = statement("clear_waits");
/// The jobs by their primary key (id = ANY: no other index has the id).
static ADD_WAITS: Statement = Statement::new(STATEMENTS, "add_waits", Planning::Probes);

/// A post's arguments, as batch_post and _batch_post name them, and each object of
/// batch_post_many's array.
struct Post {
    command: Option<Datum>,
    args: Option<Datum>,
    computer: Option<Datum>,
    kind: Option<Datum>,
    routine: Option<Datum>,
    cwd: Option<Datum>,
    shell: Option<Datum>,
    depends_on: Option<Datum>,
    run_at: Option<Datum>,
    max_attempts: Option<Datum>,
    priority: Option<Datum>,
    revision: Option<Datum>,
    env: Option<Datum>,
    extra: Option<Datum>,
}

/// The keys of batch_post_many's objects: [`Post`]'s fields, in their order (the columns of
/// the `posts` statement), and the earlier posts of the call a post waits for.
const POST_KEYS: [&str; 15] = [
    "command",
    "args",
    "computer",
    "kind",
    "routine",
    "cwd",
    "shell",
    "depends_on",
    "run_at",
    "max_attempts",
    "priority",
    "revision",
    "env",
    "extra",
    "after",
];

const POSTS_HINT: &str = "Each object takes the parameters of batch_post, and \"after\": \
    [{\"command\": \"make\", \"args\": [\"all\"]}, {\"command\": \"make\", \"args\": [\"check\"], \"after\": [1]}].";

/// The [`Post`] of a call's arguments (batch_post's or _batch_post's).
macro_rules! post_of {
    ($arguments:expr) => {{
        let arguments = &$arguments;
        Post {
            command: arguments.command.datum(),
            args: arguments.args.datum(),
            computer: arguments.computer.datum(),
            kind: arguments.kind.datum(),
            routine: arguments.routine.datum(),
            cwd: arguments.cwd.datum(),
            shell: arguments.shell.datum(),
            depends_on: arguments.depends_on.datum(),
            run_at: arguments.run_at.datum(),
            max_attempts: arguments.max_attempts.datum(),
            priority: arguments.priority.datum(),
            revision: arguments.revision.datum(),
            env: arguments.env.datum(),
            extra: arguments.extra.datum(),
        }
    }};
}

/// batch_post_many's posts, and the places (from 1) of the earlier posts each waits for.
fn posts_of(section: &Section, posts: Option<Datum>) -> (Vec<Post>, Vec<Vec<i64>>) {
    if !posts.is_some_and(is_json_array) {
        invalid("posts must be a JSON array of objects", Some(POSTS_HINT));
    }
    let keys: Vec<Option<Datum>> = POST_KEYS.iter().map(|key| key.into_datum()).collect();
    let rows = section.run(
        &POSTS,
        parameters! { posts, fields: Some(array(TEXTOID, &keys)) },
    );
    (0..rows.len())
        .map(|row| {
            let place = row + 1;
            if rows.get::<bool>(row, 0) != Some(true) {
                invalid(
                    format!("posts must be a JSON array of objects (job {place} of the batch)"),
                    Some(POSTS_HINT),
                );
            }
            if let Some(unknown) = rows.get::<String>(row, 16) {
                let expected: Vec<String> = POST_KEYS.iter().map(|key| format!("`{key}`")).collect();
                invalid(
                    format!(
                        "unknown field `{unknown}`, expected one of {} (job {place} of the batch)",
                        expected.join(", ")
                    ),
                    Some(POSTS_HINT),
                );
            }
            let field = |n: usize| rows.datum(row, n + 1);
            let post = Post {
                command: field(0),
                args: field(1),
                computer: field(2),
                kind: field(3),
                routine: field(4),
                cwd: field(5),
                shell: field(6),
                depends_on: field(7),
                run_at: field(8),
                max_attempts: field(9),
                priority: field(10),
                revision: field(11),
                env: field(12),
                extra: field(13),
            };
            let after = rows
                .get::<Vec<Option<i64>>>(row, 15)
                .unwrap_or_default()
                .into_iter()
                .map(|at| {
                    at.filter(|&at| (1..place as i64).contains(&at))
                        .unwrap_or_else(|| {
                            invalid(
                                format!(
                                    "after must name earlier posts of the batch, from 1, not {} (job {place} of the batch)",
                                    at.map_or("null".into(), |at| at.to_string())
                                ),
                                Some("\"after\": [1, 2] makes a job wait for the first two jobs of the same call."),
                            )
                        })
                })
                .collect();
            (post, after)
        })
        .unzip()
}

/// Whether a jsonb value is an array (not a scalar, which jsonb keeps as an array of one).
fn is_json_array(jsonb: Datum) -> bool {
    let header = unsafe { (*jsonb_root(jsonb)).header };
    header & pg_sys::JB_FARRAY != 0 && header & pg_sys::JB_FSCALAR == 0
}

fn text(datum: Option<Datum>) -> Option<String> {
    datum.and_then(|d| unsafe { String::from_datum(d, false) })
}

/// A post's command, or what is wrong with the post.
fn check_post(post: &Post) -> Result<CommandSpec, Problem> {
    let kind = text(post.kind);
    if !matches!(kind.as_deref(), Some("batch" | "routine" | "kill")) {
        return Err(Problem::invalid(
            format!("unknown job kind {}", literal_or_null(kind.as_deref())),
            Some("A batch job's kind is batch, routine or kill."),
        ));
    }
    let kind = kind.expect("a kind");
    let computer = text(post.computer);
    let routine = text(post.routine);
    let mut command = text(post.command);
    if kind == "kill" {
        if routine.as_deref().is_none_or(str::is_empty)
            || computer.as_deref().is_none_or(|c| c == "ANY")
        {
            return Err(Problem::invalid(
                "a kill job names the routine to end and its computer",
                Some("For example batch_post('', kind => 'kill', routine => 'reports', computer => 'alpha')."),
            ));
        }
        command.get_or_insert_default();
    } else if command
        .as_deref()
        .is_none_or(|c| c.trim_matches(' ').is_empty())
    {
        return Err(Problem::invalid(
            "command must not be empty",
            Some("Name the program to run, for example batch_post('backup', ARRAY['--full'])."),
        ));
    }
    for (name, label, hint) in [
        (
            "command",
            &command,
            "A longer script goes in a file the command runs, or in args.",
        ),
        (
            "routine",
            &routine,
            "Name the routine briefly, for example 'nightly-backup'.",
        ),
    ] {
        if let Some(label) = label.as_deref().filter(|label| label.len() > LABEL_BYTES) {
            return Err(Problem::invalid(
                format!(
                    "{name} must be at most {LABEL_BYTES} bytes, not {}",
                    label.len()
                ),
                Some(hint),
            ));
        }
    }
    let Some(args) = post.args.and_then(args_of) else {
        return Err(Problem::invalid(
            "args must be an array of text without nulls",
            Some("Pass '{}' for no arguments."),
        ));
    };
    let env = post.env.map(|env| output(env, JSONBOID));
    if !env
        .as_deref()
        .and_then(|env| serde_json::from_str::<serde_json::Value>(env).ok())
        .as_ref()
        .and_then(serde_json::Value::as_object)
        .is_some_and(|env| env.values().all(serde_json::Value::is_string))
    {
        return Err(Problem::invalid(
            "env must be an object of strings",
            Some(r#"For example '{"LANG": "C.UTF-8"}'."#),
        ));
    }
    let Some(computer) = computer else {
        return Err(Problem::null("computer must not be null", None));
    };
    Ok(CommandSpec {
        kind,
        computer,
        routine,
        command,
        args,
        cwd: text(post.cwd),
        shell: post.shell.is_some_and(|shell| shell.value() != 0),
        env: post.env.expect("an env"),
        env_text: env.expect("an env"),
    })
}

/// The longest command or routine: a job's label (its routine, else its command) is an entry of
/// an index (jobs_batch_group, with its time, computer and owner), which PostgreSQL caps at 2704
/// bytes; its arguments are not.
const LABEL_BYTES: usize = 2000;

/// A text[] of one dimension (or none) without nulls: its strings.
fn args_of(args: Datum) -> Option<Vec<String>> {
    let dimensions = unsafe {
        (*pg_sys::pg_detoast_datum(args.cast_mut_ptr()).cast::<pg_sys::ArrayType>()).ndim
    };
    if dimensions > 1 {
        return None;
    }
    elements(args).into_iter().map(text).collect()
}

/// A post's command: the fields of its job's spec.
struct CommandSpec {
    kind: String,
    computer: String,
    routine: Option<String>,
    command: Option<String>,
    args: Vec<String>,
    cwd: Option<String>,
    shell: bool,
    env: Datum,
    /// The env as jsonb prints it.
    env_text: String,
}

impl CommandSpec {
    /// The command's hash, the SHA-256 in hex of the spec's text in UTF-8: a hash members see
    /// and name (a dependency on a command), so it must be the one the server's
    /// `encode(sha256(convert_to(spec::text, 'UTF8')), 'hex')` gives for the object `{kind,
    /// computer, routine, command, args, cwd, shell, env}`. The text is written here rather than
    /// built with jsonb_build_object and printed by the server (7 µs a post, a sixth of
    /// batch_post_many's time): the keys in jsonb's order (shorter first, then by their bytes),
    /// `": "` and `", "` between, every string escaped by the server's own `escape_json`, the env
    /// as the server prints it. Regress `batch_post_many` checks the hash and the payload against
    /// the server's for strings that need escaping.
    fn hash(&self) -> String {
        let mut text = Vec::with_capacity(128);
        text.extend_from_slice(b"{\"cwd\": ");
        json_string(&mut text, self.cwd.as_deref());
        text.extend_from_slice(b", \"env\": ");
        text.extend_from_slice(self.env_text.as_bytes());
        text.extend_from_slice(b", \"args\": [");
        for (n, arg) in self.args.iter().enumerate() {
            if n > 0 {
                text.extend_from_slice(b", ");
            }
            json_string(&mut text, Some(arg));
        }
        text.extend_from_slice(b"], \"kind\": ");
        json_string(&mut text, Some(&self.kind));
        text.extend_from_slice(if self.shell {
            b", \"shell\": true"
        } else {
            b", \"shell\": false"
        });
        text.extend_from_slice(b", \"command\": ");
        json_string(&mut text, self.command.as_deref());
        text.extend_from_slice(b", \"routine\": ");
        json_string(&mut text, self.routine.as_deref());
        text.extend_from_slice(b", \"computer\": ");
        json_string(&mut text, Some(&self.computer));
        text.push(b'}');
        unsafe {
            let length = i32::try_from(text.len()).expect("a command under 1 GB");
            let utf8 = pg_sys::pg_server_to_any(
                text.as_ptr().cast(),
                length,
                pg_sys::pg_enc::PG_UTF8 as i32,
            );
            let utf8_length = if std::ptr::eq(utf8, text.as_ptr().cast()) {
                text.len()
            } else {
                std::ffi::CStr::from_ptr(utf8).to_bytes().len()
            };
            hex(&sha256(std::slice::from_raw_parts(
                utf8.cast::<u8>(),
                utf8_length,
            )))
        }
    }
}

/// Appends a string as JSON, escaped by the server's escape_json (as jsonb prints it), or null.
fn json_string(text: &mut Vec<u8>, value: Option<&str>) {
    let Some(value) = value else {
        text.extend_from_slice(b"null");
        return;
    };
    let value = std::ffi::CString::new(value).expect("text has no NUL");
    unsafe {
        let buffer = pg_sys::makeStringInfo();
        pg_sys::escape_json(buffer, value.as_ptr());
        text.extend_from_slice(std::slice::from_raw_parts(
            (*buffer).data.cast::<u8>(),
            (*buffer).len as usize,
        ));
        pg_sys::pfree((*buffer).data.cast());
        pg_sys::pfree(buffer.cast());
    }
}

fn check_computer(section: &Section, computer: &str) {
    if section
        .run(
            &COMPUTER_KNOWN,
            parameters! { computer: computer.into_datum() },
        )
        .get::<bool>(0, 0)
        != Some(true)
    {
        refuse(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!("unknown computer \"{computer}\""),
            Some("A computer is known once its agent has registered; see pgjobs.batch_computer_list, or post for ANY."),
        );
    }
}

/// What a post adds: its command (its job's spec), the command's hash (the job's key, and the
/// command hash a dependency names), and the queue's spec of its job, without its payload.
struct Command {
    spec: CommandSpec,
    hash: String,
    job: Spec,
}

/// Checks posts and makes their commands, in order: refuses the first bad post (with its place,
/// when there are several).
fn commands(section: &Section, posts: &[Post]) -> Vec<Command> {
    let place = |n: usize| (posts.len() > 1).then_some(n + 1);
    let specs: Vec<CommandSpec> = posts
        .iter()
        .enumerate()
        .map(|(n, post)| check_post(post).unwrap_or_else(|problem| problem.raise(place(n))))
        .collect();
    let known: BTreeSet<&String> = specs
        .iter()
        .map(|spec| &spec.computer)
        .filter(|c| *c != "ANY")
        .collect();
    for computer in known {
        check_computer(section, computer);
    }
    let lease = Some(silence());
    let commands: Vec<Command> = posts
        .iter()
        .zip(specs)
        .map(|(post, spec)| {
            let hash = spec.hash();
            let mut job = Spec::empty();
            job.set(Field::Task, post.kind);
            job.set(Field::Queue, batch_queue(&spec.computer).into_datum());
            job.set(Field::Priority, post.priority.or(Some(Datum::from(0i32))));
            job.set(Field::RunAt, post.run_at);
            job.set(
                Field::MaxAttempts,
                post.max_attempts.or(Some(Datum::from(1i32))),
            );
            job.set(Field::Lease, lease);
            job.set(Field::Key, hash.as_str().into_datum());
            Command { spec, hash, job }
        })
        .collect();
    let jobs: Vec<Spec> = commands.iter().map(|command| command.job).collect();
    check_all(&jobs, true, false);
    commands
}

/// A dependency as a post names it: a job's id, or a command's hash.
enum Dependency {
    Job(i64),
    Command(String),
}

/// A post's dependencies as it names them, or the first malformed one.
fn named_dependencies(given: Option<Datum>) -> Result<Vec<Dependency>, Problem> {
    let given: Vec<Option<String>> = given.map_or_else(Vec::new, |given| {
        elements(given).into_iter().map(text).collect()
    });
    given
        .into_iter()
        .map(|given| match given {
            Some(id) if (1..=18).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_digit()) => {
                Ok(Dependency::Job(id.parse().expect("digits")))
            }
            Some(hash)
                if hash.len() == 64
                    && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
            {
                Ok(Dependency::Command(hash))
            }
            other => Err(Problem::invalid(
                format!("malformed dependency {}", literal_or_null(other.as_deref())),
                Some(
                    "A dependency is a job id or a command hash (64 lowercase hexadecimal digits).",
                ),
            )),
        })
        .collect()
}

/// The ids of a post's dependencies: a command hash is the job of a post before it in the same
/// call (`in_call`), else the poster's latest job with that hash.
fn resolve(
    section: &Section,
    poster: Oid,
    named: &[Dependency],
    in_call: impl Fn(&str) -> Option<i64>,
) -> Vec<i64> {
    named
        .iter()
        .map(|dependency| match dependency {
            Dependency::Job(id) => *id,
            Dependency::Command(hash) => in_call(hash).unwrap_or_else(|| {
                section
                    .run(
                        &JOB_OF_HASH,
                        parameters! {
                            owner: Some(Datum::from(poster)),
                            hash: hash.as_str().into_datum(),
                        },
                    )
                    .get::<i64>(0, 0)
                    .unwrap_or_else(|| {
                        refuse(
                            PgSqlErrorCode::ERRCODE_FOREIGN_KEY_VIOLATION,
                            format!("no job of yours has the command hash {hash}"),
                            None,
                        )
                    })
            }),
        })
        .collect()
}

/// Of `dependencies`, the jobs to wait for (see the `waiting_for` statement); the live ones are
/// locked until this transaction ends, so none finishes unseen. Refuses a job not the poster's.
fn waiting_for(section: &Section, poster: Oid, dependencies: &[i64]) -> Vec<i64> {
    if dependencies.is_empty() {
        return Vec::new();
    }
    let given = parameters! {
        dependencies: Some(int8_array(dependencies.iter().copied())),
        owner: Some(Datum::from(poster)),
    };
    section.run(&LOCK_DEPENDENCIES, given);
    let found = section.run(&WAITING_FOR, given);
    if let Some(stranger) = found.get::<i64>(0, 1) {
        refuse(
            PgSqlErrorCode::ERRCODE_FOREIGN_KEY_VIOLATION,
            format!("job {stranger} is not one of your jobs"),
            Some("A batch job can depend only on jobs of its own owner."),
        );
    }
    found.get::<Vec<i64>>(0, 0).unwrap_or_default()
}

/// The payload of a post's job: its command's spec, and what the agent and the page read besides
/// (the revision, extra, the jobs it depends on, and its run_at as JSON writes a time, in the
/// session's time zone), made by the server's jsonb builder; it was `spec ||
/// jsonb_build_object(...)` in a statement of its own.
fn payload(post: &Post, command: &Command, dependencies: &[i64]) -> Datum {
    let spec = &command.spec;
    let mut payload = JsonbBuilder::object();
    payload
        .key("kind")
        .string(Some(&spec.kind))
        .key("computer")
        .string(Some(&spec.computer))
        .key("routine")
        .string(spec.routine.as_deref())
        .key("command")
        .string(spec.command.as_deref())
        .key("args")
        .begin_array();
    for arg in &spec.args {
        payload.string(Some(arg));
    }
    payload
        .end()
        .key("cwd")
        .string(spec.cwd.as_deref())
        .key("shell")
        .boolean(spec.shell)
        .key("env")
        .jsonb(Some(spec.env))
        .key("revision")
        .jsonb(post.revision)
        .key("extra");
    match post.extra {
        Some(extra) => payload.jsonb(Some(extra)),
        None => payload.begin_object().end(),
    };
    payload.key("depends_on").begin_array();
    for &id in dependencies {
        payload.number(id);
    }
    let run_at = post.run_at.map(|run_at| unsafe {
        let at = pg_sys::JsonEncodeDateTime(
            std::ptr::null_mut(),
            run_at,
            TIMESTAMPTZOID,
            std::ptr::null(),
        );
        std::ffi::CStr::from_ptr(at).to_string_lossy().into_owned()
    });
    payload.end().key("run_at").string(run_at.as_deref());
    payload.finish()
}

/// The poster's turn for a command: one of 16 advisory locks of the poster, by the first digit
/// of the command's hash (see [`post`]).
fn turn(poster: Oid, hash: &str) -> i64 {
    lock_key("batch_post", &format!("{}/{}", poster.to_u32(), &hash[..1]))
}

/// Takes, shared, the poster's turns for its commands `hashes`, in the order of their keys: by
/// the lock functions themselves, where a statement cost a ninth of a post of one.
fn take_turns<'a>(poster: Oid, hashes: impl Iterator<Item = &'a str>) {
    let turns: BTreeSet<i64> = hashes.map(|hash| turn(poster, hash)).collect();
    for turn in turns {
        advisory(pg_sys::pg_advisory_xact_lock_shared_int8, turn);
    }
}

/// Whether no transaction holds the poster's `turn` (a post of it in progress): the lock tried
/// alone, at once, and let go.
fn turn_free(turn: i64) -> bool {
    let free = tried(pg_sys::pg_try_advisory_lock_int8, turn);
    if free {
        advisory(pg_sys::pg_advisory_unlock_int8, turn);
    }
    free
}

/// Has each of `jobs` (the poster's) wait for the job beside it in `on_jobs`.
fn add_waits(section: &Section, poster: Oid, jobs: &[i64], on_jobs: &[i64]) {
    section.run(
        &ADD_WAITS,
        parameters! {
            jobs: Some(int8_array(jobs.iter().copied())),
            on_jobs: Some(int8_array(on_jobs.iter().copied())),
            owner: Some(Datum::from(poster)),
        },
    );
}

/// Posts commands for `poster` as batch_post would one after another, and returns their jobs'
/// ids in order; `after`: each post's places (from 1) of the earlier posts it waits for.
///
/// Posts are added in runs, each a few statements for all its posts ([`add_run`], where
/// [`post`] runs about ten for one): a post that names a post of the run before it (its command
/// again, or as a dependency) ends the run, so that it finds that post's job (a command posted
/// again finds its job live, and replaces it).
fn post_all(section: &Section, poster: Oid, posts: &[Post], after: &[Vec<i64>]) -> Vec<i64> {
    let commands = commands(section, posts);
    let named: Vec<Vec<Dependency>> = posts
        .iter()
        .enumerate()
        .map(|(n, post)| {
            named_dependencies(post.depends_on)
                .unwrap_or_else(|problem| problem.raise((posts.len() > 1).then_some(n + 1)))
        })
        .collect();
    let mut ids: Vec<Option<i64>> = vec![None; posts.len()];
    let mut dependencies: Vec<Vec<i64>> = Vec::with_capacity(posts.len());
    // Each command's last post so far, and where the run not added yet starts.
    let mut last_post: HashMap<&str, usize> = HashMap::new();
    let mut run_start = 0;
    for n in 0..posts.len() {
        let in_run = |post: Option<&usize>| post.is_some_and(|&post| post >= run_start);
        if in_run(last_post.get(commands[n].hash.as_str()))
            || after[n].iter().any(|&at| in_run(Some(&(at as usize - 1))))
            || named[n].iter().any(|dependency| {
                matches!(dependency, Dependency::Command(hash) if in_run(last_post.get(hash.as_str())))
            })
        {
            add_run(section, poster, posts, &commands, &dependencies, run_start..n, &mut ids);
            run_start = n;
        }
        let mut own = resolve(section, poster, &named[n], |hash| {
            last_post.get(hash).map(|&post| ids[post].expect("added"))
        });
        own.extend(
            after[n]
                .iter()
                .map(|&at| ids[at as usize - 1].expect("added")),
        );
        dependencies.push(own);
        last_post.insert(commands[n].hash.as_str(), n);
    }
    add_run(
        section,
        poster,
        posts,
        &commands,
        &dependencies,
        run_start..posts.len(),
        &mut ids,
    );
    ids.into_iter().map(|id| id.expect("posted")).collect()
}

/// Adds the jobs of the posts `run`, each of a command no post before it in the call names: one
/// statement each for their dependencies, jobs, waits and counts. A post whose command's job is
/// live (its key taken, or taken meanwhile by another transaction's post) is posted by [`post`],
/// which replaces the job if it waits.
fn add_run(
    section: &Section,
    poster: Oid,
    posts: &[Post],
    commands: &[Command],
    dependencies: &[Vec<i64>],
    run: Range<usize>,
    ids: &mut [Option<i64>],
) {
    if run.is_empty() {
        return;
    }
    let all: BTreeSet<i64> = run
        .clone()
        .flat_map(|n| dependencies[n].iter().copied())
        .collect();
    let waiting: HashSet<i64> = waiting_for(section, poster, &all.into_iter().collect::<Vec<_>>())
        .into_iter()
        .collect();
    take_turns(poster, run.clone().map(|n| commands[n].hash.as_str()));
    // Added under the rule replace, which frees the key when the job finishes. A post whose
    // command's key is taken gets no job here (its add does nothing) and is posted by post below:
    // finding the taken keys first was a statement a post, a ninth of a post of one.
    let replace = "replace".into_datum();
    let jobs: Vec<Spec> = run
        .clone()
        .map(|n| {
            let mut job = commands[n].job;
            job.set(
                Field::Payload,
                Some(payload(&posts[n], &commands[n], &dependencies[n])),
            );
            job.set(Field::OnConflict, replace);
            job
        })
        .collect();
    let added = add_free(section, poster, &jobs);
    let (mut waits, mut on_jobs) = (Vec::new(), Vec::new());
    for (n, id) in run.clone().zip(&added) {
        let Some(id) = *id else { continue };
        for &on_job in dependencies[n]
            .iter()
            .filter(|on_job| waiting.contains(on_job))
        {
            waits.push(id);
            on_jobs.push(on_job);
        }
    }
    if !waits.is_empty() {
        add_waits(section, poster, &waits, &on_jobs);
    }
    // Counted for the Jobs tab: the new jobs that wait for no other (those that wait are not).
    let waiting_jobs: HashSet<i64> = waits.iter().copied().collect();
    let counted: Vec<Added> = run
        .clone()
        .zip(&added)
        .filter(|(_, id)| id.is_some_and(|id| !waiting_jobs.contains(&id)))
        .map(|(n, _)| {
            let spec = &commands[n].spec;
            Added {
                label: spec.routine.as_deref().or(spec.command.as_deref()),
                computer: &spec.computer,
                run_at: posts[n].run_at,
            }
        })
        .collect();
    tally_added(section, poster, &counted);
    for (n, id) in run.clone().zip(added) {
        ids[n] = id;
    }
    for n in run {
        if ids[n].is_none() {
            let waiting_for: Vec<i64> = dependencies[n]
                .iter()
                .copied()
                .filter(|on_job| waiting.contains(on_job))
                .collect();
            ids[n] = Some(post(
                section,
                poster,
                &posts[n],
                &commands[n],
                (&dependencies[n], &waiting_for),
                false,
            ));
        }
    }
}

/// Posts a command for `poster` whose job may be live; returns the job's id. Posting a command
/// again while its job still waits replaces that job (same id). `dependencies`: the post's, and
/// of them those to wait for (see [`waiting_for`]).
///
/// Posts of one command take turns on the row of its waiting job, locked before anything about
/// it is read, as the replace's update would lock it: what it counted in batch_tally is
/// subtracted, and what it counts once posted added. A post that sees no such job adds one with
/// rule skip: if a post of the same command made one meanwhile, the key's unique index has this
/// post wait for that post's transaction (the same identity's), and gives it that job, which it
/// then locks and replaces here. No lock per command is held to the end of the transaction: one
/// transaction posting 14,000 commands filled the server's lock table.
///
/// Every post holds, shared, one of 16 advisory locks of its poster (by the first digit of the
/// hash; so at most 16 per transaction, and posts never wait for each other there). `nowait` is
/// the scheduler posting a routine's run, which must not wait for a transaction of the routine's
/// owner that posts the same command: it tries the lock alone for an instant, and a poster's
/// open transaction in that sixteenth makes it fail with 55P03 (tried again at the next round;
/// only that owner's commands are passed over); so does the job's row held.
fn post(
    section: &Section,
    poster: Oid,
    post: &Post,
    command: &Command,
    (dependencies, waiting_for): (&[i64], &[i64]),
    nowait: bool,
) -> i64 {
    let poster_datum = Some(Datum::from(poster));
    let payload = payload(post, command, dependencies);
    let hash = command.hash.as_str().into_datum();
    let mut lock_wait = None;
    if nowait {
        let turn = turn(poster, &command.hash);
        if !turn_free(turn) {
            refuse(
                PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
                format!(
                    "a transaction of {} is posting batch jobs",
                    output(Datum::from(poster), pg_sys::REGROLEOID)
                ),
                Some("Posted again once it has ended."),
            );
        }
        // A post that begins in between would still be waited for: not long.
        lock_wait = section.run(&SHORTEN_LOCK_WAITS, &[]).datum(0, 0);
    }
    take_turns(poster, std::iter::once(command.hash.as_str()));
    let mut job_spec = command.job;
    job_spec.set(Field::Payload, Some(payload));
    let job = loop {
        let waiting = if nowait {
            &WAITING_JOB_NOWAIT
        } else {
            &WAITING_JOB
        };
        let replaced = section
            .run(waiting, parameters! { owner: poster_datum, hash })
            .datum(0, 0);
        if let Some(replaced) = replaced {
            tally_one(section, replaced, -1, false);
            // It must not come to wait for itself.
            check_cycle(section, replaced.value() as i64, waiting_for);
        }
        let rule = if replaced.is_some() {
            "replace"
        } else {
            "skip"
        };
        job_spec.set(Field::OnConflict, rule.into_datum());
        let job = add(section, poster, &[job_spec])[0];
        if replaced.is_none()
            && section
                .run(&MADE_NOW, parameters! { job: Some(Datum::from(job)) })
                .len()
                > 0
        {
            break job;
        }
        // Done too: replaced, or this command's job is taken by an agent (it stays as it is).
        let waiting = section.run(&STILL_WAITING, parameters! { job: Some(Datum::from(job)) });
        if replaced.is_some() || waiting.get::<bool>(0, 0) != Some(true) {
            break job;
        }
        // A waiting job of this command was added, and committed, while this post waited for
        // its key: once more, to lock and replace it, seen now in the statement's new snapshot.
        // (Where the snapshot is the transaction's, repeatable read, the key's insert refuses
        // with 40001 instead.)
    };
    if let Some(lock_wait) = lock_wait {
        section.run(
            &RESTORE_LOCK_WAITS,
            parameters! { lock_timeout: Some(lock_wait) },
        );
    }
    // A new job, or the waiting one it replaced, waits for its unfinished dependencies; a job
    // already taken by an agent keeps its own.
    let job_datum = Some(Datum::from(job));
    if section
        .run(&STILL_WAITING, parameters! { job: job_datum })
        .get::<bool>(0, 0)
        == Some(true)
    {
        section.run(&CLEAR_WAITS, parameters! { job: job_datum });
        if !waiting_for.is_empty() {
            add_waits(section, poster, &vec![job; waiting_for.len()], waiting_for);
        }
    }
    tally_one(section, Datum::from(job), 1, false);
    job
}

entry!(batch_post, |fcinfo, arguments| {
    let poster = Caller::current().identity;
    let section = Section::as_owner(fcinfo);
    Datum::from(post_all(&section, poster, &[post_of!(arguments)], &[Vec::new()])[0])
});

entry!(batch_post_many, |fcinfo, arguments| {
    let poster = Caller::current().identity;
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    let (posts, after) = posts_of(&section, arguments.posts.datum());
    return_ids(fcinfo, &post_all(&section, poster, &posts, &after));
    Datum::from(0)
});

// The routines' scheduler posting a run for a schedule's owner (routine_rounds.rs's post):
// _batch_post(owner, the arguments of batch_post, nowait).
entry!(_batch_post, |fcinfo, arguments| {
    let owner = arguments.owner.required();
    let nowait = arguments.nowait.get().unwrap_or(false);
    let section = Section::as_current_user();
    let poster = _identity_of(owner);
    let posted = post_of!(arguments);
    let command = commands(&section, std::slice::from_ref(&posted))
        .pop()
        .expect("one command");
    let named = named_dependencies(posted.depends_on).unwrap_or_else(|problem| problem.raise(None));
    let dependencies = resolve(&section, poster, &named, |_| None);
    let waiting_for = waiting_for(&section, poster, &dependencies);
    Datum::from(post(
        &section,
        poster,
        &posted,
        &command,
        (&dependencies, &waiting_for),
        nowait,
    ))
});
