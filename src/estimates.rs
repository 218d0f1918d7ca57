//! The planner's row estimate of a table of the extension whose statistics say it is empty while
//! it has pages.
//!
//! PostgreSQL estimates a table's rows as its pages now times the density it last measured
//! (`reltuples ÷ relpages`). A table measured empty (by a VACUUM or ANALYZE after a queue drained,
//! before the next burst of adds: autovacuum measures again a minute or more later) is planned as
//! holding one row whatever it holds meanwhile, and then every index path costs about the same: a
//! probe of one id through the primary key, and a read of a whole index that the statement's
//! conditions happen to imply (a partial index of the batch store, or the ready index with the
//! id as its last column). The planner took the second for statements of several domains (an
//! agent's reports, a batch cancel and release, members' reads of their batch jobs), each then
//! reading every job. For the extension's tables a density measured as zero on a table with pages
//! is taken as unknown, as PostgreSQL takes a table never measured: rows from its pages and its
//! rows' width (`table_block_relation_estimate_size`, without the fillfactor), so that reading a
//! whole index costs what its pages do (regress planner_estimates).

use pgrx::prelude::*;
use pgrx::PgList;

/// Bytes of a page that rows take (a page less its header), and what each row adds to its width
/// (its header, aligned, and its line pointer), as PostgreSQL counts them.
const USABLE_PAGE_BYTES: i32 = pg_sys::BLCKSZ as i32 - 24;
const ROW_OVERHEAD: i32 = 24 + 4;
/// Entries of a page of a partial index, for its row estimate: a btree entry of a few columns
/// takes about 40 bytes.
const INDEX_ENTRIES_PER_PAGE: f64 = 200.0;

static mut NEXT_HOOK: pg_sys::get_relation_info_hook_type = None;

pub fn init() {
    unsafe {
        NEXT_HOOK = pg_sys::get_relation_info_hook;
        pg_sys::get_relation_info_hook = Some(relation_info);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn relation_info(
    root: *mut pg_sys::PlannerInfo,
    relation: pg_sys::Oid,
    inheritance_parent: bool,
    rel: *mut pg_sys::RelOptInfo,
) {
    if let Some(next) = NEXT_HOOK {
        next(root, relation, inheritance_parent, rel);
    }
    let rel = &mut *rel;
    // An estimate of no rows on pages is the only one PostgreSQL makes from a density of zero.
    if inheritance_parent || rel.tuples > 0.0 || rel.pages == 0 || !is_ours(relation) {
        return;
    }
    let width = pg_sys::get_relation_data_width(relation, std::ptr::null_mut()) + ROW_OVERHEAD;
    rel.tuples = f64::from(rel.pages) * f64::from((USABLE_PAGE_BYTES / width.max(1)).max(1));
    for index in PgList::<pg_sys::IndexOptInfo>::from_pg(rel.indexlist).iter_ptr() {
        let index = &mut *index;
        // PostgreSQL set each index's rows to the table's (a partial one's at most), so to none.
        index.tuples = if index.indpred.is_null() {
            rel.tuples
        } else {
            (f64::from(index.pages) * INDEX_ENTRIES_PER_PAGE).min(rel.tuples)
        };
    }
}

/// Whether the relation is in the extension's schema.
unsafe fn is_ours(relation: pg_sys::Oid) -> bool {
    let schema = pg_sys::get_namespace_oid(c"pgjobs".as_ptr(), true);
    schema != pg_sys::InvalidOid && pg_sys::get_rel_namespace(relation) == schema
}
