//! Vectors after words: indexing may store a session's documents and their words first
//! ([`super::SessionWrite::defer_vectors`]), recording the documents as pending, so the session
//! is searchable by words, filters, decisions, blame and handoff at once; this pass embeds the
//! pending documents afterwards, a committed batch at a time, so a kill or Ctrl-C loses at most
//! one batch and the next pass goes on. Until then semantic search does not see them (hybrid
//! finds them by their words) and searches say how many are waiting ([`crate::Plan::unembedded`]).

use crate::sync::Locked;
use std::ops::ControlFlow;
use std::time::Instant;

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

use super::Collection;
use super::write::AddReport;
use crate::doc::Document;
use crate::error::Result;
use crate::ids::VectorId;
use crate::store::tables::*;
use crate::store::{self, codec, meta};

/// A document waiting for its vectors, with its internal id.
type Pending = (u64, Document);

/// Documents per committed batch of [`Collection::embed_pending`].
const BATCH_DOCS: usize = 64;

/// Where an embedding pass stands ([`Collection::embed_pending`] reports it after every batch).
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedProgress {
    /// The collection.
    pub collection: String,
    /// Documents given their vectors by this pass so far.
    pub done: usize,
    /// Documents that were waiting when the pass started.
    pub total: usize,
    /// Chunks the model embedded so far (the rest came from the cache).
    pub embedded: usize,
    /// Seconds this pass has taken so far.
    pub seconds: f64,
    /// Documents given their vectors by this pass in every collection it embeds
    /// ([`crate::Index::embed_pending`] interleaves collections; equal to `done` for one).
    pub pass_done: usize,
    /// Documents waiting in every collection when the pass started.
    pub pass_total: usize,
}

/// What [`Collection::embed_pending`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbedReport {
    /// Documents given their vectors.
    pub documents: usize,
    /// Vectors written (one per chunk).
    pub chunks: usize,
    /// Chunks the model embedded.
    pub embedded: usize,
    /// Chunks whose vector came from the embedding cache.
    pub cached: usize,
    /// Documents still waiting (a pass stopped by its callback leaves some).
    pub left: usize,
}

impl Collection {
    /// How many documents wait for their vectors (semantic search does not see them yet).
    pub fn pending_vectors(&self) -> Result<usize> {
        let tx = self.db.begin_read()?;
        Ok(tx.open_table(PENDING)?.len()? as usize)
    }

    /// Embeds the documents that wait for their vectors, a committed batch at a time (see the
    /// module documentation). `progress` is called after every batch; returning
    /// [`ControlFlow::Break`] stops there (the rest stays pending for the next pass).
    pub fn embed_pending(&self, progress: &mut dyn FnMut(&EmbedProgress) -> ControlFlow<()>) -> Result<EmbedReport> {
        let started = Instant::now();
        let total = self.pending_vectors()?;
        let mut report = EmbedReport::default();
        while self.embed_pending_batch(&mut report)? {
            let flow = progress(&EmbedProgress {
                collection: self.name().to_string(),
                done: report.documents,
                total,
                embedded: report.embedded,
                seconds: started.elapsed().as_secs_f64(),
                pass_done: report.documents,
                pass_total: total,
            });
            if flow.is_break() {
                break;
            }
        }
        report.left = self.pending_vectors()?;
        self.flush()?;
        Ok(report)
    }

    /// The time of the next document [`Collection::embed_pending_batch`] would embed, in
    /// milliseconds; `None` when nothing waits. Indexing stores each project's sessions newest
    /// first, so this is about the time of the newest session still waiting. Pending rows of
    /// documents deleted meanwhile are looked past; when only such rows are left, the earliest
    /// time there is (the next batch removes them).
    pub fn next_pending_time(&self) -> Result<Option<i64>> {
        let (first, orphans) = self.pending_docs(usize::MAX, 1)?;
        Ok(match first.first() {
            Some((_, d)) => Some(d.timestamp.timestamp_millis()),
            None => (!orphans.is_empty()).then_some(i64::MIN),
        })
    }

    /// Embeds one committed batch of the documents that wait for their vectors, adding to
    /// `report`; false when nothing was waiting.
    pub fn embed_pending_batch(&self, report: &mut EmbedReport) -> Result<bool> {
        loop {
            let (batch, orphans) = self.pending_batch(BATCH_DOCS)?;
            if batch.is_empty() && orphans.is_empty() {
                return Ok(false);
            }
            let docs: Vec<Document> = batch.iter().map(|(_, d)| d.clone()).collect();
            let mut add = AddReport::default();
            let prepared = self.prepare(&docs, &mut add)?;
            let _w = self.write_lock.locked();
            if prepared.model != self.embedder().model_id() {
                // The collection moved to another model meanwhile: embed again with it.
                continue;
            }
            let tx = self.db.begin_write()?;
            let mut new_vectors: Vec<(VectorId, Vec<f32>)> = Vec::new();
            {
                let mut pending = tx.open_table(PENDING)?;
                for id in &orphans {
                    pending.remove(*id)?;
                }
                let mut vectors = tx.open_table(VECTORS)?;
                for ((id, _), chunks) in batch.iter().zip(prepared.chunks) {
                    // Deleted or replaced since it was read: nothing to do.
                    if pending.remove(*id)?.is_none() {
                        continue;
                    }
                    report.documents += 1;
                    for (c, chunk) in chunks.into_iter().enumerate() {
                        let vid = VectorId::new(*id, c as u64);
                        let bytes = codec::vector_bytes(&chunk.vector);
                        vectors.insert(vid.raw(), bytes.as_slice())?;
                        if chunk.fresh {
                            store::cache::put(&tx, chunk.key, &bytes)?;
                        }
                        new_vectors.push((vid, chunk.vector));
                    }
                }
            }
            let generation = meta::bump_generation(&tx)?;
            tx.commit()?;
            report.chunks += new_vectors.len();
            report.embedded += add.embedded;
            report.cached += add.cached;
            self.follow_store(&[], &new_vectors, &[], generation)?;
            return Ok(true);
        }
    }

    /// Up to `n` pending documents (internal id and document), in internal-id order, and the
    /// pending ids among them whose document is gone (dropped with the batch).
    fn pending_batch(&self, n: usize) -> Result<(Vec<Pending>, Vec<u64>)> {
        self.pending_docs(n, n)
    }

    /// The pending rows in internal-id order, up to `rows` of them and until `docs` documents are
    /// found: those documents, and the ids of the rows passed whose document is gone.
    fn pending_docs(&self, rows: usize, docs: usize) -> Result<(Vec<Pending>, Vec<u64>)> {
        let tx = self.db.begin_read()?;
        let pending = tx.open_table(PENDING)?;
        let stored = tx.open_table(DOCS)?;
        let (mut out, mut orphans) = (Vec::with_capacity(docs.min(rows)), Vec::new());
        for row in pending.iter()?.take(rows) {
            if out.len() == docs {
                break;
            }
            let id = row?.0.value();
            match store::get_doc(&stored, id)? {
                Some(d) => out.push((id, d)),
                None => orphans.push(id),
            }
        }
        Ok((out, orphans))
    }
}
