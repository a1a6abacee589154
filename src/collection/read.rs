//! Reading a collection: documents by id, session, kind and file, counts, the handoff brief and
//! the layered export. (Search is [`crate::SearchBuilder`].)

use crate::sync::Shared;
use std::path::Path;

use chrono::{DateTime, Utc};
use redb::{ReadableDatabase, ReadableMultimapTable, ReadableTable, ReadableTableMetadata};
use serde::Serialize;
use uuid::Uuid;

use super::Collection;
use crate::doc::{DocKind, Document};
use crate::error::{Error, Result};
use crate::store::tables::*;
use crate::store::{get_doc, meta};

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
    /// Documents the lexical index can find (committed; 0 without a lexical index).
    pub lexical_documents: usize,
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

impl Collection {
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

    /// Reads and decodes every stored document: a page that redb's checksums pass but whose
    /// record no longer decodes (bit rot inside a text) is damage, named with the file.
    /// `convdex doctor` calls it.
    pub fn verify_documents(&self) -> Result<usize> {
        let tx = self.db.begin_read()?;
        let docs = tx.open_table(DOCS)?;
        let mut n = 0;
        for row in docs.iter()? {
            let (id, bytes) = row?;
            if let Err(e) = crate::store::codec::decode_document(bytes.value()) {
                return Err(Error::Damaged {
                    path: self.dir().join("data.redb"),
                    reason: format!("document {} does not decode ({})", id.value(), e),
                });
            }
            n += 1;
        }
        Ok(n)
    }

    /// Every document with its stored vectors (one per chunk, in chunk order; none while its
    /// vectors wait to be embedded, and none that fails the soundness check), in storage order.
    /// What a team store is sent (`convdex push`).
    pub fn documents_with_vectors(&self) -> Result<Vec<(Document, Vec<Vec<f32>>)>> {
        let tx = self.db.begin_read()?;
        let docs = tx.open_table(DOCS)?;
        let vectors = tx.open_table(VECTORS)?;
        let mut out = Vec::with_capacity(docs.len()? as usize);
        for e in docs.iter()? {
            let (id, bytes) = e?;
            let id = id.value();
            let doc = crate::store::codec::decode_document(bytes.value())?;
            let from = crate::ids::VectorId::new(id, 0).raw();
            let to = crate::ids::VectorId::new(id, crate::ids::VectorId::MAX_CHUNKS - 1).raw();
            let mut chunks = Vec::new();
            for v in vectors.range(from..=to)? {
                let v = crate::store::codec::vector_from_bytes(v?.1.value())?;
                if crate::vector::is_sound(&v) {
                    chunks.push(v);
                }
            }
            out.push((doc, chunks));
        }
        Ok(out)
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

    /// Counts and sizes.
    pub fn stats(&self) -> Result<CollectionStats> {
        let tx = self.db.begin_read()?;
        let kinds = tx.open_multimap_table(IDX_KIND)?;
        let count = |k: DocKind| -> Result<usize> { Ok(kinds.get(k.code())?.len() as usize) };
        let sessions = tx.open_multimap_table(IDX_SESSION)?.iter()?.count();
        let ann = self.graph()?.reading();
        let bytes_on_disk = dir_size(&self.dir);
        let model = meta::model_id(&self.db)?;
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
            lexical_documents: self.lexical.as_ref().map_or(0, |l| l.num_docs()),
            generation: meta::read_generation(&self.db)?,
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
        meta::read_generation(&self.db)
    }

    /// Whether [`Collection::mark_imports_answering`] was called on this store.
    pub(crate) fn imports_answering(&self) -> Result<bool> {
        meta::imports_answering(&self.db)
    }

    /// Keys of the `sessions` table that start with `prefix`, sorted.
    pub(crate) fn session_keys(&self, prefix: &str) -> Result<Vec<String>> {
        let tx = self.db.begin_read()?;
        let table = tx.open_table(SESSIONS)?;
        let mut out = Vec::new();
        for entry in table.range::<&str>(prefix..)? {
            let (k, _) = entry?;
            let k = k.value();
            if !k.starts_with(prefix) {
                break;
            }
            out.push(k.to_string());
        }
        Ok(out)
    }

    /// Raw ingest state of a session (`sessions` table).
    pub(crate) fn get_session_bytes(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let tx = self.db.begin_read()?;
        Ok(tx.open_table(SESSIONS)?.get(id)?.map(|v| v.value().to_vec()))
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

impl Collection {
    /// Adds `tag` to every document of a session (written again with their vectors from the
    /// embedding cache: the texts are unchanged). Returns how many documents were tagged.
    pub fn tag_session(&self, session_id: &str, tag: &str) -> Result<usize> {
        let tag = tag.trim();
        if tag.is_empty() || tag.chars().any(char::is_control) {
            return Err(Error::InvalidArgument("a tag is a short word or phrase without control characters".into()));
        }
        let mut docs = self.session_documents(session_id)?;
        if docs.is_empty() {
            return Err(Error::NoSuchSession { prefix: session_id.to_string() });
        }
        docs.retain(|d| !d.tags.iter().any(|t| t == tag));
        for d in &mut docs {
            d.tags.push(tag.to_string());
        }
        self.add(&docs)?;
        Ok(docs.len())
    }
}
