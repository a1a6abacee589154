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
    /// files until [`Index::compact`] rewrites them.
    pub fn forget_session(&self, session_id: &str) -> Result<ForgetReport> {
        let model = self.embedder.model_id().to_string();
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
        Ok(report)
    }

    /// Whether a session was forgotten (and not indexed again since).
    pub fn is_forgotten(&self, session_id: &str) -> Result<bool> {
        let tx = self.db.begin_read()?;
        Ok(tx.open_table(FORGOTTEN)?.get(session_id)?.is_some())
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

    /// Removes a session's tombstone (a forced re-index does this).
    pub(crate) fn unforget(&self, session_id: &str) -> Result<bool> {
        let _w = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let tx = self.db.begin_write()?;
        let had = tx.open_table(FORGOTTEN)?.remove(session_id)?.is_some();
        // Nothing removed: no commit, so importing never pays a durable write for this.
        if had {
            tx.commit()?
        } else {
            tx.abort()?
        }
        Ok(had)
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
        {
            let _lock = acquire_lock(&dir, self.options().collection.lock_wait)?;
            rewrite_store(&dir)?;
            for derived in ["vectors", "lexical"] {
                let p = dir.join(derived);
                if p.exists() {
                    std::fs::remove_dir_all(&p).map_err(|e| Error::io(&p, e))?;
                }
            }
        }
        // Reopening rebuilds the graph and the lexical index; dropping it persists them.
        let coll = self.collection(&tenant, &project)?;
        coll.flush()?;
        drop(coll);
        Ok(CompactReport { collection: name, bytes_before, bytes_after: dir_size(&dir) })
    }
}
