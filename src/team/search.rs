//! Search in the team store: by meaning through pgvector, by words through Postgres full text
//! over convdex's own lexemes, every filter as SQL, the two lists fused by rank.

use std::collections::HashMap;

use postgres::types::ToSql;
use serde::Serialize;

use super::{TeamStore, docs_table, lexemes, vector_literal, vectors_table};
use crate::doc::Document;
use crate::error::{Error, Result};
use crate::search::{Filter, Query, SearchMode, validate_limit};
use crate::text::paths;

/// Reciprocal-rank constant of the fusion (the usual 60).
const RRF_K: f32 = 60.0;

/// A question to the team store: the text, the same [`Filter`] a local search takes (every
/// field of it as SQL), a tenant and a project. Defaults: every tenant and project the role
/// can read, no filter, both signals, 10 hits.
#[derive(Debug, Clone)]
pub struct TeamQuery {
    /// The question.
    pub text: String,
    /// Only this tenant.
    pub tenant: Option<String>,
    /// Only this project.
    pub project: Option<String>,
    /// Which documents may be returned, as for a local search. Sessions match by id or by the
    /// start of one (`7f3c`); a file typed absolute matches the path stored relative to the
    /// project's folder as its first push recorded it.
    pub filter: Filter,
    /// Meaning, words or both.
    pub mode: SearchMode,
    /// Hits wanted.
    pub limit: usize,
}

impl TeamQuery {
    /// A question with the defaults.
    pub fn new(text: &str) -> TeamQuery {
        TeamQuery {
            text: text.to_string(),
            tenant: None,
            project: None,
            filter: Filter::default(),
            mode: SearchMode::Hybrid,
            limit: 10,
        }
    }

    /// The team store's form of a local [`Query`]: its text, filter, mode (hybrid when unset)
    /// and limit.
    pub fn of(query: &Query) -> TeamQuery {
        TeamQuery {
            text: query.text.clone(),
            tenant: None,
            project: None,
            filter: query.filter.clone(),
            mode: query.mode.unwrap_or_default(),
            limit: query.limit,
        }
    }

    /// The filter as SQL over the documents table `d`, numbered from `$first`: the fields of
    /// [`Filter`] with their local meaning. `root` is the project's folder, for files typed absolute.
    fn clauses(&self, first: usize, root: Option<&str>) -> (String, Vec<Box<dyn ToSql + Sync>>) {
        let f = &self.filter;
        let mut sql: Vec<String> = Vec::new();
        let mut params: Vec<Box<dyn ToSql + Sync>> = Vec::new();
        let mut add = |clause: &str, p: Box<dyn ToSql + Sync>| {
            sql.push(clause.replace('?', &format!("${}", first + params.len())));
            params.push(p);
        };
        if !f.kinds.is_empty() {
            add("d.kind = ANY(?)", Box::new(f.kinds.iter().map(|k| k.as_str().to_string()).collect::<Vec<_>>()));
        }
        if !f.tags_any.is_empty() {
            add("d.tags && ?", Box::new(f.tags_any.clone()));
        }
        if !f.tags_all.is_empty() {
            add("d.tags @> ?", Box::new(f.tags_all.clone()));
        }
        if let Some(domain) = &f.domain {
            add("d.domain = ?", Box::new(domain.clone()));
        }
        if !f.sessions.is_empty() {
            add(
                "EXISTS (SELECT 1 FROM unnest(?::text[]) s WHERE starts_with(d.session_id, s))",
                Box::new(f.sessions.clone()),
            );
        }
        if !f.files.is_empty() {
            let forms: Vec<String> = f.files.iter().flat_map(|p| paths::lookup_forms(p, root)).collect();
            add("d.files && ?", Box::new(forms));
        }
        if let Some(prefix) = &f.file_prefix {
            // A directory prefix keeps its `/` (`src/` must not match `srcx/`), as locally.
            let dir = prefix.ends_with('/') || prefix.ends_with('\\');
            let forms: Vec<String> = paths::lookup_forms(prefix, root)
                .into_iter()
                .map(|p| if dir && !p.is_empty() && !p.ends_with('/') { format!("{p}/") } else { p })
                .collect();
            add(
                "EXISTS (SELECT 1 FROM unnest(d.files) f, unnest(?::text[]) p WHERE starts_with(f, p))",
                Box::new(forms),
            );
        }
        if !f.agents.is_empty() {
            add("d.tags && ?", Box::new(f.agents.iter().map(|a| format!("source:{a}")).collect::<Vec<_>>()));
        }
        if let Some(t) = f.since {
            add("d.ts >= ?::text::timestamptz", Box::new(t.to_rfc3339()));
        }
        if let Some(t) = f.until {
            add("d.ts <= ?::text::timestamptz", Box::new(t.to_rfc3339()));
        }
        let sql = if sql.is_empty() { "TRUE".to_string() } else { sql.join(" AND ") };
        (sql, params)
    }
}

/// A hit of the team store.
#[derive(Debug, Clone, Serialize)]
pub struct TeamHit {
    /// The tenant it belongs to.
    pub tenant: String,
    /// The project it belongs to.
    pub project: String,
    /// The document.
    pub doc: Document,
    /// The fused score (reciprocal ranks).
    pub score: f32,
    /// Cosine similarity to the question, when found by meaning.
    pub similarity: Option<f32>,
    /// Full-text rank, when found by words.
    pub words: Option<f32>,
}

/// A tsquery matching any of the question's lexemes, each quoted.
fn tsquery(text: &str) -> String {
    lexemes(text)
        .iter()
        .map(|w| format!("'{}'", w.replace('\\', "\\\\").replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(" | ")
}

impl TeamStore {
    /// Searches every project the role can read (or the query's tenant and project). `vector`
    /// is the question embedded by `model` (None: by words only); a project whose vectors
    /// were made by another model is searched by words.
    pub fn search(&self, q: &TeamQuery, model: &str, vector: Option<&[f32]>) -> Result<Vec<TeamHit>> {
        // The same typed errors as a local search's.
        if q.text.trim().is_empty() {
            return Err(Error::EmptyQuery);
        }
        q.filter.validate()?;
        validate_limit(q.limit)?;
        let pool = (q.limit * 4).max(40);
        let mut semantic: Vec<(f32, String, String, Document)> = Vec::new();
        let mut lexical: Vec<(f32, String, String, Document)> = Vec::new();
        let words = tsquery(&q.text);
        for (tenant, project) in self.projects()? {
            if q.tenant.as_ref().is_some_and(|t| *t != tenant) || q.project.as_ref().is_some_and(|p| *p != project) {
                continue;
            }
            let d = docs_table(&tenant, &project);
            let root = if q.filter.files.is_empty() && q.filter.file_prefix.is_none() {
                None
            } else {
                self.project_root(&tenant, &project)?
            };
            let has_model = self.has_model(&tenant, &project, model)?;
            if let (Some(v), true, true) = (vector, has_model, q.mode != SearchMode::Lexical) {
                let vt = vectors_table(&tenant, &project, model);
                let (filters, mut params) = q.clauses(2, root.as_deref());
                params.insert(0, Box::new(vector_literal(v)));
                let sql = format!(
                    "SELECT d.doc::text, (1 - (v.embedding <=> $1::text::vector))::real FROM {vt} v JOIN {d} d ON d.id = v.id
                     WHERE {filters} ORDER BY v.embedding <=> $1::text::vector LIMIT {pool}"
                );
                // A filter: an exact scan (the graph of pgvector 0.6 filters after its walk and
                // can return fewer than asked); none: the graph, searched wide enough.
                let setting = if !q.filter.is_empty() {
                    "SET LOCAL enable_indexscan = off".to_string()
                } else {
                    format!("SET LOCAL hnsw.ef_search = {}", pool.clamp(40, 1000))
                };
                for (score, doc) in self.rows(&setting, &sql, &params)? {
                    semantic.push((score, tenant.clone(), project.clone(), doc));
                }
            }
            if q.mode != SearchMode::Semantic && !words.is_empty() {
                let (filters, mut params) = q.clauses(2, root.as_deref());
                params.insert(0, Box::new(words.clone()));
                let sql = format!(
                    "SELECT d.doc::text, ts_rank(d.words, w)::real FROM {d} d, to_tsquery('simple', $1) w
                     WHERE d.words @@ w AND {filters} ORDER BY 2 DESC LIMIT {pool}"
                );
                for (score, doc) in self.rows("SET LOCAL enable_seqscan = on", &sql, &params)? {
                    lexical.push((score, tenant.clone(), project.clone(), doc));
                }
            }
        }
        Ok(fuse(semantic, lexical, q.limit))
    }

    /// Runs `sql` after `setting` in one transaction: (score, document) per row, both queries
    /// selecting the document's JSON and a `real` score.
    fn rows(&self, setting: &str, sql: &str, params: &[Box<dyn ToSql + Sync>]) -> Result<Vec<(f32, Document)>> {
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let rows = self.with(|c| {
            let mut tx = c.transaction()?;
            tx.batch_execute(setting)?;
            let rows = tx.query(sql, &refs)?;
            tx.commit()?;
            Ok(rows)
        })?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let json: String = r.get(0);
            let score: f32 = r.get(1);
            let doc: Document = serde_json::from_str(&json).map_err(|e| Error::Team {
                store: self.shown.clone(),
                reason: format!("a stored document does not decode ({e})"),
                fix: "push the project again from a machine that holds it (`convdex push`)".into(),
            })?;
            out.push((score, doc));
        }
        Ok(out)
    }
}

/// Both lists as one, by reciprocal rank; a document once (its best chunk).
fn fuse(
    mut semantic: Vec<(f32, String, String, Document)>,
    mut lexical: Vec<(f32, String, String, Document)>,
    limit: usize,
) -> Vec<TeamHit> {
    semantic.sort_by(|a, b| b.0.total_cmp(&a.0));
    lexical.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut by_id: HashMap<uuid::Uuid, TeamHit> = HashMap::new();
    let mut rank = 0usize;
    for (sim, tenant, project, doc) in semantic {
        if by_id.contains_key(&doc.id) {
            continue;
        }
        rank += 1;
        let score = 1.0 / (RRF_K + rank as f32);
        by_id.insert(doc.id, TeamHit { tenant, project, doc, score, similarity: Some(sim), words: None });
    }
    let mut rank = 0usize;
    for (w, tenant, project, doc) in lexical {
        rank += 1;
        let add = 1.0 / (RRF_K + rank as f32);
        by_id
            .entry(doc.id)
            .and_modify(|h| {
                if h.words.is_none() {
                    h.score += add;
                    h.words = Some(w);
                }
            })
            .or_insert(TeamHit { tenant, project, doc, score: add, similarity: None, words: Some(w) });
    }
    let mut hits: Vec<TeamHit> = by_id.into_values().collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.id.cmp(&b.doc.id)));
    hits.truncate(limit);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::DocKind;

    #[test]
    fn a_question_becomes_a_safe_tsquery_and_filters_numbered_params() {
        let q = tsquery("it's a \\ path: src/auth.rs");
        assert!(!q.is_empty() && q.split(" | ").all(|t| t.starts_with('\'') && t.ends_with('\'')), "{q}");
        let mut query = TeamQuery::new("x");
        query.filter.kinds = vec![DocKind::Decision];
        query.filter.tags_any = vec!["go".into()];
        query.filter.domain = Some("backend".into());
        let (sql, params) = query.clauses(2, None);
        assert_eq!(sql, "d.kind = ANY($2) AND d.tags && $3 AND d.domain = $4");
        assert_eq!(params.len(), 3);
        assert_eq!(TeamQuery::new("x").clauses(2, None).0, "TRUE");
    }
}
