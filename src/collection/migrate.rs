//! Moving a collection to another embedding model without losing anything: every document is
//! re-embedded from its stored text (transcripts that Claude Code has since deleted are not
//! needed), batch by batch, each batch committed with the position reached, so a kill loses at
//! most one batch and the next run goes on from there. The new vectors wait in their own
//! tables; until the last batch swaps them in (one transaction), the collection answers with
//! its old model's vectors and queries embedded by the old model. A collection therefore never
//! mixes two models' vectors.

use crate::sync::{Locked, Shared};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

use super::Collection;
use super::derived::rebuild;
use crate::doc::Document;
use crate::embed::Embedder;
use crate::error::Result;
use crate::ids::{CacheKey, VectorId};
use crate::store::meta::{self, MigrationState};
use crate::store::tables::*;
use crate::store::{cache, codec};

/// Where a migration stands ([`Collection::migrate`] reports it after every batch).
#[derive(Debug, Clone, PartialEq)]
pub struct MigrationProgress {
    /// The collection.
    pub collection: String,
    /// Model id the collection's vectors come from.
    pub from: String,
    /// Model id it moves to.
    pub to: String,
    /// Documents re-embedded so far (including earlier, interrupted runs).
    pub done: usize,
    /// Documents in the collection.
    pub total: usize,
    /// Documents re-embedded by this run so far.
    pub this_run: usize,
    /// Chunks embedded by this run so far.
    pub embedded: usize,
    /// Seconds this run has taken so far.
    pub seconds: f64,
}

/// What [`Collection::migrate`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationReport {
    /// Model id the collection's vectors came from (empty when there was nothing to do).
    pub from: String,
    /// Model id they come from now.
    pub to: String,
    /// Documents re-embedded by this run.
    pub documents: usize,
    /// Chunks embedded by the model in this run.
    pub embedded: usize,
    /// Chunks whose vector was already in the embedding cache.
    pub cached: usize,
    /// Documents another run had already re-embedded before it was interrupted.
    pub resumed_at: usize,
    /// The new vectors were swapped in: the collection now holds the new model's only.
    pub finished: bool,
}

/// Documents per committed batch of a migration.
const BATCH_DOCS: usize = 64;

impl Collection {
    /// The migration this collection needs, with how far it got: `None` when it holds the
    /// configured model's vectors.
    pub fn migration_progress(&self) -> Result<Option<MigrationProgress>> {
        let Some(target) = self.migration_target() else { return Ok(None) };
        let state = meta::migration(&self.db)?.filter(|s| s.to_model == target.model_id());
        let (done, total) = self.migration_counts(state.as_ref().map_or(0, |s| s.next_doc))?;
        Ok(Some(MigrationProgress {
            collection: self.name().to_string(),
            from: self.embedder().model_id().to_string(),
            to: target.model_id().to_string(),
            done,
            total,
            this_run: 0,
            embedded: 0,
            seconds: 0.0,
        }))
    }

    /// Documents below internal id `next` (re-embedded already) and in all.
    fn migration_counts(&self, next: u64) -> Result<(usize, usize)> {
        let tx = self.db.begin_read()?;
        let docs = tx.open_table(DOCS)?;
        let total = docs.len()? as usize;
        let done = if next == 0 { 0 } else { docs.range(..next)?.count() };
        Ok((done, total))
    }

    /// Re-embeds every document with the configured model ([`Collection::migration_target`])
    /// and then swaps the new vectors in: the store, the graph and the embedding cache hold the
    /// new model's vectors only, and queries are embedded by it. Resumable: each batch of
    /// documents is committed with the position reached, so after an interruption (a kill,
    /// Ctrl-C, an error) the next call goes on from there. Searches meanwhile answer with the
    /// old model. `progress` is called after every batch; when it returns
    /// [`ControlFlow::Break`] the migration stops there (`finished: false`, resumable). Nothing
    /// to do returns an empty report.
    pub fn migrate(&self, progress: &mut dyn FnMut(&MigrationProgress) -> ControlFlow<()>) -> Result<MigrationReport> {
        let Some(target) = self.migration_target() else { return Ok(MigrationReport::default()) };
        let started = Instant::now();
        let mut report = MigrationReport {
            from: self.embedder().model_id().to_string(),
            to: target.model_id().to_string(),
            ..MigrationReport::default()
        };
        let mut state = self.start_migration(target.as_ref())?;
        let (resumed_at, total) = self.migration_counts(state.next_doc)?;
        report.resumed_at = resumed_at;
        loop {
            let batch = self.docs_from(state.next_doc, BATCH_DOCS)?;
            let Some(last) = batch.last().map(|(id, _)| *id) else { break };
            let (embedded, cached) = self.migrate_batch(target.as_ref(), &batch, &mut state, last + 1)?;
            report.documents += batch.len();
            report.embedded += embedded;
            report.cached += cached;
            let flow = progress(&MigrationProgress {
                collection: self.name().to_string(),
                from: report.from.clone(),
                to: report.to.clone(),
                done: report.resumed_at + report.documents,
                total,
                this_run: report.documents,
                embedded: report.embedded,
                seconds: started.elapsed().as_secs_f64(),
            });
            if flow.is_break() {
                return Ok(report);
            }
        }
        self.finish_migration(target)?;
        report.finished = true;
        Ok(report)
    }

    /// The recorded migration towards `target`, or a fresh one (dropping what a migration
    /// towards another model left).
    fn start_migration(&self, target: &dyn Embedder) -> Result<MigrationState> {
        if let Some(s) = meta::migration(&self.db)?
            && s.to_model == target.model_id()
            && s.to_dim == target.dim() as u64
        {
            return Ok(s);
        }
        let state =
            MigrationState { to_model: target.model_id().to_string(), to_dim: target.dim() as u64, next_doc: 0 };
        let _w = self.write_lock.locked();
        let tx = self.db.begin_write()?;
        clear_migration_tables(&tx)?;
        meta::set_migration(&tx, Some(&state))?;
        tx.commit()?;
        Ok(state)
    }

    /// Up to `n` documents with internal id at least `from`, in id order.
    fn docs_from(&self, from: u64, n: usize) -> Result<Vec<(u64, Document)>> {
        let tx = self.db.begin_read()?;
        let docs = tx.open_table(DOCS)?;
        let mut out = Vec::with_capacity(n);
        for row in docs.range(from..)?.take(n) {
            let (k, v) = row?;
            out.push((k.value(), codec::decode_document(v.value())?));
        }
        Ok(out)
    }

    /// Embeds one batch with `target` (outside any lock; cache first) and commits its vectors
    /// with the position `next`. Returns (chunks embedded, chunks found in a cache).
    fn migrate_batch(
        &self,
        target: &dyn Embedder,
        batch: &[(u64, Document)],
        state: &mut MigrationState,
        next: u64,
    ) -> Result<(usize, usize)> {
        let dim = target.dim();
        let texts: Vec<Vec<(CacheKey, String)>> = batch.iter().map(|(_, d)| self.chunk_texts_with(target, d)).collect();
        let keys: Vec<CacheKey> = texts.iter().flatten().map(|(k, _)| *k).collect();
        let mut found = cache::lookup(&self.db, keys.iter(), dim)?;
        found.extend(lookup_migration_cache(&self.db, &keys, dim)?);
        let cached = keys.iter().filter(|k| found.contains_key(k)).count();
        let mut todo: Vec<(CacheKey, &str)> = Vec::new();
        let mut queued = std::collections::HashSet::new();
        for (key, t) in texts.iter().flatten() {
            if !found.contains_key(key) && queued.insert(*key) {
                todo.push((*key, t.as_str()));
            }
        }
        let strs: Vec<&str> = todo.iter().map(|(_, t)| *t).collect();
        let vectors = target.embed(&strs)?;
        for ((key, _), v) in todo.iter().zip(vectors) {
            if v.len() != dim {
                return Err(crate::error::Error::DimensionMismatch { expected: dim, got: v.len() });
            }
            found.insert(*key, v);
        }
        let _w = self.write_lock.locked();
        let tx = self.db.begin_write()?;
        {
            let docs = tx.open_table(DOCS)?;
            let mut next_vectors = tx.open_table(MIGRATION_VECTORS)?;
            let mut next_cache = tx.open_table(MIGRATION_CACHE)?;
            for ((id, _), chunks) in batch.iter().zip(&texts) {
                // A document deleted since it was read has nothing to migrate.
                if docs.get(*id)?.is_none() {
                    continue;
                }
                for (c, (key, _)) in chunks.iter().enumerate() {
                    let bytes = codec::vector_bytes(&found[key]);
                    next_vectors.insert(VectorId::new(*id, c as u64).raw(), bytes.as_slice())?;
                    next_cache.insert(key.0, bytes.as_slice())?;
                }
            }
        }
        state.next_doc = next;
        meta::set_migration(&tx, Some(state))?;
        tx.commit()?;
        Ok((todo.len(), cached))
    }

    /// Swaps the new model's vectors in (one transaction: vectors, cache, model id), then
    /// rebuilds the graph from them. Documents added meanwhile were re-embedded by the loop; a
    /// document added after the last batch is embedded here.
    fn finish_migration(&self, target: Arc<dyn Embedder>) -> Result<()> {
        let _w = self.write_lock.locked();
        // Loaded first (if nothing had), so that the graph rebuilt below is the one kept.
        self.graph_locked()?;
        let tx = self.db.begin_write()?;
        let Some(state) = meta::migration_in(&tx)? else {
            return Err(crate::error::Error::InvalidArgument("no migration in progress to finish".into()));
        };
        let stragglers = {
            let docs = tx.open_table(DOCS)?;
            docs.range(state.next_doc..)?.next().is_some()
        };
        if stragglers {
            // Written between the last batch and this lock: the caller runs `migrate` again.
            drop(tx);
            drop(_w);
            let mut go_on = |_: &MigrationProgress| ControlFlow::Continue(());
            return self.migrate(&mut go_on).map(|_| ());
        }
        tx.delete_table(VECTORS)?;
        tx.delete_table(EMBED_CACHE)?;
        {
            let from = tx.open_table(MIGRATION_VECTORS)?;
            let mut to = tx.open_table(VECTORS)?;
            for row in from.iter()? {
                let (k, v) = row?;
                to.insert(k.value(), v.value())?;
            }
            let from = tx.open_table(MIGRATION_CACHE)?;
            let mut to = tx.open_table(EMBED_CACHE)?;
            for row in from.iter()? {
                let (k, v) = row?;
                to.insert(k.value(), v.value())?;
            }
        }
        clear_migration_tables(&tx)?;
        // Documents that waited for vectors have the new model's now.
        tx.delete_table(PENDING)?;
        tx.open_table(PENDING)?;
        meta::set_migration(&tx, None)?;
        meta::set_model(&tx, target.model_id(), target.dim())?;
        meta::bump_generation(&tx)?;
        tx.commit()?;
        let fresh = rebuild(&self.db, target.dim(), self.options.hnsw, self.options.graph_from)?;
        *self.embedder.writing() = target;
        *self.target.locked() = None;
        *self.ann.writing() = fresh;
        self.dirty.store(true, Ordering::SeqCst);
        drop(_w);
        self.flush()
    }

    /// A migration towards a model that is no longer configured (the configuration changed
    /// back) leaves rows nobody will use: they are dropped when the collection opens.
    pub(crate) fn drop_stale_migration(&self) -> Result<()> {
        let Some(state) = meta::migration(&self.db)? else { return Ok(()) };
        if self.migration_target().is_some_and(|t| t.model_id() == state.to_model) {
            return Ok(());
        }
        let _w = self.write_lock.locked();
        let tx = self.db.begin_write()?;
        clear_migration_tables(&tx)?;
        meta::set_migration(&tx, None)?;
        tx.commit()?;
        Ok(())
    }
}

fn clear_migration_tables(tx: &redb::WriteTransaction) -> Result<()> {
    tx.delete_table(MIGRATION_VECTORS)?;
    tx.delete_table(MIGRATION_CACHE)?;
    tx.open_table(MIGRATION_VECTORS)?;
    tx.open_table(MIGRATION_CACHE)?;
    Ok(())
}

fn lookup_migration_cache(
    db: &impl ReadableDatabase,
    keys: &[CacheKey],
    dim: usize,
) -> Result<std::collections::HashMap<CacheKey, Vec<f32>>> {
    let tx = db.begin_read()?;
    let t = tx.open_table(MIGRATION_CACHE)?;
    let mut out = std::collections::HashMap::new();
    for k in keys {
        if let Some(v) = t.get(k.0)? {
            let v = codec::vector_from_bytes(v.value())?;
            if v.len() == dim {
                out.insert(*k, v);
            }
        }
    }
    Ok(out)
}
