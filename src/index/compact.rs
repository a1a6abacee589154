//! Compaction: no byte of deleted documents survives in a collection's files. [`Index::compact`]
//! rewrites the store from its live rows ([`crate::store::compact`]) and deletes the derived
//! indexes, which the next open rebuilds from it. A `forget` marks the collection first, so an
//! interrupted one is finished by the next open.

use std::path::Path;

use serde::Serialize;

use crate::collection::acquire_lock;
use crate::collection::read::dir_size;
use crate::error::{Error, Result};
use crate::index::{Index, collection_name, validate_name};
pub(crate) use crate::store::compact::compaction_pending;

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

/// Rewrites the store of the (closed) collection in `dir` from its live rows and deletes its
/// derived indexes, which the next open rebuilds; then clears the pending mark. Safe to run
/// again after an interruption at any point.
pub(crate) fn compact_dir(dir: &Path, lock_wait: std::time::Duration) -> Result<()> {
    let _lock = acquire_lock(dir, lock_wait)?;
    match std::panic::catch_unwind(|| crate::store::compact::rewrite_store(dir)) {
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
    let marker = dir.join(crate::store::compact::COMPACT_PENDING);
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
