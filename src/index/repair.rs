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

use redb::{ReadableDatabase, ReadableMultimapTable, ReadableTable};
use serde::Serialize;

use crate::collection::{CollectionMeta, SessionWrite};
use crate::doc::Document;
use crate::error::{Error, Result};
use crate::index::{CollectionInfo, Index};
use crate::store::codec;
use crate::store::tables::*;

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

/// Rows read back from a damaged store.
#[derive(Default)]
struct Salvage {
    meta: Option<CollectionMeta>,
    docs: Vec<Document>,
    imports: Vec<(String, Vec<u8>)>,
    tombstones: Vec<(String, i64)>,
    cache: Vec<(u128, Vec<u8>)>,
    sessions_listed: BTreeSet<String>,
    unreadable: BTreeMap<String, usize>,
}

/// Runs one read, turning a panic of the storage engine into `None`.
fn guarded<T>(f: impl FnOnce() -> Option<T>) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok().flatten()
}

/// Offset of redb's "god byte" (after the 9-byte magic number) and its recovery-required flag:
/// set, the next open rebuilds the allocator state by walking every table instead of trusting
/// the saved one (which is what a damaged header page usually breaks).
const GOD_BYTE: u64 = 9;
const RECOVERY_REQUIRED: u8 = 2;

fn salvage(path: &Path) -> Salvage {
    if let Some(db) = guarded(|| redb::ReadOnlyDatabase::open(path).ok()) {
        return read_rows(&db);
    }
    // The saved allocator state may be what is damaged: let redb recover on a copy.
    let copy = path.with_extension("redb.salvage");
    let recovered = std::fs::copy(path, &copy).is_ok() && set_recovery_flag(&copy).is_ok();
    let db = recovered.then(|| guarded(|| redb::Database::create(&copy).ok())).flatten();
    let s = match db {
        Some(db) => read_rows(&db),
        None => Salvage { unreadable: [("whole file".to_string(), 1)].into(), ..Default::default() },
    };
    let _ = std::fs::remove_file(&copy);
    s
}

fn set_recovery_flag(path: &Path) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new().read(true).write(true).open(path)?;
    let mut b = [0u8];
    f.seek(SeekFrom::Start(GOD_BYTE))?;
    f.read_exact(&mut b)?;
    f.seek(SeekFrom::Start(GOD_BYTE))?;
    f.write_all(&[b[0] | RECOVERY_REQUIRED])?;
    f.sync_all()
}

fn read_rows(db: &impl ReadableDatabase) -> Salvage {
    let mut s = Salvage::default();
    let miss = |s: &mut Salvage, table: &str| *s.unreadable.entry(table.to_string()).or_default() += 1;
    s.meta = guarded(|| crate::store::meta::read_meta(db).ok());
    if s.meta.is_none() {
        miss(&mut s, "meta");
    }
    // Documents one by one, by internal id, so that one bad page costs only its rows.
    let next_id = guarded(|| {
        let tx = db.begin_read().ok()?;
        let t = tx.open_table(META).ok()?;
        let v = t.get("next_doc_id").ok()??;
        v.value().try_into().ok().map(u64::from_le_bytes)
    })
    .or_else(|| guarded(|| db.begin_read().ok()?.open_table(DOCS).ok()?.last().ok()?.map(|(k, _)| k.value() + 1)))
    .unwrap_or(0);
    for id in 1..next_id {
        let got = guarded(|| {
            let tx = db.begin_read().ok()?;
            let t = tx.open_table(DOCS).ok()?;
            let v = t.get(id).ok()?;
            Some(v.map(|v| v.value().to_vec()))
        });
        match got {
            Some(Some(bytes)) => match codec::decode::<Document>("document", &bytes) {
                Ok(d) => s.docs.push(d),
                Err(_) => miss(&mut s, "docs"),
            },
            Some(None) => {}
            None => miss(&mut s, "docs"),
        }
    }
    // Small tables: whole, or as far as they read.
    let rows = |table: redb::TableDefinition<'static, &'static str, &'static [u8]>| {
        let mut out = Vec::new();
        let complete = guarded(|| {
            let tx = db.begin_read().ok()?;
            let t = tx.open_table(table).ok()?;
            for r in t.iter().ok()? {
                let (k, v) = r.ok()?;
                out.push((k.value().to_string(), v.value().to_vec()));
            }
            Some(())
        })
        .is_some();
        (out, complete)
    };
    let (sessions, complete) = rows(SESSIONS);
    if !complete {
        miss(&mut s, "sessions");
    }
    s.imports = sessions.into_iter().filter(|(k, _)| k.starts_with("import:")).collect();
    let mut tombstones = Vec::new();
    let complete = guarded(|| {
        let tx = db.begin_read().ok()?;
        for r in tx.open_table(FORGOTTEN).ok()?.iter().ok()? {
            let (k, v) = r.ok()?;
            tombstones.push((k.value().to_string(), v.value()));
        }
        Some(())
    })
    .is_some();
    s.tombstones = tombstones;
    if !complete {
        miss(&mut s, "forgotten");
    }
    let mut cache = Vec::new();
    let complete = guarded(|| {
        let tx = db.begin_read().ok()?;
        for r in tx.open_table(EMBED_CACHE).ok()?.iter().ok()? {
            let (k, v) = r.ok()?;
            cache.push((k.value(), v.value().to_vec()));
        }
        Some(())
    })
    .is_some();
    s.cache = cache;
    if !complete {
        miss(&mut s, "embed_cache");
    }
    let mut listed = BTreeSet::new();
    let complete = guarded(|| {
        let tx = db.begin_read().ok()?;
        for r in tx.open_multimap_table(IDX_SESSION).ok()?.iter().ok()? {
            listed.insert(r.ok()?.0.value().to_string());
        }
        Some(())
    })
    .is_some();
    s.sessions_listed = listed;
    if !complete {
        miss(&mut s, "idx_session");
    }
    s
}

impl Index {
    /// Rebuilds a collection whose store is damaged (see the [module documentation](self)).
    /// The collection must not be open in this process; another process holding it is waited
    /// for like any open. Run `index` afterwards to read the project's transcripts again.
    pub fn repair(&self, info: &CollectionInfo) -> Result<RepairReport> {
        let dir = self.root().join(&info.name);
        if self.is_open(&info.name) {
            return Err(Error::InUse { path: dir, holder: format!("{} (this process)", std::process::id()) });
        }
        let stamp = chrono::Utc::now().timestamp();
        let moved_to = self.root().join(format!("{}.damaged-{stamp}", info.name));
        {
            let _lock = crate::collection::acquire_lock(&dir, self.options().collection.lock_wait)?;
            std::fs::rename(&dir, &moved_to).map_err(|e| Error::io(&dir, e))?;
        }
        let mut s = salvage(&moved_to.join("data.redb"));
        // Tombstones also live beside the store: a forgotten session must stay forgotten even
        // when the store is unreadable.
        for (session, at) in crate::collection::forget::read_tombstone_sidecar(&moved_to) {
            if !s.tombstones.iter().any(|(x, _)| *x == session) {
                s.tombstones.push((session, at));
            }
        }
        let meta = s.meta.clone().unwrap_or_default();
        let coll = self.collection_with(&info.tenant, &info.project, meta.project_path.as_deref())?;
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
            })?;
        }
        coll.restore_tombstones(&s.tombstones)?;
        coll.flush()?;
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
