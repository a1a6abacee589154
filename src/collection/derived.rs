//! The two derived indexes, the HNSW graph and the lexical index, kept in line with the store:
//! on open each is loaded as it is (same generation), caught up (missing ids added, gone ones
//! removed: [`crate::ids::diff`]), or rebuilt (missing, damaged, stale), and says which.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata};

use crate::ann::{Ann, HnswParams};
use crate::doc::Document;
use crate::error::{Error, Result};
use crate::ids::{LoadFailure, VectorId, diff};
use crate::store::tables::*;
use crate::store::{self, codec};

/// What happened to the vector index when the collection was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VectorIndexState {
    /// The persisted graph matched the store and was loaded as is. Its vectors are read at
    /// once; the HNSW links are read on a background thread (seconds at 100k vectors) once a
    /// search wants to walk them or a write needs them, and searches use the exact scan until
    /// they are in.
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
    /// Asked for ([`super::Collection::rebuild_vector_index`]) before any graph was loaded: the
    /// persisted graph was not read first.
    Requested,
}

/// The model of a graph dump that names none: dumps were written without a model before
/// collections could change model, when all-MiniLM-L6-v2 was the only one.
fn unnamed_dump_model() -> &'static str {
    crate::models::Manifest::builtin().models.iter().find(|m| m.legacy_flat).map_or("", |m| m.id.as_str())
}

/// Loads the persisted graph in `dir` and brings it in line with the store at `generation`,
/// whose vectors are `model`'s (a dump of another model's vectors is rebuilt).
pub(crate) fn open_graph(
    db: &Database,
    dir: &Path,
    dim: usize,
    params: HnswParams,
    link_from: usize,
    generation: u64,
    model: &str,
) -> Result<(Ann, VectorIndexState)> {
    Ok(match Ann::load(dir, dim, params, model, unnamed_dump_model()) {
        Ok((_, g)) if g > generation => (
            rebuild(db, dim, params, link_from)?,
            VectorIndexState::Rebuilt(RebuildReason::Stale { graph: g, store: generation }),
        ),
        // Same generation: the dump reflects exactly the committed store.
        Ok((mut ann, g)) if g == generation => {
            ann.set_link_from(link_from);
            (ann, VectorIndexState::Loaded)
        }
        Ok((mut ann, g)) => {
            ann.set_link_from(link_from);
            let (added, removed) = reconcile(db, &mut ann)?;
            (ann, VectorIndexState::CaughtUp { from_generation: g, to_generation: generation, added, removed })
        }
        Err(LoadFailure::Missing) => {
            (rebuild(db, dim, params, link_from)?, VectorIndexState::Rebuilt(RebuildReason::Missing))
        }
        Err(LoadFailure::Corrupt(why)) => {
            (rebuild(db, dim, params, link_from)?, VectorIndexState::Rebuilt(RebuildReason::Corrupt(why)))
        }
    })
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

fn read_vectors(db: &Database, ids: &[u64]) -> Result<Vec<(VectorId, Vec<f32>)>> {
    let tx = db.begin_read()?;
    let t = tx.open_table(VECTORS)?;
    let mut out = Vec::with_capacity(ids.len());
    for &id in ids {
        if let Some(v) = t.get(id)? {
            let v = codec::vector_from_bytes(v.value())?;
            // Damaged on disk: never served ([`requeue_unsound`] has it embedded again).
            if crate::vector::is_sound(&v) {
                out.push((VectorId::from_raw(id), v));
            }
        }
    }
    Ok(out)
}

/// Vectors of the store damaged on disk (not finite, or not of unit length): their rows go and
/// their documents wait to be embedded again (the next `index` does it), in one transaction.
/// Returns the documents queued (internal ids).
pub(crate) fn requeue_unsound(db: &Database) -> Result<Vec<u64>> {
    let bad: Vec<u64> = {
        let tx = db.begin_read()?;
        let t = tx.open_table(VECTORS)?;
        let mut bad = Vec::new();
        for e in t.iter()? {
            let (k, v) = e?;
            if codec::vector_from_bytes(v.value()).map_or(true, |v| !crate::vector::is_sound(&v)) {
                bad.push(k.value());
            }
        }
        bad
    };
    if bad.is_empty() {
        return Ok(Vec::new());
    }
    let tx = db.begin_write()?;
    let mut docs = std::collections::BTreeSet::new();
    {
        let mut vectors = tx.open_table(VECTORS)?;
        let mut pending = tx.open_table(crate::store::tables::PENDING)?;
        for id in &bad {
            vectors.remove(*id)?;
            let doc = VectorId::from_raw(*id).doc();
            if docs.insert(doc) {
                pending.insert(doc, 0)?;
            }
        }
    }
    crate::store::meta::bump_generation(&tx)?;
    tx.commit()?;
    Ok(docs.into_iter().collect())
}

/// Every stored document's internal id, sorted.
fn stored_doc_ids(db: &Database) -> Result<Vec<u64>> {
    let tx = db.begin_read()?;
    let t = tx.open_table(DOCS)?;
    let mut out = Vec::with_capacity(t.len()? as usize);
    for e in t.iter()? {
        out.push(e?.0.value());
    }
    Ok(out)
}

pub(crate) fn rebuild(db: &Database, dim: usize, params: HnswParams, link_from: usize) -> Result<Ann> {
    let tx = db.begin_read()?;
    let t = tx.open_table(VECTORS)?;
    let mut all = Vec::with_capacity(t.len()? as usize);
    for e in t.iter()? {
        let (k, v) = e?;
        let v = codec::vector_from_bytes(v.value())?;
        if crate::vector::is_sound(&v) {
            all.push((VectorId::from_raw(k.value()), v));
        }
    }
    let mut ann = Ann::unlinked(dim, params, link_from);
    let items: Vec<(VectorId, &[f32])> = all.iter().map(|(id, v)| (*id, v.as_slice())).collect();
    ann.insert(&items);
    Ok(ann)
}

/// Every stored document's `(internal id, lexical text)`.
fn lexical_documents(db: &Database, only: Option<&[u64]>) -> Result<Vec<(u64, String)>> {
    let tx = db.begin_read()?;
    let docs = tx.open_table(DOCS)?;
    let mut out = Vec::new();
    match only {
        Some(ids) => {
            for &id in ids {
                if let Some(d) = store::get_doc(&docs, id)? {
                    out.push((id, d.lexical_text()));
                }
            }
        }
        None => {
            for e in docs.iter()? {
                let (k, v) = e?;
                let d: Document = codec::decode_document(v.value())?;
                out.push((k.value(), d.lexical_text()));
            }
        }
    }
    Ok(out)
}

/// Opens the lexical index and brings it in line with the store generation.
pub(crate) fn open_lexical(
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
        Opened::Fresh(failure) => {
            rebuild(&lex)?;
            VectorIndexState::Rebuilt(match failure {
                LoadFailure::Missing => RebuildReason::Missing,
                LoadFailure::Corrupt(why) => RebuildReason::Corrupt(why),
            })
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
    let (missing, extra) = diff(&stored_doc_ids(db)?, &lex.ids()?);
    let add = lexical_documents(db, Some(&missing))?;
    lex.apply(&extra, &add, generation)?;
    Ok(VectorIndexState::CaughtUp {
        from_generation: from,
        to_generation: generation,
        added: add.len(),
        removed: extra.len(),
    })
}

/// Brings a loaded graph in line with the store. Returns (added, tombstoned documents).
fn reconcile(db: &Database, ann: &mut Ann) -> Result<(usize, usize)> {
    let stored = stored_ids(db)?;
    let mut indexed: Vec<u64> = ann.vector_ids().map(VectorId::raw).collect();
    indexed.sort_unstable();
    let (missing, extra) = diff(&stored, &indexed);
    let stored_docs: std::collections::HashSet<u64> = stored.iter().map(|id| VectorId::from_raw(*id).doc()).collect();
    let extra: std::collections::BTreeSet<u64> = extra.iter().map(|id| VectorId::from_raw(*id).doc()).collect();
    let mut removed = 0;
    for doc in extra {
        // A document whose id is in the store keeps its live vectors; only gone ones are buried.
        if !stored_docs.contains(&doc) {
            ann.tombstone(doc);
            removed += 1;
        }
    }
    let vecs = read_vectors(db, &missing)?;
    let items: Vec<(VectorId, &[f32])> = vecs.iter().map(|(id, v)| (*id, v.as_slice())).collect();
    ann.insert(&items);
    Ok((vecs.len(), removed))
}
