//! A collection: one project's documents in redb, their vectors in an HNSW graph, and the
//! embedder that fills both. The only place that combines store, ann and embed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use redb::{Database, ReadableDatabase, ReadableMultimapTable, ReadableTable, ReadableTableMetadata};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::ann::{self, Ann, HnswParams, LoadFailure};
use crate::doc::{DocKind, Document};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::store::seal::{Seal, panic_message};
use crate::store::tables::*;
use crate::store::{self, codec};

/// Version of the collection layout (tables, key encodings). Stored in `meta`.
pub const SCHEMA_VERSION: u32 = 1;

/// Options of a collection. Every field documents its default.
#[derive(Clone)]
pub struct CollectionOptions {
    /// HNSW parameters. Default: [`HnswParams::default`].
    pub hnsw: HnswParams,
    /// A filtered search whose candidates hold at most this many documents (or at most
    /// [`CollectionOptions::exact_fraction`] of the collection) scans them exactly instead of
    /// walking the graph. Default: 2,048.
    pub exact_threshold: usize,
    /// Share of the collection below which a filtered search scans its candidates exactly;
    /// above it the graph is walked without the filter, over-fetching, and the results are
    /// filtered. Default: 0.12 (measured at 100k documents: hnsw_rs's in-traversal filter
    /// cannot stop early and took over 100 ms at 10 % selectivity, the exact scan under 10 ms).
    pub exact_fraction: f32,
    /// Rebuild the graph when this share of its vectors belongs to deleted documents.
    /// Default: 0.25.
    pub rebuild_tombstone_ratio: f32,
    /// How long to wait for another process to release the collection before giving up with
    /// [`Error::InUse`]. Default: 3 s.
    pub lock_wait: Duration,
    /// Tokens per chunk when splitting long documents (2 fewer than the model's limit, for its
    /// special tokens). Default: 254.
    pub chunk_tokens: usize,
    /// Tokens shared by consecutive chunks. Default: 32.
    pub chunk_overlap: usize,
    /// Keep a lexical (BM25) index next to the vector index, for lexical and hybrid search.
    /// Without it only semantic search is available. Default: true.
    pub lexical_index: bool,
}

impl Default for CollectionOptions {
    fn default() -> Self {
        CollectionOptions {
            hnsw: HnswParams::default(),
            exact_threshold: 2048,
            exact_fraction: 0.12,
            rebuild_tombstone_ratio: 0.25,
            lock_wait: Duration::from_secs(3),
            chunk_tokens: 254,
            chunk_overlap: 32,
            lexical_index: true,
        }
    }
}

impl std::fmt::Debug for CollectionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollectionOptions")
            .field("hnsw", &self.hnsw)
            .field("exact_threshold", &self.exact_threshold)
            .field("lock_wait", &self.lock_wait)
            .finish_non_exhaustive()
    }
}

/// What happened to the vector index when the collection was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VectorIndexState {
    /// The persisted graph matched the store and was loaded as is. Its vectors are read at
    /// once; the HNSW links are read on a background thread (seconds at 100k vectors), and
    /// searches use the exact scan until they are in.
    Loaded,
    /// The persisted graph was older than the store; missing vectors were added and deleted
    /// ones tombstoned.
    CaughtUp {
        /// Generation the graph reflected.
        from_generation: u64,
        /// Store generation.
        to_generation: u64,
        /// Vectors added.
        added: usize,
        /// Vectors tombstoned.
        removed: usize,
    },
    /// The graph was rebuilt from the stored vectors.
    Rebuilt(RebuildReason),
}

/// What happened to the lexical index when the collection was opened: the same cases as the
/// vector index (documents instead of vectors; never loaded in the background).
pub type LexicalIndexState = VectorIndexState;

/// Why the graph was rebuilt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RebuildReason {
    /// New collection, or graph files missing.
    Missing,
    /// Graph files unreadable or failing their checksum.
    Corrupt(String),
    /// The graph claims a newer generation than the store.
    Stale {
        /// Generation of the graph files.
        graph: u64,
        /// Generation of the store.
        store: u64,
    },
    /// Too many tombstones.
    Tombstones,
}

/// Collection metadata (seed `ConversationIndexMetadata`), kept true by the writers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CollectionMeta {
    /// Tenant name.
    pub tenant: String,
    /// Project name.
    pub project: String,
    /// Project path on disk, when known.
    pub project_path: Option<String>,
    /// Last successful indexing run (ms since epoch).
    pub last_indexed_at_ms: Option<i64>,
}

/// One session written by [`Collection::write_session`].
#[derive(Debug)]
pub(crate) struct SessionWrite<'a> {
    /// The session.
    pub(crate) session_id: &'a str,
    /// Delete every stored document of the session first.
    pub(crate) replace: bool,
    /// Documents to add (or replace, by id).
    pub(crate) docs: &'a [Document],
    /// Ingest state to store under this key of the `sessions` table.
    pub(crate) state: Option<(String, Vec<u8>)>,
    /// Remove the session's tombstone.
    pub(crate) unforget: bool,
}

/// Result of [`Collection::add`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddReport {
    /// Documents written.
    pub documents: usize,
    /// Of those, documents that replaced one with the same id.
    pub replaced: usize,
    /// Vectors written (one per chunk).
    pub chunks: usize,
    /// Chunks embedded by the model.
    pub embedded: usize,
    /// Chunks whose vector came from the embedding cache.
    pub cached: usize,
    /// Store generation after the commit.
    pub generation: u64,
}

/// Per-collection counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CollectionStats {
    /// Distinct sessions.
    pub sessions: usize,
    /// Message documents.
    pub messages: usize,
    /// Decision documents.
    pub decisions: usize,
    /// Summary documents.
    pub summaries: usize,
    /// Vectors (chunks) stored.
    pub chunks: usize,
    /// Vectors in the graph, deleted ones included.
    pub graph_points: usize,
    /// Store generation.
    pub generation: u64,
    /// Bytes on disk (redb file, graph and lexical index).
    pub bytes_on_disk: u64,
    /// The embedding model that built the collection.
    pub model: String,
    /// When `index` last ran over this collection, if ever.
    pub last_indexed: Option<DateTime<Utc>>,
    /// Sessions forgotten with [`Collection::forget_session`] (indexing skips them).
    pub forgotten_sessions: usize,
}

const META_SCHEMA: &str = "schema_version";
const META_MODEL: &str = "model_id";
const META_DIM: &str = "dimension";
const META_GENERATION: &str = "generation";
const META_NEXT_ID: &str = "next_doc_id";
const META_COLLECTION: &str = "collection";

/// One `<tenant>_<project>_conversations` collection. `Send + Sync`: searches run while a batch
/// is being written (redb MVCC for documents; the graph behind a briefly held lock).
pub struct Collection {
    name: String,
    dir: PathBuf,
    pub(crate) db: Database,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) ann: RwLock<Ann>,
    pub(crate) options: CollectionOptions,
    pub(crate) write_lock: Mutex<()>,
    dirty: AtomicBool,
    opened: VectorIndexState,
    pub(crate) lexical: Option<crate::lexical::Lexical>,
    lexical_opened: LexicalIndexState,
    /// After the store and the lexical index (fields drop in order), before the lock.
    seal: Seal,
    _lock: std::fs::File,
}

impl std::fmt::Debug for Collection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collection").field("name", &self.name).field("dir", &self.dir).finish_non_exhaustive()
    }
}

pub(crate) fn acquire_lock(dir: &Path, wait: Duration) -> Result<std::fs::File> {
    use std::io::{Read, Seek, Write};
    let path = dir.join("LOCK");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    let start = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < wait => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Error::InUse {
                    path: dir.to_path_buf(),
                    holder: if holder.is_empty() { "unknown".into() } else { holder.into() },
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
    }
    let _ = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| write!(file, "{}", std::process::id()));
    Ok(file)
}

impl Collection {
    /// Opens (creating if needed) the collection stored in `dir`.
    pub(crate) fn open(
        dir: &Path,
        name: &str,
        meta: CollectionMeta,
        embedder: Arc<dyn Embedder>,
        options: CollectionOptions,
    ) -> Result<Collection> {
        let init = meta.clone();
        let emb = embedder.clone();
        Self::open_with(dir, name, meta, embedder, options, true, move |path| {
            if !path.exists() {
                // Create atomically: a fresh database is initialised under another name and
                // renamed into place, so a crash during creation never leaves a half-written
                // file that no later open could read.
                let fresh = path.with_extension("redb.new");
                let _ = std::fs::remove_file(&fresh);
                {
                    let db = Database::builder().create(&fresh)?;
                    store::create_tables(&db)?;
                    check_or_init_meta(&db, emb.as_ref(), &init)?;
                }
                std::fs::rename(&fresh, path).map_err(|e| Error::io(path, e))?;
            }
            // A file changed since convdex last closed it cleanly (a crash, a kill, a change from
            // outside) is verified page by page while opening: damage is then an error instead
            // of a panic of a plain open, and what redb can repair is repaired.
            let verify = !Seal::new(path.parent().unwrap_or(Path::new(".")), true).intact();
            Ok(Database::builder().set_check_integrity_on_open(verify).create(path)?)
        })
    }

    /// Like [`Collection::open`] on a custom redb storage backend (fault injection, memory).
    #[doc(hidden)]
    pub fn open_with_backend<B: redb::StorageBackend>(
        dir: &Path,
        meta: CollectionMeta,
        embedder: Arc<dyn Embedder>,
        options: CollectionOptions,
        backend: B,
    ) -> Result<Collection> {
        let name = format!("{}_{}_conversations", meta.tenant, meta.project);
        let mut backend = Some(backend);
        Self::open_with(dir, &name, meta, embedder, options, false, move |_| {
            let b = backend.take().expect("backend used once");
            Ok(Database::builder().create_with_backend(b)?)
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn open_with(
        dir: &Path,
        name: &str,
        meta: CollectionMeta,
        embedder: Arc<dyn Embedder>,
        options: CollectionOptions,
        on_disk: bool,
        make_db: impl FnOnce(&Path) -> Result<Database>,
    ) -> Result<Collection> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let lock = acquire_lock(dir, options.lock_wait)?;
        let seal = Seal::new(dir, on_disk);
        let path = dir.join("data.redb");
        // redb panics on some damaged pages: a damaged collection is an error, never a crash.
        let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Self::open_locked(dir, name, meta, embedder, options, make_db, seal, lock)
        }));
        match opened {
            Ok(r) => r,
            Err(p) => {
                Seal::new(dir, on_disk).poison();
                Err(Error::Damaged { path, reason: panic_message(p.as_ref()) })
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn open_locked(
        dir: &Path,
        name: &str,
        meta: CollectionMeta,
        embedder: Arc<dyn Embedder>,
        options: CollectionOptions,
        make_db: impl FnOnce(&Path) -> Result<Database>,
        seal: Seal,
        lock: std::fs::File,
    ) -> Result<Collection> {
        let path = dir.join("data.redb");
        // Files as convdex left them: no check needed (`make_db` verifies otherwise).
        let intact = seal.intact();
        let db = match make_db(&path) {
            Err(Error::Storage(redb::Error::DatabaseAlreadyOpen)) => {
                return Err(Error::InUse { path: dir.to_path_buf(), holder: "unknown".into() });
            }
            Err(Error::Storage(e)) => {
                seal.poison();
                return Err(Error::Damaged { path, reason: e.to_string() });
            }
            other => other?,
        };
        store::create_tables(&db)?;
        check_or_init_meta(&db, embedder.as_ref(), &meta)?;
        let generation = read_generation(&db)?;
        let vdir = dir.join("vectors");
        let dim = embedder.dim();
        let (ann, opened) = match Ann::load(&vdir, dim, options.hnsw) {
            Ok((_, g)) if g > generation => (
                rebuild(&db, dim, options.hnsw)?,
                VectorIndexState::Rebuilt(RebuildReason::Stale { graph: g, store: generation }),
            ),
            // Same generation: the dump reflects exactly the committed store.
            Ok((ann, g)) if g == generation => (ann, VectorIndexState::Loaded),
            Ok((mut ann, g)) => {
                let (added, removed) = reconcile(&db, &mut ann)?;
                (ann, VectorIndexState::CaughtUp { from_generation: g, to_generation: generation, added, removed })
            }
            Err(LoadFailure::Missing) => {
                (rebuild(&db, dim, options.hnsw)?, VectorIndexState::Rebuilt(RebuildReason::Missing))
            }
            Err(LoadFailure::Corrupt(why)) => {
                (rebuild(&db, dim, options.hnsw)?, VectorIndexState::Rebuilt(RebuildReason::Corrupt(why)))
            }
        };
        let (lexical, lexical_opened) = if options.lexical_index {
            let (l, s) = open_lexical(&db, &dir.join("lexical"), generation, !intact)?;
            (Some(l), s)
        } else {
            (None, VectorIndexState::Rebuilt(RebuildReason::Missing))
        };
        let coll = Collection {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            db,
            embedder,
            ann: RwLock::new(ann),
            options,
            write_lock: Mutex::new(()),
            dirty: AtomicBool::new(false),
            opened,
            lexical,
            lexical_opened,
            seal,
            _lock: lock,
        };
        if coll.opened != VectorIndexState::Loaded {
            coll.dirty.store(true, Ordering::SeqCst);
            coll.flush()?;
        }
        Ok(coll)
    }

    /// Runs `f` on this collection, turning a panic of the storage engine (damaged pages that
    /// the open-time check did not see) into [`Error::Damaged`]; the collection is then not
    /// sealed, so the next open checks and repairs it.
    pub fn guarded<T>(&self, f: impl FnOnce(&Collection) -> Result<T>) -> Result<T> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self))) {
            Ok(Err(e @ Error::Damaged { .. })) => {
                self.seal.poison();
                Err(e)
            }
            Ok(r) => r,
            Err(p) => {
                self.seal.poison();
                Err(Error::Damaged { path: self.dir.join("data.redb"), reason: panic_message(p.as_ref()) })
            }
        }
    }

    /// `<tenant>_<project>_conversations`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The collection's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What happened to the vector index on open.
    pub fn vector_index_state(&self) -> &VectorIndexState {
        &self.opened
    }

    /// What happened to the lexical index on open (`Rebuilt(Missing)` when
    /// [`CollectionOptions::lexical_index`] is off).
    pub fn lexical_index_state(&self) -> &LexicalIndexState {
        &self.lexical_opened
    }

    /// The embedder in use.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// Collection metadata.
    pub fn meta(&self) -> Result<CollectionMeta> {
        read_meta(&self.db)
    }

    /// Updates the collection metadata in its own transaction.
    pub fn update_meta(&self, f: impl FnOnce(&mut CollectionMeta)) -> Result<()> {
        let _w = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let tx = self.db.begin_write()?;
        {
            let mut t = tx.open_table(META)?;
            let mut meta: CollectionMeta = match t.get(META_COLLECTION)? {
                Some(v) => codec::decode("collection metadata", v.value())?,
                None => CollectionMeta::default(),
            };
            f(&mut meta);
            t.insert(META_COLLECTION, codec::encode(&meta).as_slice())?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Adds (or replaces, by id) a batch of documents in one write transaction: after it
    /// returns the batch survives a crash; if it fails, none of it exists.
    pub fn add(&self, docs: &[Document]) -> Result<AddReport> {
        let mut report = AddReport::default();
        if docs.is_empty() {
            report.generation = read_generation(&self.db)?;
            return Ok(report);
        }
        // 1. Chunk and embed outside any lock (cache first).
        let prepared = self.prepare(docs, &mut report)?;
        self.commit_prepared(docs, prepared, report, None)
    }

    /// Writes a session in one transaction: optionally deletes every document the session has
    /// (`replace`), adds `docs` (replacing by id), stores its ingest state and removes its
    /// tombstone (`unforget`). A process killed at any point leaves either the session as it
    /// was or the session as written, never a mix (and never new documents with old state).
    pub(crate) fn write_session(&self, w: SessionWrite<'_>) -> Result<AddReport> {
        let mut report = AddReport::default();
        let prepared = self.prepare(w.docs, &mut report)?;
        let docs = w.docs;
        self.commit_prepared(docs, prepared, report, Some(w))
    }

    /// Adds (or replaces) documents whose vectors were computed elsewhere, one unit vector of
    /// the collection's dimension per document (a single chunk). Same transaction contract as
    /// [`Collection::add`]. Used for bulk loads and benchmarks.
    pub fn add_embedded(&self, docs: &[Document], vectors: &[Vec<f32>]) -> Result<AddReport> {
        if docs.len() != vectors.len() {
            return Err(Error::InvalidArgument(format!(
                "{} documents but {} vectors; give one vector per document",
                docs.len(),
                vectors.len()
            )));
        }
        let dim = self.embedder.dim();
        let mut prepared = Vec::with_capacity(docs.len());
        for v in vectors {
            if v.len() != dim {
                return Err(Error::DimensionMismatch { expected: dim, got: v.len() });
            }
            let mut v = v.clone();
            crate::embed::normalize(&mut v);
            prepared.push(vec![(0u128, v, false)]);
        }
        self.commit_prepared(docs, prepared, AddReport::default(), None)
    }

    #[allow(clippy::type_complexity)]
    fn commit_prepared(
        &self,
        docs: &[Document],
        prepared: Vec<Vec<(u128, Vec<f32>, bool)>>,
        mut report: AddReport,
        session: Option<SessionWrite<'_>>,
    ) -> Result<AddReport> {
        if docs.is_empty() && session.is_none() {
            report.generation = read_generation(&self.db)?;
            return Ok(report);
        }
        // 2. One write transaction.
        let _w = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let tx = self.db.begin_write()?;
        let mut replaced_ids = Vec::new();
        let mut unforgot = false;
        if let Some(w) = &session {
            if w.replace {
                for id in session_ids(&tx, w.session_id)? {
                    if store::remove_document(&tx, id)?.is_some() {
                        replaced_ids.push(id);
                    }
                }
            }
            if let Some((key, bytes)) = &w.state {
                tx.open_table(SESSIONS)?.insert(key.as_str(), bytes.as_slice())?;
            }
            if w.unforget {
                unforgot = tx.open_table(FORGOTTEN)?.remove(w.session_id)?.is_some();
            }
        }
        let mut new_vectors: Vec<(u64, Vec<f32>)> = Vec::new();
        let mut lexical_docs: Vec<(u64, String)> = Vec::new();
        let generation;
        {
            let mut meta = tx.open_table(META)?;
            let mut next_id = get_u64(&meta, META_NEXT_ID)?.unwrap_or(1);
            let uuids = tx.open_table(UUIDS)?;
            let mut old = Vec::new();
            for doc in docs {
                if let Some(id) = uuids.get(doc.id.as_u128())? {
                    old.push(id.value());
                }
            }
            drop(uuids);
            for id in old {
                if store::remove_document(&tx, id)?.is_some() {
                    replaced_ids.push(id);
                }
            }
            let mut vectors = tx.open_table(VECTORS)?;
            let mut cache = tx.open_table(EMBED_CACHE)?;
            // The same id twice in one batch: the last one wins.
            let last: HashMap<Uuid, usize> = docs.iter().enumerate().map(|(i, d)| (d.id, i)).collect();
            for (i, (doc, chunks)) in docs.iter().zip(prepared).enumerate() {
                if last[&doc.id] != i {
                    continue;
                }
                let id = next_id;
                next_id += 1;
                store::put_document(&tx, id, doc)?;
                lexical_docs.push((id, lexical_text(doc)));
                for (c, (key, v, fresh)) in chunks.into_iter().enumerate() {
                    let did = ann::data_id(id, c as u64);
                    let bytes = codec::vector_bytes(&v);
                    vectors.insert(did, bytes.as_slice())?;
                    if fresh {
                        cache.insert(key, bytes.as_slice())?;
                    }
                    new_vectors.push((did, v));
                }
            }
            report.documents = last.len();
            report.replaced = replaced_ids.len();
            report.chunks = new_vectors.len();
            meta.insert(META_NEXT_ID, next_id.to_le_bytes().as_slice())?;
            generation = get_u64(&meta, META_GENERATION)?.unwrap_or(0) + 1;
            meta.insert(META_GENERATION, generation.to_le_bytes().as_slice())?;
        }
        tx.commit()?;
        report.generation = generation;
        if unforgot {
            self.write_tombstone_sidecar()?;
        }
        // 3. The graph follows the committed store.
        {
            let mut ann = self.ann.write().unwrap_or_else(|e| e.into_inner());
            for id in &replaced_ids {
                ann.tombstone(*id);
            }
            let items: Vec<(u64, &[f32])> = new_vectors.iter().map(|(id, v)| (*id, v.as_slice())).collect();
            ann.insert(&items);
        }
        self.dirty.store(true, Ordering::SeqCst);
        // 4. The lexical index too. Should this fail, the store is committed and the index
        // catches up the next time the collection is opened.
        if let Some(l) = &self.lexical {
            l.apply(&replaced_ids, &lexical_docs, generation)?;
        }
        self.maybe_rebuild_locked()?;
        Ok(report)
    }

    /// The texts embedded for a document, one per chunk, with their embedding-cache keys.
    pub(crate) fn chunk_texts(&self, model: &str, doc: &Document) -> Vec<(u128, String)> {
        if doc.content.trim().is_empty() {
            return Vec::new();
        }
        let offsets = self.embedder.token_offsets(&doc.content);
        let header = embed_header(doc);
        // Leave room for the header's tokens (a date and a name: well under 24).
        let budget =
            if header.is_some() { self.options.chunk_tokens.saturating_sub(24) } else { self.options.chunk_tokens };
        let ranges = crate::text::chunk::split(
            &doc.content,
            &offsets,
            budget.max(16),
            self.options.chunk_overlap,
            ann::MAX_CHUNKS as usize,
        );
        ranges
            .into_iter()
            .map(|(a, b)| {
                let chunk = doc.content.get(a..b).unwrap_or_default();
                let t = match &header {
                    Some(h) => format!("{h}\"{chunk}\""),
                    None => chunk.to_string(),
                };
                (cache_key(model, &t), t)
            })
            .collect()
    }

    /// Chunks each document and finds or computes each chunk's vector.
    /// Returns per document: (cache key, vector, freshly embedded).
    #[allow(clippy::type_complexity)]
    fn prepare(&self, docs: &[Document], report: &mut AddReport) -> Result<Vec<Vec<(u128, Vec<f32>, bool)>>> {
        let model = self.embedder.model_id().to_string();
        let texts: Vec<Vec<(u128, String)>> = docs.iter().map(|d| self.chunk_texts(&model, d)).collect();
        let mut found: HashMap<u128, Vec<f32>> = HashMap::new();
        {
            let tx = self.db.begin_read()?;
            let cache = tx.open_table(EMBED_CACHE)?;
            for (key, _) in texts.iter().flatten() {
                if found.contains_key(key) {
                    continue;
                }
                if let Some(v) = cache.get(*key)? {
                    let v = codec::vector_from_bytes(v.value())?;
                    if v.len() == self.embedder.dim() {
                        found.insert(*key, v);
                    }
                }
            }
        }
        let cached_keys: std::collections::HashSet<u128> = found.keys().copied().collect();
        let mut todo: Vec<(u128, &str)> = Vec::new();
        let mut queued = std::collections::HashSet::new();
        for (key, t) in texts.iter().flatten() {
            if !found.contains_key(key) && queued.insert(*key) {
                todo.push((*key, t.as_str()));
            }
        }
        if !todo.is_empty() {
            let strs: Vec<&str> = todo.iter().map(|(_, t)| *t).collect();
            let vecs = self.embedder.embed(&strs)?;
            for ((key, _), v) in todo.iter().zip(vecs) {
                if v.len() != self.embedder.dim() {
                    return Err(Error::DimensionMismatch { expected: self.embedder.dim(), got: v.len() });
                }
                found.insert(*key, v);
            }
        }
        report.embedded = todo.len();
        let mut out = Vec::with_capacity(texts.len());
        for chunks in texts {
            let mut per = Vec::with_capacity(chunks.len());
            for (key, _) in chunks {
                let v = found[&key].clone();
                let fresh = !cached_keys.contains(&key);
                if !fresh {
                    report.cached += 1;
                }
                per.push((key, v, fresh));
            }
            out.push(per);
        }
        Ok(out)
    }

    /// Deletes every document of a session (one transaction). Returns how many were deleted.
    pub fn delete_session(&self, session_id: &str) -> Result<usize> {
        let _w = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let tx = self.db.begin_write()?;
        let ids = session_ids(&tx, session_id)?;
        self.delete_ids_in(tx, ids)
    }

    /// Deletes documents by id (one transaction). Returns how many existed.
    pub fn delete(&self, ids: &[Uuid]) -> Result<usize> {
        let _w = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let tx = self.db.begin_write()?;
        let internal: Vec<u64> = {
            let t = tx.open_table(UUIDS)?;
            let mut v = Vec::new();
            for id in ids {
                if let Some(i) = t.get(id.as_u128())? {
                    v.push(i.value());
                }
            }
            v
        };
        self.delete_ids_in(tx, internal)
    }

    pub(crate) fn delete_ids_in(&self, tx: redb::WriteTransaction, ids: Vec<u64>) -> Result<usize> {
        let mut n = 0;
        for id in &ids {
            if store::remove_document(&tx, *id)?.is_some() {
                n += 1;
            }
        }
        let mut generation = 0;
        if n > 0 {
            let mut meta = tx.open_table(META)?;
            generation = get_u64(&meta, META_GENERATION)?.unwrap_or(0) + 1;
            meta.insert(META_GENERATION, generation.to_le_bytes().as_slice())?;
        }
        tx.commit()?;
        if n > 0 {
            if let Some(l) = &self.lexical {
                l.apply(&ids, &[], generation)?;
            }
            let mut ann = self.ann.write().unwrap_or_else(|e| e.into_inner());
            for id in &ids {
                ann.tombstone(*id);
            }
            drop(ann);
            self.dirty.store(true, Ordering::SeqCst);
            self.maybe_rebuild_locked()?;
        }
        Ok(n)
    }

    /// Rebuilds the graph when tombstones pass the threshold. The caller holds the write lock,
    /// so the store cannot change meanwhile; searches keep using the old graph until the swap.
    fn maybe_rebuild_locked(&self) -> Result<()> {
        let (dead, total) = {
            let ann = self.ann.read().unwrap_or_else(|e| e.into_inner());
            (ann.tombstoned_points(), ann.points())
        };
        if total > 0 && dead as f32 / total as f32 > self.options.rebuild_tombstone_ratio {
            let fresh = rebuild(&self.db, self.embedder.dim(), self.options.hnsw)?;
            *self.ann.write().unwrap_or_else(|e| e.into_inner()) = fresh;
            self.dirty.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Rebuilds the graph from the stored vectors now.
    pub fn rebuild_vector_index(&self) -> Result<()> {
        let _w = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = rebuild(&self.db, self.embedder.dim(), self.options.hnsw)?;
        *self.ann.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        self.dirty.store(true, Ordering::SeqCst);
        drop(_w);
        self.flush()
    }

    /// Blocks until a persisted graph that is being read in the background (see
    /// [`VectorIndexState::Loaded`]) is ready; until then searches use the exact scan.
    pub fn wait_for_vector_index(&self) {
        if self.ann.read().unwrap_or_else(|e| e.into_inner()).loading() {
            self.ann.write().unwrap_or_else(|e| e.into_inner()).poll(true);
        }
    }

    /// Persists the graph if it changed since the last flush (also done on drop).
    pub fn flush(&self) -> Result<()> {
        if !self.dirty.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let _w = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let generation = read_generation(&self.db)?;
        if self.ann.read().unwrap_or_else(|e| e.into_inner()).loading() {
            self.ann.write().unwrap_or_else(|e| e.into_inner()).poll(true);
        }
        let ann = self.ann.read().unwrap_or_else(|e| e.into_inner());
        let res = ann.dump(&self.dir.join("vectors"), generation);
        if res.is_err() {
            self.dirty.store(true, Ordering::SeqCst);
        }
        res
    }

    /// One document by id.
    pub fn get(&self, id: Uuid) -> Result<Option<Document>> {
        let tx = self.db.begin_read()?;
        let Some(internal) = tx.open_table(UUIDS)?.get(id.as_u128())?.map(|v| v.value()) else {
            return Ok(None);
        };
        get_doc(&tx.open_table(DOCS)?, internal)
    }

    /// Every document of a session, in session order (messages by index, then decisions, then
    /// the summary).
    pub fn session_documents(&self, session_id: &str) -> Result<Vec<Document>> {
        let tx = self.db.begin_read()?;
        let idx = tx.open_multimap_table(IDX_SESSION)?;
        let docs = tx.open_table(DOCS)?;
        let mut out = Vec::new();
        for id in idx.get(session_id)? {
            if let Some(d) = get_doc(&docs, id?.value())? {
                out.push(d);
            }
        }
        out.sort_by_key(|d| d.order_key());
        Ok(out)
    }

    /// Session ids present in the collection, sorted.
    pub fn sessions(&self) -> Result<Vec<String>> {
        let tx = self.db.begin_read()?;
        let idx = tx.open_multimap_table(IDX_SESSION)?;
        let mut out = Vec::new();
        for entry in idx.iter()? {
            let (k, _) = entry?;
            out.push(k.value().to_string());
        }
        Ok(out)
    }

    /// The collection's sessions, decisions, files, topics and errors as a V1 export (see
    /// [`crate::derive::export`]; [`crate::derive::export::encode`] turns it into the layered V2 form).
    pub fn export_v1(&self) -> Result<crate::derive::export::V1> {
        let mut docs = self.documents_of_kind(DocKind::Summary)?;
        docs.extend(self.documents_of_kind(DocKind::Decision)?);
        Ok(crate::derive::export::v1_from_documents(&self.meta()?.project, &docs))
    }

    /// A markdown brief of the latest session (see [`crate::life::handoff`]): what was being
    /// done, decided, open, broken. `None` when the collection has no session summary.
    pub fn handoff(&self) -> Result<Option<String>> {
        let summaries = self.documents_of_kind(DocKind::Summary)?;
        let Some(latest) = crate::derive::life::latest(&summaries) else { return Ok(None) };
        let ids = match &latest.body {
            crate::doc::DocBody::Summary(s) => s.decisions.clone(),
            _ => Vec::new(),
        };
        let mut decisions = Vec::new();
        for id in ids {
            decisions.extend(self.get(id)?);
        }
        Ok(crate::derive::life::handoff(latest, &decisions))
    }

    /// Every document of one kind (unordered).
    pub fn documents_of_kind(&self, kind: DocKind) -> Result<Vec<Document>> {
        let tx = self.db.begin_read()?;
        let idx = tx.open_multimap_table(IDX_KIND)?;
        let docs = tx.open_table(DOCS)?;
        let mut out = Vec::new();
        for id in idx.get(kind.code())? {
            if let Some(d) = get_doc(&docs, id?.value())? {
                out.push(d);
            }
        }
        Ok(out)
    }

    /// Counts and sizes.
    pub fn stats(&self) -> Result<CollectionStats> {
        let tx = self.db.begin_read()?;
        let kinds = tx.open_multimap_table(IDX_KIND)?;
        let count = |k: DocKind| -> Result<usize> { Ok(kinds.get(k.code())?.len() as usize) };
        let sessions = tx.open_multimap_table(IDX_SESSION)?.iter()?.count();
        let ann = self.ann.read().unwrap_or_else(|e| e.into_inner());
        let bytes_on_disk = dir_size(&self.dir);
        let meta = tx.open_table(META)?;
        let model = meta.get(META_MODEL)?.map(|v| String::from_utf8_lossy(v.value()).into_owned()).unwrap_or_default();
        let last_indexed = self.meta()?.last_indexed_at_ms.and_then(DateTime::from_timestamp_millis);
        Ok(CollectionStats {
            model,
            last_indexed,
            forgotten_sessions: tx.open_table(FORGOTTEN)?.len()? as usize,
            sessions,
            messages: count(DocKind::Message)?,
            decisions: count(DocKind::Decision)?,
            summaries: count(DocKind::Summary)?,
            chunks: tx.open_table(VECTORS)?.len()? as usize,
            graph_points: ann.points(),
            generation: get_u64(&tx.open_table(META)?, META_GENERATION)?.unwrap_or(0),
            bytes_on_disk,
        })
    }

    /// Number of live documents.
    pub fn len(&self) -> Result<usize> {
        let tx = self.db.begin_read()?;
        Ok(tx.open_table(DOCS)?.len()? as usize)
    }

    /// True when the collection holds no document.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Store generation (incremented by every committed write).
    pub fn generation(&self) -> Result<u64> {
        read_generation(&self.db)
    }

    /// Marks the last indexing time in the metadata.
    pub fn touch_indexed_at(&self, at: DateTime<Utc>) -> Result<()> {
        self.update_meta(|m| m.last_indexed_at_ms = Some(at.timestamp_millis()))
    }
}

impl Drop for Collection {
    fn drop(&mut self) {
        let flushed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.flush()));
        if flushed.is_err() {
            self.seal.poison();
        }
    }
}

pub(crate) fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => total += dir_size(&e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// What is embedded in front of a message's text when it names its speaker (imported
/// multi-party conversations): `(8 May 2023) Caroline said, "…"`. Measured on LoCoMo, where
/// questions name people and dates (see README). Claude Code messages are embedded as they are.
pub(crate) fn embed_header(doc: &Document) -> Option<String> {
    match &doc.body {
        crate::doc::DocBody::Message(m) => {
            m.speaker.as_ref().map(|s| format!("({}) {s} said, ", doc.timestamp.format("%-d %B %Y")))
        }
        _ => None,
    }
}

pub(crate) fn cache_key(model: &str, text: &str) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(model.as_bytes());
    h.update(&[0]);
    h.update(text.as_bytes());
    h.digest128()
}

/// Internal ids of a session's documents.
pub(crate) fn session_ids(tx: &redb::WriteTransaction, session_id: &str) -> Result<Vec<u64>> {
    let idx = tx.open_multimap_table(IDX_SESSION)?;
    Ok(idx.get(session_id)?.map(|v| v.map(|v| v.value())).collect::<std::result::Result<_, _>>()?)
}

pub(crate) fn get_doc(docs: &impl ReadableTable<u64, &'static [u8]>, id: u64) -> Result<Option<Document>> {
    match docs.get(id)? {
        Some(v) => Ok(Some(codec::decode("document", v.value())?)),
        None => Ok(None),
    }
}

/// The collection metadata stored in `db`.
pub(crate) fn read_meta(db: &impl ReadableDatabase) -> Result<CollectionMeta> {
    let tx = db.begin_read()?;
    let t = tx.open_table(META)?;
    match t.get(META_COLLECTION)? {
        Some(v) => codec::decode("collection metadata", v.value()),
        None => Ok(CollectionMeta::default()),
    }
}

fn get_u64(t: &impl ReadableTable<&'static str, &'static [u8]>, key: &str) -> Result<Option<u64>> {
    Ok(t.get(key)?.and_then(|v| v.value().try_into().ok().map(u64::from_le_bytes)))
}

fn read_generation(db: &Database) -> Result<u64> {
    let tx = db.begin_read()?;
    Ok(get_u64(&tx.open_table(META)?, META_GENERATION)?.unwrap_or(0))
}

fn check_or_init_meta(db: &Database, embedder: &dyn Embedder, meta: &CollectionMeta) -> Result<()> {
    let tx = db.begin_write()?;
    {
        let mut t = tx.open_table(META)?;
        let schema = t.get(META_SCHEMA)?.map(|v| v.value().to_vec());
        match schema {
            None => {
                t.insert(META_SCHEMA, SCHEMA_VERSION.to_le_bytes().as_slice())?;
                t.insert(META_MODEL, embedder.model_id().as_bytes())?;
                t.insert(META_DIM, (embedder.dim() as u64).to_le_bytes().as_slice())?;
                t.insert(META_GENERATION, 0u64.to_le_bytes().as_slice())?;
                t.insert(META_NEXT_ID, 1u64.to_le_bytes().as_slice())?;
                t.insert(META_COLLECTION, codec::encode(meta).as_slice())?;
            }
            Some(bytes) => {
                let found = bytes.as_slice().try_into().map(u32::from_le_bytes).unwrap_or(u32::MAX);
                if found != SCHEMA_VERSION {
                    return Err(Error::FormatVersion { what: "collection", found, supported: SCHEMA_VERSION });
                }
                let stored =
                    t.get(META_MODEL)?.map(|v| String::from_utf8_lossy(v.value()).into_owned()).unwrap_or_default();
                let stored_dim = get_u64(&t, META_DIM)?.unwrap_or(0) as usize;
                if stored != embedder.model_id() || stored_dim != embedder.dim() {
                    return Err(Error::ModelMismatch {
                        stored,
                        stored_dim,
                        configured: embedder.model_id().to_string(),
                        configured_dim: embedder.dim(),
                    });
                }
            }
        }
    }
    tx.commit()?;
    Ok(())
}

/// Every stored vector id, sorted.
fn stored_ids(db: &Database) -> Result<Vec<u64>> {
    let tx = db.begin_read()?;
    let t = tx.open_table(VECTORS)?;
    let mut out = Vec::with_capacity(t.len()? as usize);
    for e in t.iter()? {
        out.push(e?.0.value());
    }
    Ok(out)
}

fn read_vectors(db: &Database, ids: &[u64]) -> Result<Vec<(u64, Vec<f32>)>> {
    let tx = db.begin_read()?;
    let t = tx.open_table(VECTORS)?;
    let mut out = Vec::with_capacity(ids.len());
    for &id in ids {
        if let Some(v) = t.get(id)? {
            out.push((id, codec::vector_from_bytes(v.value())?));
        }
    }
    Ok(out)
}

fn rebuild(db: &Database, dim: usize, params: HnswParams) -> Result<Ann> {
    let tx = db.begin_read()?;
    let t = tx.open_table(VECTORS)?;
    let mut all = Vec::with_capacity(t.len()? as usize);
    for e in t.iter()? {
        let (k, v) = e?;
        all.push((k.value(), codec::vector_from_bytes(v.value())?));
    }
    let mut ann = Ann::new(dim, params, all.len());
    let items: Vec<(u64, &[f32])> = all.iter().map(|(id, v)| (*id, v.as_slice())).collect();
    ann.insert(&items);
    Ok(ann)
}

/// The text the lexical index holds for a document: its header (speaker and date) and content.
pub(crate) fn lexical_text(doc: &Document) -> String {
    match embed_header(doc) {
        Some(h) => format!("{h}{}", doc.content),
        None => doc.content.clone(),
    }
}

/// Every stored document's `(internal id, lexical text)`.
fn lexical_documents(db: &Database, only: Option<&[u64]>) -> Result<Vec<(u64, String)>> {
    let tx = db.begin_read()?;
    let docs = tx.open_table(DOCS)?;
    let mut out = Vec::new();
    match only {
        Some(ids) => {
            for &id in ids {
                if let Some(d) = get_doc(&docs, id)? {
                    out.push((id, lexical_text(&d)));
                }
            }
        }
        None => {
            for e in docs.iter()? {
                let (k, v) = e?;
                let d: Document = codec::decode("document", v.value())?;
                out.push((k.value(), lexical_text(&d)));
            }
        }
    }
    Ok(out)
}

/// Opens the lexical index and brings it in line with the store generation.
fn open_lexical(
    db: &Database,
    dir: &Path,
    generation: u64,
    verify: bool,
) -> Result<(crate::lexical::Lexical, LexicalIndexState)> {
    use crate::lexical::{Lexical, Opened};
    let (mut lex, opened) = Lexical::open(dir, verify)?;
    let rebuild = |lex: &Lexical| -> Result<()> {
        lex.clear()?;
        let all = lexical_documents(db, None)?;
        for batch in all.chunks(20_000) {
            lex.apply(&[], batch, generation)?;
        }
        if all.is_empty() {
            lex.apply(&[], &[], generation)?;
        }
        Ok(())
    };
    let state = match opened {
        Opened::At(g) if g == generation => VectorIndexState::Loaded,
        Opened::At(g) if g > generation => {
            rebuild(&lex)?;
            VectorIndexState::Rebuilt(RebuildReason::Stale { graph: g, store: generation })
        }
        Opened::At(g) => match catch_up_lexical(db, &lex, g, generation) {
            Ok(state) => state,
            Err(Error::Lexical { reason, .. }) => {
                // A segment that opened but cannot be read: derived data, so rebuild it.
                drop(lex);
                lex = Lexical::recreate(dir)?;
                rebuild(&lex)?;
                VectorIndexState::Rebuilt(RebuildReason::Corrupt(reason))
            }
            Err(e) => return Err(e),
        },
        Opened::Fresh(reason) => {
            rebuild(&lex)?;
            VectorIndexState::Rebuilt(reason)
        }
    };
    Ok((lex, state))
}

/// Adds to the lexical index the documents stored since generation `from` and removes the
/// ones deleted since.
fn catch_up_lexical(
    db: &Database,
    lex: &crate::lexical::Lexical,
    from: u64,
    generation: u64,
) -> Result<LexicalIndexState> {
    {
        {
            let stored = {
                let tx = db.begin_read()?;
                let t = tx.open_table(DOCS)?;
                let mut v = Vec::new();
                for e in t.iter()? {
                    v.push(e?.0.value());
                }
                v
            };
            let indexed = lex.ids()?;
            let missing: Vec<u64> = stored.iter().copied().filter(|id| indexed.binary_search(id).is_err()).collect();
            let extra: Vec<u64> = indexed.iter().copied().filter(|id| stored.binary_search(id).is_err()).collect();
            let add = lexical_documents(db, Some(&missing))?;
            lex.apply(&extra, &add, generation)?;
            Ok(VectorIndexState::CaughtUp {
                from_generation: from,
                to_generation: generation,
                added: add.len(),
                removed: extra.len(),
            })
        }
    }
}

/// Brings a loaded graph in line with the store. Returns (added, tombstoned documents).
fn reconcile(db: &Database, ann: &mut Ann) -> Result<(usize, usize)> {
    let stored = stored_ids(db)?;
    let missing: Vec<u64> = stored.iter().copied().filter(|id| !ann.contains(*id)).collect();
    let stored_docs: std::collections::HashSet<u64> = stored.iter().map(|id| id >> 8).collect();
    let extra: std::collections::BTreeSet<u64> =
        ann.data_ids().filter(|id| stored.binary_search(id).is_err()).map(|id| id >> 8).collect();
    let mut removed = 0;
    for doc in extra {
        // A document whose id is in the store keeps its live vectors; only gone ones are buried.
        if !stored_docs.contains(&doc) {
            ann.tombstone(doc);
            removed += 1;
        }
    }
    let vecs = read_vectors(db, &missing)?;
    let items: Vec<(u64, &[f32])> = vecs.iter().map(|(id, v)| (*id, v.as_slice())).collect();
    ann.insert(&items);
    Ok((vecs.len(), removed))
}

impl Collection {
    /// Writes embedding-cache rows read back from a damaged store ([`crate::Index::repair`]);
    /// rows whose vector has another dimension are skipped. Returns how many were written.
    pub(crate) fn restore_cache(&self, rows: &[(u128, Vec<u8>)]) -> Result<usize> {
        let dim_bytes = self.embedder.dim() * 4;
        let _w = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let tx = self.db.begin_write()?;
        let mut n = 0;
        {
            let mut cache = tx.open_table(EMBED_CACHE)?;
            for (k, v) in rows.iter().filter(|(_, v)| v.len() == dim_bytes) {
                cache.insert(*k, v.as_slice())?;
                n += 1;
            }
        }
        tx.commit()?;
        Ok(n)
    }

    /// Raw ingest state of a session (`sessions` table).
    pub(crate) fn get_session_bytes(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let tx = self.db.begin_read()?;
        Ok(tx.open_table(SESSIONS)?.get(id)?.map(|v| v.value().to_vec()))
    }
}

impl Collection {
    /// Every document that discusses the file `path` (any action), unordered. The path is
    /// matched in whatever form it is typed: `\\` or `/`, either case of a drive letter, `./`,
    /// a trailing `/`, absolute inside the project or relative to it
    /// ([`Collection::file_forms`]).
    pub fn documents_for_file(&self, path: &str) -> Result<Vec<Document>> {
        let forms = self.file_forms(path)?;
        let tx = self.db.begin_read()?;
        let idx = tx.open_multimap_table(IDX_FILE)?;
        let docs = tx.open_table(DOCS)?;
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for form in &forms {
            for id in idx.get(form.as_str())? {
                let id = id?.value();
                if seen.insert(id)
                    && let Some(d) = get_doc(&docs, id)?
                {
                    out.push(d);
                }
            }
        }
        Ok(out)
    }

    /// The stored forms a file the user names may have (see
    /// [`crate::text::paths::lookup_forms`]), relative to this collection's project root.
    pub fn file_forms(&self, path: &str) -> Result<Vec<String>> {
        Ok(crate::text::paths::lookup_forms(path, self.meta()?.project_path.as_deref()))
    }
}
