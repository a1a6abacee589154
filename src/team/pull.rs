//! `convdex pull`: the team's documents in a local mirror, to search offline.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::{TeamStore, docs_table, vectors_table};
use crate::doc::DocKind;
use crate::error::Result;
use crate::index::Index;

/// What a pull did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PullReport {
    /// Collections mirrored.
    pub collections: usize,
    /// Documents written (new or changed).
    pub written: usize,
    /// Documents the mirror already held as they are.
    pub unchanged: usize,
    /// Documents removed from the mirror: forgotten or deleted in the team store.
    pub removed: usize,
}

impl TeamStore {
    /// Mirrors every project this role can read (or only `project`) into `mirror`, a data
    /// directory of its own: documents with the vectors of the mirror's model (a project whose
    /// vectors are of another model is embedded here), and what the team no longer holds (a
    /// forgotten session) removed, so a forget reaches every mirror at its next pull.
    pub fn pull(&self, mirror: &Index, project: Option<&str>) -> Result<PullReport> {
        let mut report = PullReport::default();
        let model = mirror.embedder()?.model_id().to_string();
        for (tenant, name) in self.projects()? {
            if project.is_some_and(|p| p != name) {
                continue;
            }
            let coll = mirror.collection(&tenant, &name)?;
            let d = docs_table(&tenant, &name);
            let has_model = self.has_model(&tenant, &name, &model)?;
            let rows = self.with(|c| c.query(&format!("SELECT doc::text, hash FROM {d}"), &[]))?;
            let mut vectors: HashMap<uuid::Uuid, Vec<(i32, String)>> = HashMap::new();
            if has_model {
                let v = vectors_table(&tenant, &name, &model);
                for r in self.with(|c| c.query(&format!("SELECT id, chunk, embedding::text FROM {v}"), &[]))? {
                    vectors.entry(r.get(0)).or_default().push((r.get(1), r.get(2)));
                }
            }
            // What the mirror holds, by the document alone (its vectors follow its text).
            let mut held: HashMap<uuid::Uuid, String> = HashMap::new();
            for kind in [DocKind::Message, DocKind::Decision, DocKind::Summary] {
                held.extend(coll.documents_of_kind(kind)?.iter().map(|doc| (doc.id, super::doc_hash(doc, &[]))));
            }
            let mut team_ids = HashSet::new();
            let (mut with_vectors, mut chunks, mut to_embed) = (Vec::new(), Vec::new(), Vec::new());
            for r in rows {
                let doc = self.decode(r.get(0), &format!("{tenant}/{name}"))?;
                team_ids.insert(doc.id);
                let mut vs = vectors.remove(&doc.id).unwrap_or_default();
                vs.sort_by_key(|(chunk, _)| *chunk);
                let vs: Vec<Vec<f32>> = vs.iter().map(|(_, text)| parse_vector(text)).collect();
                if held.get(&doc.id) == Some(&super::doc_hash(&doc, &[])) {
                    report.unchanged += 1;
                    continue;
                }
                if vs.is_empty() || vs.iter().any(Vec::is_empty) {
                    to_embed.push(doc);
                } else {
                    with_vectors.push(doc);
                    chunks.push(vs);
                }
            }
            let gone: Vec<uuid::Uuid> = held.keys().filter(|id| !team_ids.contains(id)).copied().collect();
            report.removed += coll.delete(&gone)?;
            for (docs, vs) in with_vectors.chunks(500).zip(chunks.chunks(500)) {
                coll.add_embedded_chunks(docs, vs)?;
            }
            if !to_embed.is_empty() {
                coll.add(&to_embed)?;
            }
            report.written += with_vectors.len() + to_embed.len();
            coll.flush()?;
            report.collections += 1;
        }
        Ok(report)
    }
}

/// A pgvector's text form (`[0.1,0.2]`) as numbers; empty when it does not parse.
fn parse_vector(text: &str) -> Vec<f32> {
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    let parsed: std::result::Result<Vec<f32>, _> = inner.split(',').map(|x| x.trim().parse::<f32>()).collect();
    parsed.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn vectors_read_back_from_their_text() {
        assert_eq!(super::parse_vector("[0.5,-1,2e-3]"), vec![0.5, -1.0, 0.002]);
        assert!(super::parse_vector("[0.5,x]").is_empty());
    }
}
