//! The API by domain: the boundary every public function crosses (call), identities, the queue,
//! when its leases may run out (leases), when it wakes workers (ready) and when its jobs may be
//! claimed (flow), SQL jobs, cron schedules, the compute tables, batch jobs, and routine
//! schedules.

pub mod api_tokens;
pub mod arguments;
pub mod at_commit;
pub mod batch;
pub mod batch_agent;
pub mod batch_post;
pub mod batch_reads;
pub mod batch_waits;
pub mod cached;
pub mod call;
pub mod compute;
pub mod compute_deploy;
pub mod compute_fetch;
pub mod compute_fold;
pub mod compute_origins;
pub mod compute_results;
pub mod compute_settings;
pub mod compute_workers;
pub mod datum;
pub mod dependencies;
pub mod due;
pub mod flow;
pub mod heads;
pub mod history;
pub mod identity;
pub mod job_specs;
pub mod keyed;
pub mod leases;
pub mod metrics;
pub mod opaque_ids;
pub mod owners;
pub mod queue;
pub mod queue_minutes;
pub mod queue_places;
pub mod ready;
pub mod redrive;
pub mod refusals;
pub mod routine_rounds;
pub mod routine_rules;
pub mod routines;
pub mod schedule_firing;
pub mod schedules;
pub mod services;
pub mod sql_jobs;
pub mod waits;
