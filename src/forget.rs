//! Forgetting for good: deleting sessions with a tombstone, and compaction, which rewrites a
//! collection's files so that no byte of deleted text survives.
//!
//! Deleting a document in redb frees its pages but does not overwrite them, and tantivy keeps
//! deleted documents in its segments until they merge; the graph dump keeps deleted vectors.
//! [`Index::compact`] therefore copies every live row into a fresh redb file, swaps it in, and
//! rebuilds the derived indexes (graph and lexical) from it.

use std::path::Path;

use chrono::{DateTime, Utc};
use redb::{Database, ReadableDatabase, ReadableMultimapTable, ReadableTable, ReadableTableMetadata};
use serde::Serialize;

use crate::collection::{Collection, acquire_lock, dir_size};
use crate::error::{Error, Result};
use crate::index::{Index, collection_name, validate_name};
use crate::store::tables::*;

/// What [`Collection::forget_session`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ForgetReport {
    /// Documents deleted (messages, decisions, summary).
    pub documents: usize,
    /// Embedding-cache rows deleted.
    pub cache_rows: usize,
}

/// What [`Index::compact`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CompactReport {
    /// Collection name.
    pub collection: String,
    /// Bytes on disk before.
    pub bytes_before: u64,
    /// Bytes on disk after (with the rebuilt graph and lexical index).
    pub bytes_after: u64,
}

impl std::fmt::Display for CompactReport {
    /// `compacted <collection>: <before> MB -> <after> MB`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "compacted {}: {:.1} MB -> {:.1} MB",
            self.collection,
            self.bytes_before as f64 / 1e6,
            self.bytes_after as f64 / 1e6
        )
    }
}

impl Collection {
    /// Deletes every document of a session together with its embedding-cache rows and ingest
    /// state, and records a tombstone so that indexing skips the session unless forced
    /// ([`crate::IndexOptions::force`]). One transaction. The text stays in freed pages of the
    /// files until [`Index::compact`] rewrites them, which happens at the latest the next time
    /// the collection is opened (a pending compaction is recorded first, so a process killed
    /// in between cannot leave the text behind).
    pub fn forget_session(&self, session_id: &str) -> Result<ForgetReport> {
        let model = self.embedder.model_id().to_string();
        // Before anything is deleted: should this process die before the compaction that
        // scrubs the freed pages, the next open of the collection compacts it.
        mark_compaction_pending(self.dir())?;
        let _w = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let tx = self.db.begin_write()?;
        let mut report = ForgetReport::default();
        let ids = crate::collection::session_ids(&tx, session_id)?;
        {
            let docs = tx.open_table(DOCS)?;
            let mut cache = tx.open_table(EMBED_CACHE)?;
            for id in &ids {
                let Some(doc) = crate::collection::get_doc(&docs, *id)? else { continue };
                for (key, _) in self.chunk_texts(&model, &doc) {
                    if cache.remove(key)?.is_some() {
                        report.cache_rows += 1;
                    }
                }
            }
            let mut sessions = tx.open_table(SESSIONS)?;
            sessions.remove(session_id)?;
            // An imported conversation's header (people, metadata) lives under its own key.
            sessions.remove(format!("import:{session_id}").as_str())?;
            tx.open_table(FORGOTTEN)?.insert(session_id, Utc::now().timestamp_millis())?;
        }
        report.documents = self.delete_ids_in(tx, ids)?;
        self.write_tombstone_sidecar()?;
        Ok(report)
    }

    /// Keeps `forgotten.json` beside the store: the tombstones (session id → when) outside
    /// redb, so that a store damaged beyond repair cannot bring forgotten sessions back when
    /// their transcripts are indexed again ([`Index::repair`] reads it). Written atomically.
    pub(crate) fn write_tombstone_sidecar(&self) -> Result<()> {
        let rows: std::collections::BTreeMap<String, i64> =
            self.forgotten_sessions()?.into_iter().map(|(s, t)| (s, t.timestamp_millis())).collect();
        let path = self.dir().join(TOMBSTONE_SIDECAR);
        let tmp = self.dir().join(format!("{TOMBSTONE_SIDECAR}.tmp"));
        let text = serde_json::to_vec(&rows).map_err(|e| Error::io(&path, std::io::Error::other(e)))?;
        std::fs::write(&tmp, text)
            .and_then(|_| std::fs::File::open(&tmp)?.sync_all())
            .map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))
    }

    /// Whether a session was forgotten (and not indexed again since).
    pub fn is_forgotten(&self, session_id: &str) -> Result<bool> {
        let tx = self.db.begin_read()?;
        Ok(tx.open_table(FORGOTTEN)?.get(session_id)?.is_some())
    }

    /// Writes tombstones read back from a damaged store ([`Index::repair`]).
    pub(crate) fn restore_tombstones(&self, rows: &[(String, i64)]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let _w = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let tx = self.db.begin_write()?;
        {
            let mut t = tx.open_table(FORGOTTEN)?;
            for (session, at) in rows {
                t.insert(session.as_str(), *at)?;
            }
        }
        tx.commit()?;
        self.write_tombstone_sidecar()
    }

    /// Forgotten sessions and when they were forgotten, by session id.
    pub fn forgotten_sessions(&self) -> Result<Vec<(String, DateTime<Utc>)>> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(FORGOTTEN)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            let (k, v) = row?;
            out.push((k.value().to_string(), DateTime::from_timestamp_millis(v.value()).unwrap_or_default()));
        }
        Ok(out)
    }
}

/// Copies every row of the listed tables from `src` to `dst` (same definitions on both sides).
macro_rules! copy_tables {
    ($src:expr, $dst:expr; tables: $($t:expr),*; multimaps: $($m:expr),*) => {{
        $(
            let from = $src.open_table($t)?;
            let mut to = $dst.open_table($t)?;
            for row in from.iter()? {
                let (k, v) = row?;
                to.insert(k.value(), v.value())?;
            }
        )*
        $(
            let from = $src.open_multimap_table($m)?;
            let mut to = $dst.open_multimap_table($m)?;
            for row in from.iter()? {
                let (k, values) = row?;
                for v in values {
                    to.insert(k.value(), v?.value())?;
                }
            }
        )*
    }};
}

/// Rewrites `data.redb` into a fresh file holding only live rows.
fn rewrite_store(dir: &Path) -> Result<()> {
    let path = dir.join("data.redb");
    let fresh = dir.join("data.redb.compact");
    let _ = std::fs::remove_file(&fresh);
    {
        let src = match Database::open(&path) {
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                return Err(Error::InUse { path: dir.to_path_buf(), holder: std::process::id().to_string() });
            }
            other => other?,
        };
        let dst = Database::builder().create(&fresh)?;
        crate::store::create_tables(&src)?;
        let r = src.begin_read()?;
        let w = dst.begin_write()?;
        {
            copy_tables!(r, w;
                tables: META, DOCS, UUIDS, VECTORS, EMBED_CACHE, SESSIONS, FORGOTTEN;
                multimaps: IDX_KIND, IDX_TAG, IDX_DOMAIN, IDX_SESSION, IDX_FILE, IDX_TIME);
            debug_assert_eq!(r.open_table(DOCS)?.len()?, w.open_table(DOCS)?.len()?);
        }
        w.commit()?;
    }
    std::fs::rename(&fresh, &path).map_err(|e| Error::io(&path, e))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

const COMPACT_PENDING: &str = "COMPACT_PENDING";
/// See [`Collection::write_tombstone_sidecar`].
pub(crate) const TOMBSTONE_SIDECAR: &str = "forgotten.json";

/// The tombstones kept beside a store (empty when the file is missing or unreadable).
pub(crate) fn read_tombstone_sidecar(dir: &Path) -> Vec<(String, i64)> {
    std::fs::read(dir.join(TOMBSTONE_SIDECAR))
        .ok()
        .and_then(|b| serde_json::from_slice::<std::collections::BTreeMap<String, i64>>(&b).ok())
        .map(|m| m.into_iter().collect())
        .unwrap_or_default()
}

fn mark_compaction_pending(dir: &Path) -> Result<()> {
    let path = dir.join(COMPACT_PENDING);
    let f = std::fs::File::create(&path).map_err(|e| Error::io(&path, e))?;
    f.sync_all().map_err(|e| Error::io(&path, e))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// True when a `forget` deleted documents and the compaction that scrubs them has not
/// finished.
pub(crate) fn compaction_pending(dir: &Path) -> bool {
    dir.join(COMPACT_PENDING).exists()
}

/// Rewrites the store of the (closed) collection in `dir` from its live rows and deletes its
/// derived indexes, which the next open rebuilds; then clears the pending mark. Safe to run
/// again after an interruption at any point.
pub(crate) fn compact_dir(dir: &Path, lock_wait: std::time::Duration) -> Result<()> {
    let _lock = acquire_lock(dir, lock_wait)?;
    match std::panic::catch_unwind(|| rewrite_store(dir)) {
        Ok(r) => r?,
        Err(p) => {
            return Err(Error::Damaged {
                path: dir.join("data.redb"),
                reason: crate::store::seal::panic_message(p.as_ref()),
            });
        }
    }
    for derived in ["vectors", "lexical"] {
        let p = dir.join(derived);
        if p.exists() {
            std::fs::remove_dir_all(&p).map_err(|e| Error::io(&p, e))?;
        }
    }
    let marker = dir.join(COMPACT_PENDING);
    match std::fs::remove_file(&marker) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&marker, e)),
        _ => Ok(()),
    }
}

impl Index {
    /// Compacts a collection so that no byte of deleted documents survives in its files: copies
    /// every live row into a fresh redb file that replaces the old one, deletes the graph and
    /// the lexical index, and rebuilds both from the new file. The collection must not be open
    /// (in this process or another; another process is waited for up to
    /// [`crate::CollectionOptions::lock_wait`]).
    pub fn compact(&self, tenant: &str, project: &str) -> Result<CompactReport> {
        let tenant = validate_name("tenant", tenant)?;
        let project = validate_name("project", project)?;
        let name = collection_name(&tenant, &project);
        let dir = self.root().join(&name);
        if !dir.join("data.redb").exists() {
            return Err(Error::io(
                &dir,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such collection; `convdex stats` lists them"),
            ));
        }
        if self.is_open(&name) {
            return Err(Error::InUse { path: dir, holder: format!("{} (this process)", std::process::id()) });
        }
        let bytes_before = dir_size(&dir);
        compact_dir(&dir, self.options().collection.lock_wait)?;
        // Reopening rebuilds the graph and the lexical index; dropping it persists them.
        let coll = self.collection(&tenant, &project)?;
        coll.flush()?;
        drop(coll);
        Ok(CompactReport { collection: name, bytes_before, bytes_after: dir_size(&dir) })
    }
}
