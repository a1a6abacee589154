//! Repairing a collection whose store is damaged beyond what redb repairs on its own.
//!
//! [`Index::repair`] moves the damaged directory aside (it is kept, renamed
//! `<name>.damaged-<unix seconds>`), reads back every row it still can (each read guarded: redb
//! panics on some damaged pages), and builds a fresh collection from what it read: documents
//! (messages, decisions, summaries; their vectors come from the salvaged embedding cache or
//! the model), imported conversations with their headers, forgotten-session tombstones, and
//! the project's identity. Ingest fingerprints are not carried over, so the next `index` run
//! reads every transcript that still exists again and replaces its sessions whole. The report
//! lists what could not be recovered.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::collection::SessionWrite;
use crate::doc::Document;
use crate::durable::{sync_dir, write_synced};
use crate::error::{Error, Result};
use crate::index::{CollectionInfo, Index};
use crate::store::salvage::salvage;

/// What [`Index::repair`] recovered and what it could not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RepairReport {
    /// The collection.
    pub collection: String,
    /// Where the damaged files were moved (kept for the user to inspect or delete).
    pub moved_to: PathBuf,
    /// Documents read back and written to the fresh collection.
    pub documents: usize,
    /// Sessions those documents belong to.
    pub sessions: usize,
    /// Imported conversations whose header was read back.
    pub imports: usize,
    /// Forgotten-session tombstones read back.
    pub tombstones: usize,
    /// Embedding-cache rows read back (they spare the model work).
    pub cache_rows: usize,
    /// Rows that could not be read, by table.
    pub unreadable: BTreeMap<String, usize>,
    /// Sessions the damaged store listed whose documents could not be read: they come back only
    /// if their transcript still exists (the next `convdex index`).
    pub sessions_unread: Vec<String>,
}

/// What a repair adds to a collection's directory name when it moves the damaged files aside
/// (then the time, in Unix seconds).
pub const SET_ASIDE: &str = ".damaged-";

/// A repair under way: written (and synced) in the data directory, beside the collection,
/// before the damaged files move aside, and removed once the fresh collection is complete. A
/// repair killed in between leaves it: the collection then refuses to open (nothing half
/// rebuilt is read as whole) until the next repair starts again from the files kept aside.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Repairing {
    tenant: String,
    project: String,
    moved_to: PathBuf,
}

fn repairing_file(root: &Path, name: &str) -> PathBuf {
    root.join(format!("{name}{REPAIRING}"))
}

/// What the mark of a repair under way adds to the collection's name.
const REPAIRING: &str = ".repairing";

fn read_repairing(path: &Path) -> Option<Repairing> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Whether a repair of collection `name` was interrupted (see [`Index::repair`]).
pub(crate) fn repair_interrupted(root: &Path, name: &str) -> bool {
    repairing_file(root, name).exists()
}

/// The collections whose repair was interrupted, as [`Index::collections`] lists them (their
/// directory may be missing: the kill came before the fresh one was made).
pub(crate) fn interrupted_repairs(root: &Path) -> Vec<CollectionInfo> {
    let Ok(rd) = std::fs::read_dir(root) else { return Vec::new() };
    rd.flatten()
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            let name = file.strip_suffix(REPAIRING)?.to_string();
            let r = read_repairing(&e.path())?;
            Some(CollectionInfo {
                tenant: r.tenant,
                project: r.project,
                dir: root.join(&name),
                name,
                project_path: None,
            })
        })
        .collect()
}

/// Damaged files a repair moved aside, kept until the user deletes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetAside {
    /// The directory.
    pub dir: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
}

impl Index {
    /// The damaged files repairs moved aside in this data directory (never listed as
    /// collections), by name.
    pub fn set_aside(&self) -> Result<Vec<SetAside>> {
        let rd = std::fs::read_dir(self.root()).map_err(|e| Error::io(self.root(), e))?;
        let mut out: Vec<SetAside> = rd
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(SET_ASIDE) && e.path().is_dir())
            .map(|e| SetAside { bytes: crate::collection::read::dir_size(&e.path()), dir: e.path() })
            .collect();
        out.sort_by(|a, b| a.dir.cmp(&b.dir));
        Ok(out)
    }

    /// Rebuilds a collection whose store is damaged: moves it aside, reads back every row it
    /// still can (documents, imported conversations, tombstones, cached embeddings) and builds a
    /// fresh collection from them (see [`RepairReport`]).
    /// The collection must not be open in this process; another process holding it is waited
    /// for like any open. Run `index` afterwards to read the project's transcripts again.
    pub fn repair(&self, info: &CollectionInfo) -> Result<RepairReport> {
        let dir = self.root().join(&info.name);
        if self.is_open(&info.name) {
            return Err(Error::InUse { path: dir, holder: format!("{} (this process)", std::process::id()) });
        }
        let mark = repairing_file(self.root(), &info.name);
        let moved_to = match read_repairing(&mark) {
            // An earlier repair was killed or failed: what it built came from the files it kept
            // aside (and the transcripts), so it is dropped and the repair starts again.
            Some(r) if r.moved_to.join("data.redb").exists() => {
                if dir.exists() {
                    let _lock = crate::collection::acquire_lock(&dir, self.options().collection.lock_wait)?;
                    std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                }
                r.moved_to
            }
            _ => {
                let stamp = chrono::Utc::now().timestamp();
                let moved_to = self.root().join(format!("{}{SET_ASIDE}{stamp}", info.name));
                let r = Repairing { tenant: info.tenant.clone(), project: info.project.clone(), moved_to };
                let text = serde_json::to_vec(&r).map_err(|e| Error::io(&mark, std::io::Error::other(e)))?;
                write_synced(&mark, &text)?;
                sync_dir(self.root());
                let _lock = crate::collection::acquire_lock(&dir, self.options().collection.lock_wait)?;
                std::fs::rename(&dir, &r.moved_to).map_err(|e| Error::io(&dir, e))?;
                sync_dir(self.root());
                r.moved_to
            }
        };
        let mut s = salvage(&moved_to.join("data.redb"));
        // Records a newer convdex wrote are not damage: rebuilding without them would lose
        // them. The collection goes back where it was, untouched.
        if let Some(found) = s.newer {
            std::fs::rename(&moved_to, &dir).map_err(|e| Error::io(&moved_to, e))?;
            std::fs::remove_file(&mark).map_err(|e| Error::io(&mark, e))?;
            return Err(Error::FormatVersion {
                what: "a document of this collection",
                found,
                supported: crate::store::codec::DOCUMENT_VERSION.into(),
            });
        }
        // A store that is not this collection's (another collection's file copied over it):
        // nothing in it belongs here; the transcripts bring the collection's sessions back.
        if s.meta.as_ref().is_some_and(|m| m.tenant != info.tenant || m.project != info.project) {
            s = crate::store::salvage::Salvage {
                unreadable: [("another collection's store".to_string(), 1)].into(),
                ..Default::default()
            };
        }
        // Tombstones also live beside the store: a forgotten session must stay forgotten even
        // when the store is unreadable.
        for (session, at) in crate::collection::forget::read_tombstone_sidecar(&moved_to) {
            if !s.tombstones.iter().any(|(x, _)| *x == session) {
                s.tombstones.push((session, at));
            }
        }
        let meta = s.meta.clone().unwrap_or_default();
        let coll = self.open_repairing(&info.tenant, &info.project, meta.project_path.as_deref())?;
        if meta.project_path.is_some() || meta.last_indexed_at_ms.is_some() {
            coll.update_meta(|m| {
                m.project_path = meta.project_path.clone();
                m.last_indexed_at_ms = meta.last_indexed_at_ms;
            })?;
        }
        let cache_rows = coll.restore_cache(&s.cache)?;
        let mut by_session: BTreeMap<&str, Vec<Document>> = BTreeMap::new();
        for d in &s.docs {
            by_session.entry(d.session_id.as_str()).or_default().push(d.clone());
        }
        let imports: BTreeMap<&str, &Vec<u8>> =
            s.imports.iter().filter_map(|(k, v)| k.strip_prefix("import:").map(|id| (id, v))).collect();
        for (session, docs) in &by_session {
            coll.write_session(SessionWrite {
                session_id: session,
                replace: true,
                docs,
                state: imports.get(session).map(|h| (format!("import:{session}"), (*h).clone())),
                unforget: false,
                defer_vectors: false,
            })?;
        }
        coll.restore_tombstones(&s.tombstones)?;
        coll.flush()?;
        drop(coll);
        // Complete: the collection opens again.
        std::fs::remove_file(&mark).map_err(|e| Error::io(&mark, e))?;
        sync_dir(self.root());
        let recovered: BTreeSet<&str> = by_session.keys().copied().collect();
        Ok(RepairReport {
            collection: info.name.clone(),
            moved_to,
            documents: s.docs.len(),
            sessions: by_session.len(),
            imports: imports.len(),
            tombstones: s.tombstones.len(),
            cache_rows,
            unreadable: s.unreadable,
            sessions_unread: s.sessions_listed.iter().filter(|x| !recovered.contains(x.as_str())).cloned().collect(),
        })
    }
}

impl std::fmt::Display for RepairReport {
    /// What was recovered, in one paragraph.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "repaired {}: {} documents of {} sessions, {} imported conversations, {} forgotten-session \
             tombstones and {} cached embeddings recovered; damaged files kept in {}",
            self.collection,
            self.documents,
            self.sessions,
            self.imports,
            self.tombstones,
            self.cache_rows,
            self.moved_to.display()
        )?;
        if !self.unreadable.is_empty() {
            write!(f, "; unreadable rows: {:?}", self.unreadable)?;
        }
        if !self.sessions_unread.is_empty() {
            write!(
                f,
                "; {} sessions could not be read and come back only if their transcript still exists \
                 (run `convdex index`)",
                self.sessions_unread.len()
            )?;
        }
        Ok(())
    }
}
