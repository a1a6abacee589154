//! A first push into an empty project loads its rows first and builds the vector index once,
//! over all of them, instead of adding each vector to a graph that grows as rows arrive (at
//! 100,000 documents most of a push was pgvector's per-row graph inserts; docs/team.md).
//!
//! While such a push runs, the project has no vector index: a search of it scans its vectors
//! exactly (right, only slower). A push killed meanwhile leaves the index out; the next push of
//! the project (by anyone who may create indexes on its tables) builds it before it reports.

use postgres::error::SqlState;

use super::{TeamStore, ident, schema, vectors_table};
use crate::error::Result;

/// A push of at least this many documents into a project whose team tables hold none loads
/// them before building the vector index.
pub const BULK_FROM: usize = 5_000;

/// The most memory a push asks the server for to build a vector index in (`maintenance_work_mem`
/// for that statement only; a setting already higher is kept). pgvector builds faster when the
/// whole graph fits.
const BUILD_MEMORY_MAX_MB: usize = 1024;

/// The name of the vector index of `project`'s `model` vectors (unqualified).
pub(crate) fn vector_index(project: &str, model: &str) -> String {
    ident("vi_", &format!("{project}/{model}"))
}

impl TeamStore {
    /// Drops the vector index of an empty project about to receive `documents` documents, when
    /// that is worth it ([`BULK_FROM`]) and this role may (it owns the tables). `true` when the
    /// index was dropped; the caller builds it again with [`TeamStore::ensure_vector_index`].
    pub(super) fn start_bulk(&self, tenant: &str, project: &str, model: &str, documents: usize) -> Result<bool> {
        if documents < BULK_FROM {
            return Ok(false);
        }
        let (s, v) = (schema(tenant), vectors_table(tenant, project, model));
        let vi = vector_index(project, model);
        self.with(|c| {
            let mut tx = c.transaction()?;
            // Serialised with this index's build by another push (`ensure_vector_index`).
            tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&format!("convdex index {s}.{vi}")])?;
            let empty: bool = tx.query_one(&format!("SELECT NOT EXISTS (SELECT 1 FROM {v})"), &[])?.get(0);
            if !empty {
                return Ok(false);
            }
            let mut drop = tx.transaction()?;
            match drop.batch_execute(&format!("DROP INDEX IF EXISTS {s}.{vi}")) {
                Ok(()) => drop.commit()?,
                // Not the tables' owner: an ordinary push, its vectors added one at a time.
                Err(e) if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) => return Ok(false),
                Err(e) => return Err(e),
            }
            tx.commit()?;
            Ok(true)
        })
    }

    /// Builds the vector index of `project`'s `model` vectors if it is missing (after a bulk
    /// load, or a bulk load killed before its end). `Ok(false)` when it is missing and this role
    /// may not build it (not the tables' owner): searches still answer, scanning exactly.
    pub(super) fn ensure_vector_index(&self, tenant: &str, project: &str, model: &str) -> Result<bool> {
        let (s, v) = (schema(tenant), vectors_table(tenant, project, model));
        let vi = vector_index(project, model);
        let qualified = format!("{s}.{vi}");
        let there = "SELECT to_regclass($1) IS NOT NULL";
        if self.with(|c| c.query_one(there, &[&qualified]).map(|r| r.get::<_, bool>(0)))? {
            return Ok(true);
        }
        self.with(|c| {
            let mut tx = c.transaction()?;
            // Two pushes that find it missing build it once (the second finds it built).
            tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&format!("convdex index {qualified}")])?;
            if tx.query_one(there, &[&qualified])?.get::<_, bool>(0) {
                return Ok(true);
            }
            let rows: f64 = tx.query_one(&format!("SELECT count(*)::float8 FROM {v}"), &[])?.get::<_, f64>(0);
            // pgvector keeps the vector (4 bytes a dimension) and its links per row while it builds.
            let dim: i32 = tx
                .query_one(&format!("SELECT coalesce((SELECT vector_dims(embedding) FROM {v} LIMIT 1), 0)"), &[])?
                .get(0);
            let want_mb = ((rows * (f64::from(dim) * 4.0 + 300.0)) / 1e6).ceil() as usize + 64;
            let have_mb: i64 = tx
                .query_one("SELECT setting::bigint / 1024 FROM pg_settings WHERE name = 'maintenance_work_mem'", &[])?
                .get(0);
            let mb = want_mb.min(BUILD_MEMORY_MAX_MB);
            if mb as i64 > have_mb {
                tx.batch_execute(&format!("SET LOCAL maintenance_work_mem = '{mb}MB'"))?;
            }
            let create = format!("CREATE INDEX IF NOT EXISTS {vi} ON {v} USING hnsw (embedding vector_cosine_ops)");
            let mut build = tx.transaction()?;
            match build.batch_execute(&create) {
                Ok(()) => build.commit()?,
                Err(e) if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) => return Ok(false),
                // Out of a resource (class 53): a parallel build holds its memory in shared
                // memory, which a container may keep small (Docker: 64 MB of /dev/shm). Once
                // more with the server's own memory setting and no parallel workers.
                Err(e) if e.code().is_some_and(|c| c.code().starts_with("53")) => {
                    drop(build);
                    tx.batch_execute("RESET maintenance_work_mem; SET LOCAL max_parallel_maintenance_workers = 0")?;
                    tx.batch_execute(&create)?;
                }
                Err(e) => return Err(e),
            }
            tx.commit()?;
            Ok(true)
        })
    }
}
