//! Writing a collection: documents in (chunked and embedded outside any lock, then one redb
//! transaction), out (deleted, their vectors tombstoned), whole sessions with their ingest state,
//! and the derived indexes following the committed store.

use crate::sync::{Locked, Shared};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

use uuid::Uuid;

use std::sync::Arc;

use super::Collection;
use super::derived::rebuild;
use crate::doc::Document;
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::ids::{CacheKey, VectorId};
use crate::store::tables::*;
use crate::store::{self, codec, meta};

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
    /// Store the documents and their words now and their vectors later
    /// ([`Collection::embed_pending`]): no model runs in this write. A bulk write: the lexical
    /// index commits it at the next [`Collection::flush`] (or the next write that commits),
    /// not at once.
    pub(crate) defer_vectors: bool,
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

/// Every document's chunks, embedded by one model.
pub(crate) struct Prepared {
    /// Id of the model that computed the vectors.
    pub(crate) model: String,
    /// Per document, its chunks (empty when `deferred`).
    pub(crate) chunks: Vec<Vec<PreparedChunk>>,
    /// The vectors come later: the documents are recorded as pending.
    pub(crate) deferred: bool,
}

/// One chunk of a document, ready to be stored: its cache key, its vector, and whether the model
/// computed it now (so it goes into the embedding cache).
pub(crate) struct PreparedChunk {
    pub(crate) key: CacheKey,
    pub(crate) vector: Vec<f32>,
    pub(crate) fresh: bool,
}

impl Collection {
    /// Updates the collection metadata in its own transaction.
    pub fn update_meta(&self, f: impl FnOnce(&mut meta::CollectionMeta)) -> Result<()> {
        let _w = self.write_lock.locked();
        let tx = self.db.begin_write()?;
        meta::update_meta_in(&tx, f)?;
        tx.commit()?;
        Ok(())
    }

    /// Records that every imported conversation carries the turn each turn answers (a flag in
    /// `meta`; no document changes, so the generation stays).
    pub(crate) fn mark_imports_answering(&self) -> Result<()> {
        let _w = self.write_lock.locked();
        let tx = self.db.begin_write()?;
        meta::mark_imports_answering(&tx)?;
        tx.commit()?;
        Ok(())
    }

    /// Marks the last indexing time in the metadata.
    pub fn touch_indexed_at(&self, at: chrono::DateTime<chrono::Utc>) -> Result<()> {
        self.update_meta(|m| m.last_indexed_at_ms = Some(at.timestamp_millis()))
    }

    /// Adds (or replaces, by id) a batch of documents in one write transaction: after it
    /// returns the batch survives a crash; if it fails, none of it exists.
    pub fn add(&self, docs: &[Document]) -> Result<AddReport> {
        let mut report = AddReport::default();
        if docs.is_empty() {
            report.generation = meta::read_generation(&self.db)?;
            return Ok(report);
        }
        // 1. Chunk and embed outside any lock (cache first).
        let prepared = self.prepare(docs, &mut report)?;
        self.commit_prepared(docs, prepared, report, None)
    }

    /// Like [`Collection::add`], with the vectors left for [`Collection::embed_pending`]: no
    /// model runs (indexing's words-first pass). Written as a session's bulk write is: made
    /// durable, and its words committed, by the next [`Collection::flush`] (a process killed
    /// before it loses the batch whole; indexing derives it again).
    pub(crate) fn add_deferred(&self, docs: &[Document]) -> Result<AddReport> {
        let prepared = Prepared { model: self.embedder().model_id().to_string(), chunks: Vec::new(), deferred: true };
        self.commit_prepared(docs, prepared, AddReport::default(), None)
    }

    /// The collection's embedder, with a guard against a migration that finished meanwhile:
    /// vectors computed with it are committed only while it is still the collection's model.
    fn current_model(&self) -> (Arc<dyn Embedder>, String) {
        let e = self.embedder();
        let id = e.model_id().to_string();
        (e, id)
    }

    /// Writes a session in one transaction: optionally deletes every document the session has
    /// (`replace`), adds `docs` (replacing by id), stores its ingest state and removes its
    /// tombstone (`unforget`). A process killed at any point leaves either the session as it
    /// was or the session as written, never a mix (and never new documents with old state).
    pub(crate) fn write_session(&self, w: SessionWrite<'_>) -> Result<AddReport> {
        let mut report = AddReport::default();
        let prepared = if w.defer_vectors {
            Prepared { model: self.embedder().model_id().to_string(), chunks: Vec::new(), deferred: true }
        } else {
            self.prepare(w.docs, &mut report)?
        };
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
        let dim = self.embedder().dim();
        let mut prepared = Vec::with_capacity(docs.len());
        for v in vectors {
            if v.len() != dim {
                return Err(Error::DimensionMismatch { expected: dim, got: v.len() });
            }
            let mut vector = v.clone();
            crate::embed::normalize(&mut vector);
            prepared.push(vec![PreparedChunk { key: CacheKey(0), vector, fresh: false }]);
        }
        let prepared = Prepared { model: self.embedder().model_id().to_string(), chunks: prepared, deferred: false };
        self.commit_prepared(docs, prepared, AddReport::default(), None)
    }

    /// Adds (or replaces) documents whose vectors were computed elsewhere, each with its chunk
    /// vectors in order (at least one, at most 256; a team store's mirror is loaded so). Same
    /// transaction contract as [`Collection::add`].
    pub fn add_embedded_chunks(&self, docs: &[Document], vectors: &[Vec<Vec<f32>>]) -> Result<AddReport> {
        if docs.len() != vectors.len() {
            return Err(Error::InvalidArgument(format!(
                "{} documents but {} vector lists; give one list of chunk vectors per document",
                docs.len(),
                vectors.len()
            )));
        }
        let dim = self.embedder().dim();
        let mut prepared = Vec::with_capacity(docs.len());
        for chunks in vectors {
            if chunks.is_empty() || chunks.len() > crate::ids::VectorId::MAX_CHUNKS as usize {
                return Err(Error::InvalidArgument(format!(
                    "a document has {} chunk vectors; give 1 to {} (a document without vectors goes through `add`)",
                    chunks.len(),
                    crate::ids::VectorId::MAX_CHUNKS
                )));
            }
            let mut list = Vec::with_capacity(chunks.len());
            for v in chunks {
                if v.len() != dim {
                    return Err(Error::DimensionMismatch { expected: dim, got: v.len() });
                }
                let mut vector = v.clone();
                crate::embed::normalize(&mut vector);
                list.push(PreparedChunk { key: CacheKey(0), vector, fresh: false });
            }
            prepared.push(list);
        }
        let prepared = Prepared { model: self.embedder().model_id().to_string(), chunks: prepared, deferred: false };
        self.commit_prepared(docs, prepared, AddReport::default(), None)
    }

    /// One write transaction for a batch (and, for a session write, its removals and state),
    /// then the graph and the lexical index follow the committed store.
    fn commit_prepared(
        &self,
        docs: &[Document],
        prepared: Prepared,
        mut report: AddReport,
        session: Option<SessionWrite<'_>>,
    ) -> Result<AddReport> {
        if docs.is_empty() && session.is_none() {
            report.generation = meta::read_generation(&self.db)?;
            return Ok(report);
        }
        let _w = self.write_lock.locked();
        if prepared.model != self.embedder().model_id() {
            return Err(Error::InvalidArgument(format!(
                "collection {} moved to model {} while this batch was embedded with {}; write it again",
                self.name(),
                self.embedder().model_id(),
                prepared.model
            )));
        }
        let deferred = prepared.deferred;
        // Without vectors, a write waits for the next flush to be durable (a session's words-first
        // write, or derived documents written after a project's sessions).
        let bulk = deferred;
        let mut prepared = prepared.chunks.into_iter();
        let mut tx = self.db.begin_write()?;
        if bulk {
            // Made durable by the next flush, before the lexical index commits what it staged
            // (a crash before that loses these sessions whole, fingerprints included: the next
            // run indexes them again).
            tx.set_durability(redb::Durability::None).map_err(|e| Error::Storage(e.into()))?;
            self.store_unsynced.store(true, Ordering::SeqCst);
        }
        let mut removed = Vec::new();
        let mut unforgot = false;
        if let Some(w) = &session {
            if w.replace {
                removed.extend(store::session_ids(&tx, w.session_id)?);
            }
            if let Some((key, bytes)) = &w.state {
                tx.open_table(SESSIONS)?.insert(key.as_str(), bytes.as_slice())?;
            }
            if w.unforget {
                unforgot = tx.open_table(FORGOTTEN)?.remove(w.session_id)?.is_some();
            }
        }
        // Documents replaced by id go too.
        removed.extend(store::ids_of(&tx, docs.iter().map(|d| d.id))?);
        let mut replaced_ids = Vec::new();
        for id in removed {
            if store::remove_document(&tx, id)?.is_some() {
                replaced_ids.push(id);
            }
        }
        // The same id twice in one batch: the last one wins.
        let last: HashMap<Uuid, usize> = docs.iter().enumerate().map(|(i, d)| (d.id, i)).collect();
        let mut next_id = meta::take_ids(&tx, last.len() as u64)?;
        let mut new_vectors: Vec<(VectorId, Vec<f32>)> = Vec::new();
        let mut lexical_docs: Vec<(u64, String)> = Vec::new();
        {
            let mut vectors = tx.open_table(VECTORS)?;
            let mut pending = tx.open_table(PENDING)?;
            for (i, doc) in docs.iter().enumerate() {
                let chunks = prepared.next().unwrap_or_default();
                if last[&doc.id] != i {
                    continue;
                }
                let id = next_id;
                next_id += 1;
                store::put_document(&tx, id, doc)?;
                lexical_docs.push((id, doc.lexical_text()));
                if deferred && !doc.content.trim().is_empty() {
                    pending.insert(id, 0)?;
                }
                for (c, chunk) in chunks.into_iter().enumerate() {
                    let vid = VectorId::new(id, c as u64);
                    let bytes = codec::vector_bytes(&chunk.vector);
                    vectors.insert(vid.raw(), bytes.as_slice())?;
                    if chunk.fresh {
                        store::cache::put(&tx, chunk.key, &bytes)?;
                    }
                    new_vectors.push((vid, chunk.vector));
                }
            }
        }
        report.documents = last.len();
        report.replaced = replaced_ids.len();
        report.chunks = new_vectors.len();
        let generation = meta::bump_generation(&tx)?;
        tx.commit()?;
        report.generation = generation;
        let named = session.as_ref().filter(|w| w.unforget).map(|w| w.session_id);
        if unforgot
            || named.is_some_and(|id| {
                crate::collection::forget::read_tombstone_sidecar(self.dir()).iter().any(|(s, _)| s == id)
            })
        {
            self.write_tombstone_sidecar(named)?;
        }
        if bulk {
            self.follow_store_staged(&replaced_ids, &lexical_docs, generation)?;
        } else {
            self.follow_store(&replaced_ids, &new_vectors, &lexical_docs, generation)?;
        }
        Ok(report)
    }

    /// [`Collection::follow_store`] for a bulk write without vectors: tombstones as usual, the
    /// words staged in the lexical index and committed by the next flush.
    fn follow_store_staged(&self, removed: &[u64], lexical_docs: &[(u64, String)], generation: u64) -> Result<()> {
        if !removed.is_empty() && !self.graph_locked()? {
            let mut ann = self.ann.writing();
            for id in removed {
                ann.tombstone(*id);
            }
            self.dirty.store(true, Ordering::SeqCst);
        }
        if let Some(l) = &self.lexical {
            l.stage(removed, lexical_docs)?;
            *self.lexical_staged.locked() = Some(generation);
        }
        Ok(())
    }

    /// The derived indexes follow a committed write: removed documents' vectors become
    /// tombstones, new vectors go into the graph, the lexical index deletes and adds. Should the
    /// lexical index fail, the store is committed and the index catches up at the next open.
    pub(super) fn follow_store(
        &self,
        removed: &[u64],
        vectors: &[(VectorId, Vec<f32>)],
        lexical_docs: &[(u64, String)],
        generation: u64,
    ) -> Result<()> {
        // A graph loaded only now reads the committed store: this write is in it already.
        if !self.graph_locked()? {
            let mut ann = self.ann.writing();
            for id in removed {
                ann.tombstone(*id);
            }
            let items: Vec<(VectorId, &[f32])> = vectors.iter().map(|(id, v)| (*id, v.as_slice())).collect();
            ann.insert(&items);
        }
        self.dirty.store(true, Ordering::SeqCst);
        if let Some(l) = &self.lexical {
            l.apply(removed, lexical_docs, generation)?;
            // Anything staged before went in with this commit.
            *self.lexical_staged.locked() = None;
        }
        self.maybe_rebuild_locked()
    }

    /// The texts the collection's model embeds for a document, one per chunk, with their
    /// embedding-cache keys.
    pub(crate) fn chunk_texts(&self, doc: &Document) -> Vec<(CacheKey, String)> {
        self.chunk_texts_with(self.embedder().as_ref(), doc)
    }

    /// The texts `embedder` embeds for a document, one per chunk (split with the model's own
    /// tokenizer), with their embedding-cache keys.
    pub(crate) fn chunk_texts_with(&self, embedder: &dyn Embedder, doc: &Document) -> Vec<(CacheKey, String)> {
        if doc.content.trim().is_empty() {
            return Vec::new();
        }
        let model = embedder.model_id();
        let offsets = embedder.token_offsets(&doc.content);
        let header = doc.embed_header();
        let limit = self.options.chunk_tokens.min(embedder.max_tokens().saturating_sub(embedder.overhead_tokens()));
        // Leave room for the header's tokens: a date and a name take well under 24. A quoted
        // turn it answers (at most `Quote::MAX_CHARS` characters) is measured, and only has to
        // fit within what the model reads at most: it comes on top of the chunk.
        let budget = match (&header, &doc.answering) {
            (None, _) => limit,
            (Some(_), None) => limit.saturating_sub(24),
            (Some(h), Some(_)) => limit.saturating_sub(24).min(
                embedder.max_tokens().saturating_sub(embedder.overhead_tokens() + embedder.token_offsets(h).len() + 2),
            ),
        };
        let ranges = crate::text::chunk::split(
            &doc.content,
            &offsets,
            budget.max(16),
            self.options.chunk_overlap,
            VectorId::MAX_CHUNKS as usize,
        );
        ranges
            .into_iter()
            .map(|(a, b)| {
                let chunk = doc.content.get(a..b).unwrap_or_default();
                let t = match &header {
                    Some(h) => format!("{h}\"{chunk}\""),
                    None => chunk.to_string(),
                };
                (CacheKey::of(model, &t), t)
            })
            .collect()
    }

    /// Chunks each document and finds (in the cache) or computes (with the model) each chunk's
    /// vector.
    pub(super) fn prepare(&self, docs: &[Document], report: &mut AddReport) -> Result<Prepared> {
        let (embedder, model) = self.current_model();
        let dim = embedder.dim();
        let texts: Vec<Vec<(CacheKey, String)>> =
            docs.iter().map(|d| self.chunk_texts_with(embedder.as_ref(), d)).collect();
        let mut found = store::cache::lookup(&self.db, texts.iter().flatten().map(|(k, _)| k), dim)?;
        let cached: std::collections::HashSet<CacheKey> = found.keys().copied().collect();
        let mut todo: Vec<(CacheKey, &str)> = Vec::new();
        let mut queued = std::collections::HashSet::new();
        for (key, t) in texts.iter().flatten() {
            if !found.contains_key(key) && queued.insert(*key) {
                todo.push((*key, t.as_str()));
            }
        }
        if !todo.is_empty() {
            let strs: Vec<&str> = todo.iter().map(|(_, t)| *t).collect();
            let vecs = embedder.embed(&strs)?;
            for ((key, _), v) in todo.iter().zip(vecs) {
                if v.len() != dim {
                    return Err(Error::DimensionMismatch { expected: dim, got: v.len() });
                }
                found.insert(*key, v);
            }
        }
        report.embedded = todo.len();
        let mut out = Vec::with_capacity(texts.len());
        for chunks in texts {
            let mut per = Vec::with_capacity(chunks.len());
            for (key, _) in chunks {
                let fresh = !cached.contains(&key);
                if !fresh {
                    report.cached += 1;
                }
                per.push(PreparedChunk { key, vector: found[&key].clone(), fresh });
            }
            out.push(per);
        }
        Ok(Prepared { model, chunks: out, deferred: false })
    }

    /// Deletes every document of a session (one transaction). Returns how many were deleted.
    pub fn delete_session(&self, session_id: &str) -> Result<usize> {
        let _w = self.write_lock.locked();
        let tx = self.db.begin_write()?;
        let ids = store::session_ids(&tx, session_id)?;
        self.delete_ids_in(tx, ids)
    }

    /// Deletes documents by id (one transaction). Returns how many existed.
    pub fn delete(&self, ids: &[Uuid]) -> Result<usize> {
        let _w = self.write_lock.locked();
        let tx = self.db.begin_write()?;
        let internal = store::ids_of(&tx, ids.iter().copied())?;
        self.delete_ids_in(tx, internal)
    }

    /// Removes `ids` in `tx`, commits, and lets the derived indexes follow. The caller holds
    /// the write lock.
    pub(crate) fn delete_ids_in(&self, tx: redb::WriteTransaction, ids: Vec<u64>) -> Result<usize> {
        let mut n = 0;
        for id in &ids {
            if store::remove_document(&tx, *id)?.is_some() {
                n += 1;
            }
        }
        let generation = if n > 0 { meta::bump_generation(&tx)? } else { 0 };
        tx.commit()?;
        if n > 0 {
            self.follow_store(&ids, &[], &[], generation)?;
        }
        Ok(n)
    }

    /// Rebuilds the graph when tombstones pass the threshold. The caller holds the write lock,
    /// so the store cannot change meanwhile; searches keep using the old graph until the swap.
    fn maybe_rebuild_locked(&self) -> Result<()> {
        let (dead, total) = {
            let ann = self.ann.reading();
            (ann.tombstoned_points(), ann.points())
        };
        if total > 0 && dead as f32 / total as f32 > self.options.rebuild_tombstone_ratio {
            let fresh = rebuild(&self.db, self.embedder().dim(), self.options.hnsw, self.options.graph_from)?;
            *self.ann.writing() = fresh;
            self.dirty.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Rebuilds the graph from the stored vectors now. A graph not loaded yet is not read
    /// first (nor rebuilt twice when its files are damaged): the state becomes
    /// `Rebuilt(Requested)`.
    pub fn rebuild_vector_index(&self) -> Result<()> {
        let _w = self.write_lock.locked();
        let fresh = rebuild(&self.db, self.embedder().dim(), self.options.hnsw, self.options.graph_from)?;
        *self.ann.writing() = fresh;
        let _ = self.opened.set(super::VectorIndexState::Rebuilt(super::RebuildReason::Requested));
        self.dirty.store(true, Ordering::SeqCst);
        drop(_w);
        self.flush()
    }

    /// Blocks until a persisted graph that is being read in the background (see
    /// [`super::VectorIndexState::Loaded`]) is ready; until then searches use the exact scan.
    /// Loads the graph first if nothing has (an error loading it is returned by the next
    /// search or write, which tries again). A collection too small to keep a graph
    /// ([`super::CollectionOptions::graph_from`]) builds one in memory now, for searches that
    /// ask to walk it.
    pub fn wait_for_vector_index(&self) {
        let Ok(ann) = self.graph() else { return };
        let (loading, unbuilt) = {
            let a = ann.reading();
            (a.loading(), a.unbuilt())
        };
        if loading {
            ann.writing().poll(true);
        } else if unbuilt {
            ann.writing().build_now();
        }
    }

    /// Readies the vector side for the searches of a long-lived process: reads the vectors
    /// and, when an unfiltered search would walk the graph (more documents than
    /// [`super::CollectionOptions::exact_threshold`]), starts reading its links in the
    /// background.
    pub(crate) fn ready_vectors(&self) {
        let Ok(ann) = self.graph() else { return };
        if self.len().is_ok_and(|n| n > self.options.exact_threshold) && ann.reading().loading() {
            ann.writing().poll(false);
        }
    }

    /// Commits words staged by bulk writes and persists the graph if it changed since the last
    /// flush (also done on drop).
    pub fn flush(&self) -> Result<()> {
        self.commit_staged_words()?;
        let relinked = self.ann.writing().take_relinked();
        if !self.dirty.swap(false, Ordering::SeqCst) && !relinked {
            return Ok(());
        }
        let _w = self.write_lock.locked();
        let generation = meta::read_generation(&self.db)?;
        self.ann.writing().shed_links();
        if !self.ann.reading().dumps_without_links() {
            self.ann.writing().poll(true);
        }
        let ann = self.ann.reading();
        let res = ann.dump(&self.dir.join("vectors"), generation, self.embedder().model_id());
        if res.is_err() {
            self.dirty.store(true, Ordering::SeqCst);
        }
        res
    }

    /// Makes bulk writes durable (one synced commit), then commits the lexical index's staged
    /// words, if any: the lexical index never claims a generation the store could lose.
    fn commit_staged_words(&self) -> Result<()> {
        let _w = self.write_lock.locked();
        if self.store_unsynced.swap(false, Ordering::SeqCst) {
            self.db.begin_write()?.commit()?;
        }
        let staged = self.lexical_staged.locked().take();
        match (staged, &self.lexical) {
            (Some(generation), Some(l)) => l.commit(generation),
            _ => Ok(()),
        }
    }

    /// Writes embedding-cache rows read back from a damaged store ([`crate::Index::repair`]);
    /// rows whose vector has another dimension are skipped. Returns how many were written.
    pub(crate) fn restore_cache(&self, rows: &[(u128, Vec<u8>)]) -> Result<usize> {
        let dim_bytes = self.embedder().dim() * 4;
        let _w = self.write_lock.locked();
        let tx = self.db.begin_write()?;
        let mut n = 0;
        let sound = |v: &[u8]| crate::store::codec::vector_from_bytes(v).is_ok_and(|x| crate::vector::is_sound(&x));
        for (k, v) in rows.iter().filter(|(_, v)| v.len() == dim_bytes && sound(v)) {
            store::cache::put(&tx, CacheKey(*k), v)?;
            n += 1;
        }
        tx.commit()?;
        Ok(n)
    }
}
