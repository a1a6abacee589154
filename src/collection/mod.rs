//! A collection: one project's documents in redb, their vectors in an HNSW graph, their words
//! in a tantivy index, and the embedder that fills the graph. The only place that combines
//! store, graph, lexical index and model: opening and locking here, writing in [`write`],
//! reading in [`read`], searching in [`search`] with the vectors [`languages`] makes, the derived
//! indexes in [`derived`], forgetting in [`forget`].

mod derived;
pub(crate) mod forget;
mod languages;
mod migrate;
mod pending;
pub(crate) mod read;
mod search;
pub(crate) mod write;

use crate::sync::{Locked, Shared};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use crate::lexical::Glossary;
use std::time::{Duration, Instant};

use redb::Database;

use crate::ann::{Ann, HnswParams};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::store::seal::{Seal, panic_message};
use crate::store::{self, meta};

pub use crate::store::meta::{CollectionMeta, SCHEMA_VERSION};
pub use derived::{LexicalIndexState, RebuildReason, VectorIndexState};
pub(crate) use languages::{LANGUAGE_SAMPLE, LANGUAGE_SHARE, query_vectors};
pub use migrate::{MigrationProgress, MigrationReport};
pub use pending::{EmbedProgress, EmbedReport};
pub use read::CollectionStats;
pub use search::SearchBuilder;
pub(crate) use search::{hit, shown};
pub use write::AddReport;
pub(crate) use write::SessionWrite;

/// Options of a collection. Every field documents its default.
#[derive(Clone)]
pub struct CollectionOptions {
    /// HNSW parameters. Default: [`HnswParams::default`].
    pub hnsw: HnswParams,
    /// A search whose candidates (every document, without a filter) number at most this many,
    /// or a filtered one under [`CollectionOptions::exact_fraction`] of the collection, scans
    /// their vectors exactly (recall 1) instead of walking the graph, and never reads the
    /// graph's links. Default: 131,072 (measured with a search's pool of 100 documents on
    /// 2 cores: the exact scan took 0.4 of the walk's time at 5,000 documents, 0.74 at 50,000
    /// and 0.95 at 100,000, where the walk also holds the links and a second copy of every
    /// vector in memory; see docs/benchmarks.md).
    pub exact_threshold: usize,
    /// No graph is built until the collection holds more vectors than this (a document's
    /// chunks are vectors each): every unfiltered search of a collection at most
    /// [`CollectionOptions::exact_threshold`] documents scans exactly, so linking each vector
    /// into a graph as it arrives was work and disk for nothing (at 30 times the shared corpus,
    /// 37 projects under 131,072 documents each, about a tenth of the embedding pass). The write
    /// that passes it builds the graph from every vector at once. Keep it at most
    /// `exact_threshold`, or searches of a collection between the two scan exactly until it is
    /// built. Default: 131,072.
    pub graph_from: usize,
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
    /// Memory redb may use to cache the store's pages, per collection. Default: 64 MiB (redb's
    /// own default, 1 GiB, let a long indexing run keep most of what it wrote in memory).
    pub cache_bytes: usize,
    /// The concepts through which a query's words are also asked in other languages
    /// ([`crate::Ranking::translation`]). Default: [`Glossary::builtin`]; [`crate::Index::open`]
    /// adds the data directory's `glossary.tsv`.
    pub glossary: Arc<Glossary>,
}

impl Default for CollectionOptions {
    fn default() -> Self {
        CollectionOptions {
            hnsw: HnswParams::default(),
            exact_threshold: 131_072,
            graph_from: 131_072,
            exact_fraction: 0.12,
            rebuild_tombstone_ratio: 0.25,
            lock_wait: Duration::from_secs(3),
            chunk_tokens: 254,
            chunk_overlap: 32,
            lexical_index: true,
            cache_bytes: 64 << 20,
            glossary: Glossary::builtin(),
        }
    }
}

impl std::fmt::Debug for CollectionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollectionOptions")
            .field("hnsw", &self.hnsw)
            .field("exact_threshold", &self.exact_threshold)
            .field("graph_from", &self.graph_from)
            .field("lock_wait", &self.lock_wait)
            .field("glossary", &self.glossary)
            .finish_non_exhaustive()
    }
}

/// Finds the embedder of a model a collection records, by model id (`None`: unknown here).
pub(crate) type ResolveModel<'a> = &'a (dyn Fn(&str) -> Option<Arc<dyn Embedder>> + Sync);

/// One `<tenant>_<project>_conversations` collection. `Send + Sync`: searches run while a batch
/// is being written (redb MVCC for documents; the graph behind a briefly held lock).
///
/// A collection built with another model than the one configured keeps answering with its own
/// model (its vectors and the query embedded by that model) until [`Collection::migrate`] has
/// re-embedded every document with the configured one.
pub struct Collection {
    name: String,
    dir: PathBuf,
    pub(crate) db: Database,
    /// The model whose vectors the store holds (queries are embedded with it).
    embedder: RwLock<Arc<dyn Embedder>>,
    /// The configured model, when the store holds another one's vectors.
    target: Mutex<Option<Arc<dyn Embedder>>>,
    /// The HNSW graph, loaded on first use ([`Collection::graph`]): a search by words alone
    /// never reads it. Empty until then.
    pub(crate) ann: RwLock<Ann>,
    pub(crate) options: CollectionOptions,
    pub(crate) write_lock: Mutex<()>,
    dirty: AtomicBool,
    /// What happened to the graph when it was loaded; unset until then.
    opened: OnceLock<VectorIndexState>,
    pub(crate) lexical: Option<crate::lexical::Lexical>,
    lexical_opened: LexicalIndexState,
    /// The store generation of bulk writes staged in the lexical index and not committed yet.
    lexical_staged: Mutex<Option<u64>>,
    /// Bulk writes were committed without syncing (see [`write::SessionWrite`] and
    /// [`Collection::add_deferred`]); the next flush syncs them.
    store_unsynced: AtomicBool,
    /// The Chinese, Japanese and Korean its messages are written in, and how many messages it
    /// held when that was read ([`Collection::languages`]).
    languages: Mutex<Option<(u64, crate::lexical::Languages)>>,
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
    if path.is_dir() {
        return Err(Error::LockNotAFile { path });
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    let holder = |file: &mut std::fs::File| {
        let mut holder = String::new();
        let _ = file.rewind().and_then(|_| file.read_to_string(&mut holder));
        holder.trim().to_string()
    };
    let start = Instant::now();
    let mut asked = false;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                // A warm helper keeps collections open between searches: ask it once to let
                // go instead of waiting for it to go idle.
                let root = dir.parent().filter(|_| !asked && crate::warm::held_by_helper(&holder(&mut file)));
                asked = true;
                if let Some(root) = root {
                    crate::warm::ask_release(root);
                } else if start.elapsed() < wait {
                    std::thread::sleep(Duration::from_millis(50));
                } else {
                    let holder = holder(&mut file);
                    return Err(Error::InUse {
                        path: dir.to_path_buf(),
                        holder: if holder.is_empty() { "unknown".into() } else { holder },
                    });
                }
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
    }
    let _ = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| write!(file, "{}", crate::warm::holder_label()));
    Ok(file)
}

/// Whether the collection in `dir` existed before: its store's id file, its tombstones, its
/// identity or its derived indexes are there.
fn existed(dir: &Path) -> bool {
    [meta::STORE_ID_FILE, crate::collection::forget::TOMBSTONE_SIDECAR, "collection.json", "lexical", "graph.vectors"]
        .iter()
        .any(|f| dir.join(f).exists())
}

/// Checks that the store in `dir` is the collection's own (the id in its metadata is the one in
/// [`meta::STORE_ID_FILE`]), writing the file for a store that has none yet (a new one, or one
/// an earlier version made).
fn check_identity(dir: &Path, db: &Database) -> Result<()> {
    let id = meta::store_id(db)?;
    let file = dir.join(meta::STORE_ID_FILE);
    match std::fs::read_to_string(&file) {
        Ok(kept) if kept.trim() == id => Ok(()),
        Ok(kept) => Err(Error::Damaged {
            path: dir.join("data.redb"),
            reason: format!(
                "data.redb is not this collection's store (its id is {id}, {} names {})",
                meta::STORE_ID_FILE,
                kept.trim()
            ),
        }),
        Err(_) => crate::durable::write_synced(&file, id.as_bytes()),
    }
}

impl Collection {
    /// Opens (creating if needed) the collection stored in `dir`. A new collection uses
    /// `embedder`; one that records another model is opened with that model's embedder from
    /// `resolve`, and `embedder` becomes the target of [`Collection::migrate`].
    pub(crate) fn open(
        dir: &Path,
        name: &str,
        meta: CollectionMeta,
        embedder: Arc<dyn Embedder>,
        options: CollectionOptions,
        resolve: ResolveModel<'_>,
    ) -> Result<Collection> {
        let init = meta.clone();
        let emb = embedder.clone();
        let cache = options.cache_bytes;
        Self::open_with(dir, name, meta, embedder, options, true, resolve, move |path| {
            // A collection that existed knows it apart from its store: its store gone or
            // emptied is damage to report, never a fresh empty collection (which would silently
            // drop every document and let `index` bring back forgotten sessions).
            let size = std::fs::metadata(path).map(|m| m.len()).ok();
            if matches!(size, None | Some(0)) && existed(path.parent().unwrap_or(Path::new("."))) {
                let reason = if size.is_none() { "data.redb is missing" } else { "data.redb is empty (0 bytes)" };
                return Err(Error::Damaged { path: path.to_path_buf(), reason: reason.into() });
            }
            if size == Some(0) {
                let _ = std::fs::remove_file(path);
            }
            if !path.exists() {
                // Create atomically: a fresh database is initialised under another name and
                // renamed into place, so a crash during creation never leaves a half-written
                // file that no later open could read.
                let fresh = path.with_extension("redb.new");
                let _ = std::fs::remove_file(&fresh);
                {
                    let db = Database::builder().create(&fresh)?;
                    store::create_tables(&db)?;
                    meta::check_or_init_meta(&db, emb.model_id(), emb.dim(), &init)?;
                }
                std::fs::rename(&fresh, path).map_err(|e| Error::io(path, e))?;
            }
            // A file changed since convdex last closed it cleanly (a crash, a kill, a change from
            // outside) is verified page by page while opening: damage is then an error instead
            // of a panic of a plain open, and what redb can repair is repaired.
            let verify = !Seal::new(path.parent().unwrap_or(Path::new(".")), true).intact();
            Ok(Database::builder().set_check_integrity_on_open(verify).set_cache_size(cache).create(path)?)
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
        Self::open_with(dir, &name, meta, embedder, options, false, &|_| None, move |_| {
            // Asked again only after the store was busy, which a backend of its own never is.
            let b = backend.take().ok_or(Error::Storage(redb::Error::DatabaseAlreadyOpen))?;
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
        resolve: ResolveModel<'_>,
        make_db: impl FnMut(&Path) -> Result<Database>,
    ) -> Result<Collection> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        // One deadline for the lock and for a glance at the store after it.
        let since = Instant::now();
        let lock = acquire_lock(dir, options.lock_wait)?;
        let seal = Seal::new(dir, on_disk);
        let path = dir.join("data.redb");
        // redb panics on some damaged pages: a damaged collection is an error, never a crash.
        let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Self::open_locked(dir, name, meta, (embedder, resolve), options, make_db, seal, (lock, since))
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
        (configured, resolve): (Arc<dyn Embedder>, ResolveModel<'_>),
        options: CollectionOptions,
        mut make_db: impl FnMut(&Path) -> Result<Database>,
        seal: Seal,
        (lock, since): (std::fs::File, Instant),
    ) -> Result<Collection> {
        let path = dir.join("data.redb");
        // Files as convdex left them: no check needed (`make_db` verifies otherwise).
        let intact = seal.intact();
        let db = loop {
            match make_db(&path) {
                // This process holds the lock, so the store is open elsewhere only for a glance
                // (a process of an older version listing collections read a new one's identity
                // from its store without the lock): wait for it as for the lock.
                Err(Error::Storage(redb::Error::DatabaseAlreadyOpen)) if since.elapsed() < options.lock_wait => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => break other,
            }
        };
        let db = match db {
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
        check_identity(dir, &db)?;
        // Files changed since convdex closed them: a vector damaged on disk is never served.
        if !intact {
            derived::requeue_unsound(&db)?;
        }
        let (stored, stored_dim) = meta::check_or_init_meta(&db, configured.model_id(), configured.dim(), &meta)?;
        let (embedder, target) = if stored == configured.model_id() && stored_dim == configured.dim() {
            (configured, None)
        } else {
            match resolve(&stored) {
                Some(own) if own.dim() == stored_dim => (own, Some(configured)),
                _ => {
                    return Err(Error::ModelMismatch {
                        stored,
                        stored_dim,
                        configured: configured.model_id().to_string(),
                        configured_dim: configured.dim(),
                    });
                }
            }
        };
        let generation = meta::read_generation(&db)?;
        let ann = Ann::unlinked(embedder.dim(), options.hnsw, options.graph_from);
        let (lexical, lexical_opened) = if options.lexical_index {
            let (l, s) = derived::open_lexical(&db, &dir.join("lexical"), generation, !intact)?;
            (Some(l), s)
        } else {
            (None, VectorIndexState::Rebuilt(RebuildReason::Missing))
        };
        let coll = Collection {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            db,
            embedder: RwLock::new(embedder),
            target: Mutex::new(target),
            ann: RwLock::new(ann),
            options,
            write_lock: Mutex::new(()),
            dirty: AtomicBool::new(false),
            opened: OnceLock::new(),
            lexical,
            lexical_opened,
            lexical_staged: Mutex::new(None),
            store_unsynced: AtomicBool::new(false),
            languages: Mutex::new(None),
            seal,
            _lock: lock,
        };
        coll.drop_stale_migration()?;
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
            // A record that does not decode: the store is damaged; say which and how to fix it.
            Ok(Err(Error::Codec { what, reason })) => {
                self.seal.poison();
                Err(Error::Damaged {
                    path: self.dir.join("data.redb"),
                    reason: format!("stored {what} could not be decoded ({reason})"),
                })
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

    /// What happened to the vector index when it was loaded. The graph is loaded by the first
    /// search or write that needs vectors (a search by words alone never reads it); this call
    /// loads it if nothing has yet.
    pub fn vector_index_state(&self) -> Result<&VectorIndexState> {
        self.graph()?;
        // Set by `graph` (which succeeded).
        self.opened.get().ok_or_else(|| Error::InvalidArgument("the vector index is not loaded".into()))
    }

    /// Reads every stored vector and queues the documents of those damaged on disk (not
    /// finite, or not of unit length) to be embedded again: their vectors are never served, and
    /// the next `index` embeds them. Returns how many documents were queued.
    pub fn requeue_damaged_vectors(&self) -> Result<usize> {
        let _w = self.write_lock.locked();
        let docs = derived::requeue_unsound(&self.db)?;
        if !docs.is_empty() && self.opened.get().is_some() {
            // The graph loaded before holds their old vectors: no longer served.
            let mut ann = self.ann.writing();
            for d in &docs {
                ann.tombstone(*d);
            }
            self.dirty.store(true, Ordering::SeqCst);
        }
        Ok(docs.len())
    }

    /// Verifies the checksums of the graph's links when they are not read yet (an open
    /// verifies the vectors only, and the links are verified when a search first walks
    /// them). `Ok(None)`: whole, or already read; `Ok(Some(why))`: damaged, and rebuilt from the
    /// vectors when next read. Reads every graph file; `convdex doctor` calls it.
    pub fn verify_graph_links(&self) -> Result<Option<String>> {
        Ok(self.graph()?.reading().verify_links())
    }

    /// Rebuilds damaged graph links from the vectors now and saves the graph, so that no later
    /// read has to rebuild them again; `Ok(Some(why))` when they were damaged.
    pub fn mend_graph_links(&self) -> Result<Option<String>> {
        let Some(why) = self.verify_graph_links()? else { return Ok(None) };
        self.graph()?.writing().poll(true);
        self.flush()?;
        Ok(Some(why))
    }

    /// Whether the graph has been loaded (by a search that needed vectors, a write, or
    /// [`Collection::vector_index_state`]).
    pub fn vector_index_loaded(&self) -> bool {
        self.opened.get().is_some()
    }

    /// The graph, loaded from its dump (and brought in line with the store) on first use.
    pub(crate) fn graph(&self) -> Result<&RwLock<Ann>> {
        if self.opened.get().is_none() {
            // Under the write lock, so that no write commits between reading the store and
            // recording what the graph reflects.
            let _w = self.write_lock.locked();
            self.graph_locked()?;
        }
        Ok(&self.ann)
    }

    /// [`Collection::graph`] for a caller that holds the write lock. Returns true when this
    /// call loaded the graph: it then reflects the committed store, writes included.
    pub(crate) fn graph_locked(&self) -> Result<bool> {
        if self.opened.get().is_some() {
            return Ok(false);
        }
        let generation = meta::read_generation(&self.db)?;
        let embedder = self.embedder();
        let (ann, state) = derived::open_graph(
            &self.db,
            &self.dir.join("vectors"),
            embedder.dim(),
            self.options.hnsw,
            self.options.graph_from,
            generation,
            embedder.model_id(),
        )?;
        *self.ann.writing() = ann;
        if state != VectorIndexState::Loaded {
            // Persisted by the next flush (at the latest when the collection is dropped).
            self.dirty.store(true, Ordering::SeqCst);
        }
        let _ = self.opened.set(state);
        Ok(true)
    }

    /// What happened to the lexical index on open (`Rebuilt(Missing)` when
    /// [`CollectionOptions::lexical_index`] is off).
    pub fn lexical_index_state(&self) -> &LexicalIndexState {
        &self.lexical_opened
    }

    /// The embedder of the model whose vectors this collection holds (queries are embedded
    /// with it).
    pub fn embedder(&self) -> Arc<dyn Embedder> {
        self.embedder.reading().clone()
    }

    /// The configured model's embedder when this collection still holds another model's
    /// vectors: [`Collection::migrate`] moves it there.
    pub fn migration_target(&self) -> Option<Arc<dyn Embedder>> {
        self.target.locked().clone()
    }

    /// Collection metadata.
    pub fn meta(&self) -> Result<CollectionMeta> {
        meta::read_meta(&self.db)
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
