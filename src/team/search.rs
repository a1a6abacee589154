//! Search in the team store: by meaning through pgvector, by words through Postgres full text
//! over convdex's own lexemes, every filter as SQL, the candidates ranked by the local ranking
//! (calibrated fusion, context, relevance).

use std::collections::HashMap;

use postgres::types::ToSql;
use serde::Serialize;

use super::{TeamStore, docs_table, lexemes, vector_literal, vectors_table};
use crate::doc::Document;
use crate::error::{Error, Result};
use crate::search::fields::RankFields;
use crate::search::fuse::{self, Background, Candidate, LexicalScale, POOL_DEPTH, Pool};
use crate::search::{Filter, Query, Ranking, SearchMode, Signals, asks_about_a_decision};
use crate::text::paths;

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
    /// How the hits are ordered, as for a local search (its translation and glosses aside: the
    /// team store matches the question's own words). Default: [`Ranking::default`].
    pub ranking: Ranking,
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
            ranking: Ranking::default(),
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
            ranking: query.ranking,
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
                "EXISTS (SELECT 1 FROM unnest(?::text[]) s WHERE s <> '' AND starts_with(d.session_id, s))",
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
    /// The score of the local ranking (calibrated fusion, context; [`crate::Hit::score`]).
    pub score: f32,
    /// How likely this hit answers the question, 0–100, read as a local hit's
    /// ([`crate::Hit::relevance`]).
    pub relevance: u8,
    /// Cosine similarity to the question (its best chunk), when searched by meaning.
    pub similarity: Option<f32>,
    /// BM25 of the question's words, when it matched any.
    pub words: Option<f32>,
}

/// BM25's term-frequency saturation and length normalisation (tantivy's, the local index's).
const BM25_K1: f32 = 1.2;
const BM25_B: f32 = 0.75;

/// A tsquery matching one lexeme, quoted (read with the `tsquery` input cast, which keeps a
/// quoted lexeme as it is: `to_tsquery` would split `foo_bar` again with Postgres's parser).
fn quoted(w: &str) -> String {
    format!("'{}'", w.replace('\\', "\\\\").replace('\'', "''"))
}

/// What calibrates a project's BM25: documents, their mean length (in distinct lexemes, as the
/// documents table holds them) and each query lexeme's document frequency.
struct Corpus {
    docs: f32,
    mean_len: f32,
    df: Vec<f32>,
}

impl Corpus {
    fn idf(&self, i: usize) -> f32 {
        let df = self.df[i];
        (1.0 + (self.docs - df + 0.5) / (df + 0.5)).ln()
    }

    /// BM25 of a document for the query's lexemes (`None`: it matches none), over its words as
    /// the local index holds them.
    fn bm25(&self, terms: &[String], doc: &Document) -> Option<f32> {
        let mut tf: HashMap<String, f32> = HashMap::new();
        for t in crate::lexical::tokenize::analyze(&doc.lexical_text()) {
            let w = t.text.to_lowercase();
            if !w.is_empty() {
                *tf.entry(w).or_default() += 1.0;
            }
        }
        let len = tf.len() as f32;
        let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * len / self.mean_len.max(1.0));
        let mut score = 0.0;
        let mut matched = false;
        for (i, t) in terms.iter().enumerate() {
            if let Some(&f) = tf.get(t) {
                matched = true;
                score += self.idf(i) * f * (BM25_K1 + 1.0) / (f + norm);
            }
        }
        matched.then_some(score)
    }

    /// What a document of mean length holding every query lexeme once scores: BM25 over it is
    /// the share of the question a document matches ([`LexicalScale`]).
    fn scale(&self) -> LexicalScale {
        LexicalScale { reference: (0..self.df.len()).map(|i| self.idf(i)).sum(), required: 0.0 }
    }
}

impl TeamStore {
    /// Searches every project the role can read (or the query's tenant and project). `vector`
    /// is the question embedded by `model` (None: by words only); a project whose vectors
    /// were made by another model is searched by words. The hits are ranked as a local search
    /// ranks them (the same calibrated fusion, context and relevance, docs/team.md): each project
    /// contributes its best documents by cosine (pgvector) and by words (Postgres full text),
    /// each scored on both signals (the exact cosine of its best chunk; BM25 over its words with
    /// the project's document frequencies), the cosines read against a sample of the project's
    /// vectors. Not as locally: the question's words are matched as given (no translation, no
    /// required phrase or identifier).
    pub fn search(&self, q: &TeamQuery, model: &str, vector: Option<&[f32]>) -> Result<Vec<TeamHit>> {
        // The same checks and typed errors as a local search's.
        Query {
            text: q.text.clone(),
            filter: q.filter.clone(),
            mode: Some(q.mode),
            limit: q.limit,
            ranking: q.ranking,
        }
        .validate()?;
        let want = q.limit.max(POOL_DEPTH);
        let terms = lexemes(&q.text);
        // Each lexeme as a tsquery (its document frequency), and all of them (the candidates).
        let each: Vec<String> = terms.iter().map(|t| quoted(t)).collect();
        let words = each.join(" | ");
        let literal = vector.map(vector_literal);
        let mut pools: Vec<Pool> = Vec::new();
        let mut owners: Vec<(String, String, Vec<Document>)> = Vec::new();
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
            let has_model =
                vector.is_some() && q.mode != SearchMode::Lexical && self.has_model(&tenant, &project, model)?;
            let by_meaning = literal.as_ref().filter(|_| has_model);
            let mut docs: Vec<Document> = Vec::new();
            let mut at: HashMap<uuid::Uuid, usize> = HashMap::new();
            let mut cosine: HashMap<uuid::Uuid, f32> = HashMap::new();
            let mut background = Background::default();
            let vt = vectors_table(&tenant, &project, model);
            if let Some(v) = by_meaning {
                let (filters, mut params) = q.clauses(2, root.as_deref());
                params.insert(0, Box::new(v.clone()));
                // Rows are chunks: a document's best comes first.
                let sql = format!(
                    "SELECT d.doc::text, (1 - (v.embedding <=> $1::text::vector))::real FROM {vt} v JOIN {d} d ON d.id = v.id
                     WHERE {filters} ORDER BY v.embedding <=> $1::text::vector LIMIT {}",
                    want * 2
                );
                // A filter: an exact scan (the graph of pgvector 0.6 filters after its walk and
                // can return fewer than asked); none: the graph, searched wide enough.
                let setting = if !q.filter.is_empty() {
                    "SET LOCAL enable_indexscan = off".to_string()
                } else {
                    format!("SET LOCAL hnsw.ef_search = {}", (want * 2).clamp(40, 1000))
                };
                for (score, doc) in self.rows(&setting, &sql, &params)? {
                    if at.len() < want && !at.contains_key(&doc.id) {
                        cosine.insert(doc.id, score);
                        at.insert(doc.id, docs.len());
                        docs.push(doc);
                    }
                }
                // The background: the question's cosine over a fixed sample of the project's
                // vectors, standing for all of them.
                let (sample, count) = self.with(|c| {
                    let sample: Vec<f32> = c
                        .query(
                            &format!(
                                "SELECT (1 - (embedding <=> $1::text::vector))::real FROM {vt} ORDER BY id, chunk LIMIT {}",
                                fuse::BACKGROUND_SAMPLE
                            ),
                            &[v],
                        )?
                        .iter()
                        .map(|r| r.get(0))
                        .collect();
                    let count: i64 = c.query_one(&format!("SELECT count(*) FROM {vt}"), &[])?.get(0);
                    Ok((sample, count))
                })?;
                for c in sample {
                    background.add(c);
                }
                background.represents(count.max(0) as usize);
            }
            let mut scale = LexicalScale::default();
            // BM25 of each candidate found by words, and of the others once they are known.
            let mut bm25: HashMap<uuid::Uuid, f32> = HashMap::new();
            let mut corpus = None;
            if q.mode != SearchMode::Semantic && !terms.is_empty() {
                let (filters, mut params) = q.clauses(2, root.as_deref());
                params.insert(0, Box::new(words.clone()));
                // Candidates by full text, wider than kept: `ts_rank` knows no document
                // frequency, BM25 below re-scores them.
                let sql = format!(
                    "SELECT d.doc::text, ts_rank(d.words, q.w)::real FROM {d} d, (SELECT $1::text::tsquery AS w) q
                     WHERE d.words @@ q.w AND {filters} ORDER BY 2 DESC LIMIT {}",
                    want * 3
                );
                let found = self.rows("SET LOCAL enable_seqscan = on", &sql, &params)?;
                let c = self.with(|c| {
                    let row =
                        c.query_one(&format!("SELECT count(*), coalesce(avg(length(words)), 0)::real FROM {d}"), &[])?;
                    let df: Vec<f32> = c
                        .query(
                            &format!(
                                "SELECT (SELECT count(*) FROM {d} WHERE words @@ x::tsquery)::real
                                 FROM unnest($1::text[]) WITH ORDINALITY AS u(x, i) ORDER BY i"
                            ),
                            &[&each],
                        )?
                        .iter()
                        .map(|r| r.get(0))
                        .collect();
                    Ok(Corpus { docs: row.get::<_, i64>(0) as f32, mean_len: row.get(1), df })
                })?;
                scale = c.scale();
                let mut scored: Vec<(f32, Document)> =
                    found.into_iter().filter_map(|(_, doc)| c.bm25(&terms, &doc).map(|s| (s, doc))).collect();
                bm25.extend(scored.iter().map(|(s, doc)| (doc.id, *s)));
                scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.id.cmp(&b.1.id)));
                for (_, doc) in scored.into_iter().take(want) {
                    if let std::collections::hash_map::Entry::Vacant(slot) = at.entry(doc.id) {
                        slot.insert(docs.len());
                        docs.push(doc);
                    }
                }
                corpus = Some(c);
            }
            // Every candidate scored on both signals: the cosine of those found by words only.
            if let Some(v) = by_meaning {
                let missing: Vec<uuid::Uuid> = docs.iter().map(|d| d.id).filter(|i| !cosine.contains_key(i)).collect();
                if !missing.is_empty() {
                    let rows = self.with(|c| {
                        c.query(
                            &format!(
                                "SELECT id, max(1 - (embedding <=> $1::text::vector))::real FROM {vt} WHERE id = ANY($2) GROUP BY id"
                            ),
                            &[v, &missing],
                        )
                    })?;
                    for r in rows {
                        cosine.insert(r.get(0), r.get(1));
                    }
                }
            }
            // Every candidate scored on both signals: the BM25 of those found by meaning only.
            if let Some(c) = &corpus {
                for doc in &docs {
                    if let std::collections::hash_map::Entry::Vacant(slot) = bm25.entry(doc.id)
                        && let Some(s) = c.bm25(&terms, doc)
                    {
                        slot.insert(s);
                    }
                }
            }
            // No rank within each list: no team hit shows one and the ranking reads none.
            let candidates = docs
                .iter()
                .enumerate()
                .map(|(i, doc)| Candidate {
                    id: i as u64,
                    fields: RankFields::of(doc),
                    chunk: 0,
                    signals: Signals {
                        semantic: cosine.get(&doc.id).copied(),
                        lexical: bm25.get(&doc.id).copied(),
                        ..Default::default()
                    },
                })
                .collect();
            pools.push(Pool { candidates, model: model.to_string(), background, lexical: scale });
            owners.push((tenant, project, docs));
        }
        let ranked = fuse::rank(pools, q.mode, &q.ranking, asks_about_a_decision(&q.text));
        let mut hits = Vec::with_capacity(q.limit);
        for r in ranked.into_iter().take(q.limit) {
            let (tenant, project, docs) = &owners[r.pool];
            let Some(doc) = docs.get(r.candidate.id as usize) else { continue };
            hits.push(TeamHit {
                tenant: tenant.clone(),
                project: project.clone(),
                doc: doc.clone(),
                score: r.score,
                relevance: r.relevance,
                similarity: r.candidate.signals.semantic,
                words: r.candidate.signals.lexical,
            });
        }
        Ok(hits)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::DocKind;

    #[test]
    fn a_question_becomes_a_safe_tsquery_and_filters_numbered_params() {
        let q: Vec<String> = lexemes("it's a \\ path: src/auth.rs").iter().map(|w| quoted(w)).collect();
        assert!(!q.is_empty() && q.iter().all(|t| t.starts_with('\'') && t.ends_with('\'')), "{q:?}");
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
