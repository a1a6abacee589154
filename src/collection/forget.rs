//! Forgetting for good: deleting a session with its embedding-cache rows and ingest state, and
//! a tombstone that indexing respects (kept in the store and beside it, in `forgotten.json`).
//! The compaction that scrubs the freed pages is [`crate::Index::compact`].

use crate::sync::Locked;
use std::path::Path;

use chrono::{DateTime, Utc};
use redb::{ReadableDatabase, ReadableTable};
use serde::Serialize;

use crate::collection::Collection;
use crate::error::{Error, Result};
use crate::store::compact::mark_compaction_pending;
use crate::store::tables::*;
use crate::store::{get_doc, session_ids};

/// What [`Collection::forget_session`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ForgetReport {
    /// Documents deleted (messages, decisions, summary).
    pub documents: usize,
    /// Embedding-cache rows deleted.
    pub cache_rows: usize,
}

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

impl Collection {
    /// Deletes every document of a session together with its embedding-cache rows and ingest
    /// state, and records a tombstone so that indexing skips the session unless forced
    /// ([`crate::IndexOptions::force`]). One transaction. The text stays in freed pages of the
    /// files until [`crate::Index::compact`] rewrites them, which happens at the latest the next time
    /// the collection is opened (a pending compaction is recorded first, so a process killed
    /// in between cannot leave the text behind).
    pub fn forget_session(&self, session_id: &str) -> Result<ForgetReport> {
        let target = self.migration_target();
        // Before anything is deleted: should this process die before the compaction that
        // scrubs the freed pages, the next open of the collection compacts it.
        mark_compaction_pending(self.dir())?;
        let _w = self.write_lock.locked();
        let tx = self.db.begin_write()?;
        let mut report = ForgetReport::default();
        let ids = session_ids(&tx, session_id)?;
        {
            let mut docs = Vec::new();
            {
                let t = tx.open_table(DOCS)?;
                for id in &ids {
                    docs.extend(get_doc(&t, *id)?);
                }
            }
            for doc in &docs {
                for (key, _) in self.chunk_texts(doc) {
                    if crate::store::cache::remove(&tx, key)? {
                        report.cache_rows += 1;
                    }
                }
                // A migration's rows of the new model go too.
                if let Some(t) = &target {
                    let mut next = tx.open_table(MIGRATION_CACHE)?;
                    for (key, _) in self.chunk_texts_with(t.as_ref(), doc) {
                        if next.remove(key.0)?.is_some() {
                            report.cache_rows += 1;
                        }
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
        self.write_tombstone_sidecar(None)?;
        Ok(report)
    }

    /// Keeps `forgotten.json` beside the store: the tombstones (session id → when) outside
    /// redb, so that a store damaged beyond repair cannot bring forgotten sessions back when
    /// their transcripts are indexed again ([`Index::repair`] reads it). Written atomically.
    /// The file keeps the tombstones it held beside the store's (a store rebuilt from what
    /// could be read may have lost some), less `indexed_again`, a session `index --force`
    /// brought back.
    pub(crate) fn write_tombstone_sidecar(&self, indexed_again: Option<&str>) -> Result<()> {
        let mut rows: std::collections::BTreeMap<String, i64> =
            read_tombstone_sidecar(self.dir()).into_iter().collect();
        rows.extend(self.forgotten_sessions()?.into_iter().map(|(s, t)| (s, t.timestamp_millis())));
        if let Some(s) = indexed_again {
            rows.remove(s);
        }
        let path = self.dir().join(TOMBSTONE_SIDECAR);
        let tmp = self.dir().join(format!("{TOMBSTONE_SIDECAR}.tmp"));
        let text = serde_json::to_vec(&rows).map_err(|e| Error::io(&path, std::io::Error::other(e)))?;
        std::fs::write(&tmp, text)
            .and_then(|_| std::fs::File::open(&tmp)?.sync_all())
            .map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))
    }

    /// Whether a session was forgotten (and not indexed again since with `--force`): its
    /// tombstone is in the store or in `forgotten.json` beside it, whatever happened to the
    /// other (a store rebuilt from what could be read keeps the file's).
    pub fn is_forgotten(&self, session_id: &str) -> Result<bool> {
        let tx = self.db.begin_read()?;
        if tx.open_table(FORGOTTEN)?.get(session_id)?.is_some() {
            return Ok(true);
        }
        Ok(read_tombstone_sidecar(self.dir()).iter().any(|(s, _)| s == session_id))
    }

    /// Writes tombstones read back from a damaged store ([`Index::repair`]).
    pub(crate) fn restore_tombstones(&self, rows: &[(String, i64)]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let _w = self.write_lock.locked();
        let tx = self.db.begin_write()?;
        {
            let mut t = tx.open_table(FORGOTTEN)?;
            for (session, at) in rows {
                t.insert(session.as_str(), *at)?;
            }
        }
        tx.commit()?;
        self.write_tombstone_sidecar(None)
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
