//! Search in the team store: by meaning through pgvector, by words through Postgres full text
//! over convdex's own lexemes, every filter as SQL, the candidates ranked by the local ranking
//! (calibrated fusion, context, relevance).

use std::collections::HashMap;

use postgres::types::ToSql;
use serde::Serialize;

use uuid::Uuid;

use super::words::{Question, Words};
use super::{TeamStore, docs_table, vector_literal, vectors_table};
use crate::collection::query_vectors;
use crate::doc::Document;
use crate::embed::Embedder;
use crate::error::Result;
use crate::lexical::LexicalScale;
use crate::lexical::tokenize::is_cjk;
use crate::lexical::{Glossary, Languages};
use crate::search::fields::RankFields;
use crate::search::fuse::{self, Background, Candidate, POOL_DEPTH, Pool};
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
        filter_clauses(&self.filter, first, root)
    }
}

/// [`TeamQuery::clauses`] of any filter.
fn filter_clauses(f: &Filter, first: usize, root: Option<&str>) -> (String, Vec<Box<dyn ToSql + Sync>>) {
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
        add("EXISTS (SELECT 1 FROM unnest(d.files) f, unnest(?::text[]) p WHERE starts_with(f, p))", Box::new(forms));
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

/// One project a search asks: its folder (for files typed absolute) and the question's vectors
/// for it (none: its vectors are another model's, or the search is by words).
struct Ask {
    tenant: String,
    project: String,
    root: Option<String>,
    literals: Vec<String>,
}

/// What every project of one search is asked.
#[derive(Clone, Copy)]
struct How<'a> {
    q: &'a TeamQuery,
    question: &'a Question,
    by_words: bool,
    model: &'a str,
    want: usize,
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
    /// The score of the local ranking (calibrated fusion, context; [`crate::search::Hit::score`]).
    pub score: f32,
    /// How likely this hit answers the question, 0–100, read as a local hit's
    /// ([`crate::search::Hit::relevance`]).
    pub relevance: u8,
    /// Cosine similarity to the question (its best chunk), when searched by meaning.
    pub similarity: Option<f32>,
    /// BM25 of the question's words, when it matched any.
    pub words: Option<f32>,
}

/// At most this many pages of candidates by words are read for a question whose required
/// words must also stand in order (a phrase, an identifier's parts), when too few of a page do.
const ORDER_PAGES: usize = 10;

impl TeamStore {
    /// Searches every project the role can read (or the query's tenant and project). `embedder`
    /// embeds the question (None: by words only); a project whose vectors were made by another
    /// model is searched by words. `glossary` glosses and translates the question as a local
    /// search does ([`Ranking::gloss`], [`Ranking::translation`]): a question in Chinese,
    /// Japanese or Korean script asks with a vector carrying its glosses, an English one also
    /// with a second vector glossed into the languages a project is written in (read from a
    /// sample of its messages), and the question's words are matched in the other languages the
    /// glossary knows them in. The hits are ranked as a local search ranks them (the same
    /// calibrated fusion, context and relevance, docs/team.md): each project contributes its
    /// best documents by cosine (pgvector) and by words (Postgres full text), each scored on both
    /// signals (the exact cosine of its best chunk; BM25 over its words with the project's
    /// document frequencies), the cosines read against a sample of the project's vectors. Not as
    /// locally: no phrase or identifier is required, and common words count.
    pub fn search(&self, q: &TeamQuery, embedder: Option<&dyn Embedder>, glossary: &Glossary) -> Result<Vec<TeamHit>> {
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
        let question = Question::new(&q.text, q.ranking.translation, glossary);
        let by_words = q.mode != SearchMode::Semantic && !question.is_empty();
        let embedder = embedder.filter(|_| q.mode != SearchMode::Lexical);
        let model = embedder.map_or(String::new(), |e| e.model_id().to_string());
        let cjk = q.text.chars().any(is_cjk);
        let glossable = q.ranking.gloss > 0.0 && !glossary.glosses_in(&q.text, &[false, true, true, true]).is_empty();
        let asked: Vec<(String, String)> = self
            .projects()?
            .into_iter()
            .filter(|(t, p)| q.tenant.as_ref().is_none_or(|x| x == t) && q.project.as_ref().is_none_or(|x| x == p))
            .collect();
        // What each project needs before it is asked, read on several connections at once.
        let needs = self.each(&asked, |(tenant, project)| {
            let root = if q.filter.files.is_empty() && q.filter.file_prefix.is_none() {
                None
            } else {
                self.project_root(tenant, project)?
            };
            let vectors = embedder.is_some() && self.has_model(tenant, project, &model)?;
            // Read only when the question has words the glossary writes in those languages; a
            // project that cannot be read for it counts as English, as locally.
            let held = if vectors && !cjk && glossable {
                self.languages(tenant, project).unwrap_or([false; 4])
            } else {
                [false; 4]
            };
            Ok((root, vectors, held))
        })?;
        // The question's vectors (as vector literals) for each set of languages a project is
        // written in, made once each; and its own embedding, which an English question's
        // glossed pairs start from.
        let mut vectors: HashMap<Languages, Vec<String>> = HashMap::new();
        let mut own: Option<Vec<f32>> = None;
        for (_, _, held) in needs.iter().filter(|n| n.1) {
            let Some(e) = embedder else { break };
            if !vectors.contains_key(held) {
                let v = query_vectors(e, &q.text, q.ranking.gloss, glossary, held, own.as_deref())?;
                if !cjk && own.is_none() {
                    own = v.first().cloned();
                }
                vectors.insert(*held, v.iter().map(|x| vector_literal(x)).collect());
            }
        }
        let asks: Vec<Ask> = asked
            .into_iter()
            .zip(needs)
            .map(|((tenant, project), (root, has, held))| Ask {
                literals: if has { vectors[&held].clone() } else { Vec::new() },
                tenant,
                project,
                root,
            })
            .collect();
        let how = How { q, question: &question, by_words, model: &model, want };
        let found = self.each(&asks, |a| self.candidates(&how, a))?;
        let mut pools: Vec<Pool> = Vec::with_capacity(found.len());
        let mut owners: Vec<(String, String, Vec<Document>)> = Vec::with_capacity(found.len());
        for (a, (pool, docs)) in asks.into_iter().zip(found) {
            pools.push(pool);
            owners.push((a.tenant, a.project, docs));
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

    /// A project's candidates, each scored on both signals, as a pool of the ranking, and their
    /// documents in the pool's order.
    fn candidates(&self, how: &How<'_>, a: &Ask) -> Result<(Pool, Vec<Document>)> {
        let How { q, question, by_words, model, want } = *how;
        let (d, literals) = (docs_table(&a.tenant, &a.project), &a.literals);
        let whose = format!("{}/{}", a.tenant, a.project);
        // As locally: a project the filter leaves nothing of contributes nothing (nor its
        // vectors to what the hits were chosen from), and a filter that locates the answer (a
        // file, a directory, a session) tells the relevance how much it narrowed.
        let mut admitted = None;
        if !q.filter.is_empty() {
            if !self.any_admitted(&d, &q.filter, a.root.as_deref())? {
                return Ok((Pool { model: model.to_string(), ..Pool::default() }, Vec::new()));
            }
            if q.filter.locates() {
                admitted = Some(self.share_admitted(&d, &q.filter.locating(), a.root.as_deref())?);
            }
        }
        let mut docs: HashMap<Uuid, Document> = HashMap::new();
        // By meaning: up to `want` new documents per vector, nearest first.
        let vt = vectors_table(&a.tenant, &a.project, model);
        let mut semantic: Vec<Uuid> = Vec::new();
        for v in literals {
            let (filters, mut params) = q.clauses(2, a.root.as_deref());
            params.insert(0, Box::new(v.clone()));
            // Rows are chunks: a document's best comes first.
            let sql = format!(
                "SELECT d.doc::text FROM {vt} v JOIN {d} d ON d.id = v.id
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
            let mut taken = 0;
            for doc in self.rows(&whose, &setting, &sql, &params)? {
                if taken < want && !semantic.contains(&doc.id) {
                    taken += 1;
                    semantic.push(doc.id);
                    docs.entry(doc.id).or_insert(doc);
                }
            }
        }
        // By words: the candidates of the question's words and of each translation, wider
        // than kept (`ts_rank` knows no document frequency), re-scored by BM25.
        let mut lexical: HashMap<Uuid, (f32, bool)> = HashMap::new();
        // Each candidate's words, read once from its text.
        let mut words: HashMap<Uuid, Words> = HashMap::new();
        let mut corpus = None;
        if by_words {
            let c = self.corpus(&d, &question.terms())?;
            let mut found: Vec<Uuid> = Vec::new();
            for asked in question.asked() {
                let Some((any, all)) = asked.candidates(&c) else { continue };
                let (filters, mut params) = q.clauses(2 + usize::from(all.is_some()), a.root.as_deref());
                let holds = match all {
                    Some(all) => {
                        params.insert(0, Box::new(all));
                        "AND d.words @@ $2::text::tsquery"
                    }
                    None => "",
                };
                params.insert(0, Box::new(any));
                // Ranked by any of the words, holding the required ones. Ties broken by id: a
                // large table's scan may start anywhere (a synchronised sequential scan), and
                // the candidates must not depend on where.
                let page = want * 3;
                let (mut offset, mut kept) = (0, 0);
                loop {
                    let sql = format!(
                        "SELECT d.doc::text FROM {d} d, (SELECT $1::text::tsquery AS w) q
                         WHERE d.words @@ q.w {holds} AND {filters}
                         ORDER BY ts_rank(d.words, q.w) DESC, d.id LIMIT {page} OFFSET {offset}"
                    );
                    let rows = self.rows(&whose, "SET LOCAL enable_seqscan = on", &sql, &params)?;
                    let read = rows.len();
                    for doc in rows {
                        let w = words.entry(doc.id).or_insert_with(|| Words::of(&doc));
                        if asked.met_by(w) {
                            kept += 1;
                            found.push(doc.id);
                            docs.entry(doc.id).or_insert(doc);
                        }
                    }
                    offset += read;
                    // Holding the required words is not holding them in order (nor the common
                    // ones left to the candidate's words): read on until enough do, or none are
                    // left, up to a bound.
                    if kept >= page || read < page || offset >= page * ORDER_PAGES {
                        break;
                    }
                }
            }
            let scoring = question.in_corpus(&c);
            let mut scored: Vec<(Uuid, (f32, bool))> = found
                .into_iter()
                .collect::<std::collections::HashSet<_>>()
                .into_iter()
                .filter_map(|id| scoring.score(&words[&id]).map(|s| (id, s)))
                .collect();
            scored.sort_by(|a, b| b.1.0.total_cmp(&a.1.0).then(a.0.cmp(&b.0)));
            scored.truncate(want);
            lexical.extend(scored);
            corpus = Some(c);
        }
        // Every candidate's cosine (its best chunk's, the best over the question's vectors),
        // and the background: the question's cosines over a fixed sample of the project's
        // vectors, standing for all of them.
        let mut cosine: HashMap<Uuid, f32> = HashMap::new();
        let mut background = Background::default();
        if !literals.is_empty() {
            let words_only = lexical.keys().filter(|id| !semantic.contains(id));
            let everyone: Vec<Uuid> = semantic.iter().chain(words_only).copied().collect();
            let scales;
            (background, scales) = self.backgrounds(&vt, literals)?;
            cosine = self.cosines(&vt, literals, &scales, &everyone)?;
            // The nearest `want` by their exact cosine, as locally.
            semantic.sort_by(|a, b| {
                let c = |id| cosine.get(id).copied().unwrap_or(f32::MIN);
                c(b).total_cmp(&c(a)).then(a.cmp(b))
            });
            semantic.truncate(want);
        }
        // Every candidate scored on both signals: the words of those found by meaning only.
        if let Some(c) = &corpus {
            let scoring = question.in_corpus(c);
            for id in &semantic {
                if let std::collections::hash_map::Entry::Vacant(slot) = lexical.entry(*id)
                    && let Some(s) = scoring.score(words.entry(*id).or_insert_with(|| Words::of(&docs[id])))
                {
                    slot.insert(s);
                }
            }
        }
        // The candidates: those found by meaning, then those found by words only.
        let mut ids: Vec<Uuid> = semantic;
        let mut words_only: Vec<Uuid> = lexical.keys().filter(|id| !ids.contains(id)).copied().collect();
        words_only.sort();
        ids.extend(words_only);
        let docs: Vec<Document> = ids.iter().filter_map(|id| docs.remove(id)).collect();
        let candidates = docs
            .iter()
            .enumerate()
            .map(|(i, doc)| Candidate {
                id: i as u64,
                fields: RankFields::of(doc),
                chunk: 0,
                signals: Signals {
                    semantic: cosine.get(&doc.id).copied(),
                    lexical: lexical.get(&doc.id).map(|x| x.0),
                    translated: lexical.get(&doc.id).is_some_and(|x| x.1),
                    ..Default::default()
                },
            })
            .collect();
        let scale = corpus.as_ref().map_or_else(LexicalScale::default, |c| question.in_corpus(c).scale());
        Ok((Pool { candidates, model: model.to_string(), background, lexical: scale, admitted }, docs))
    }
}

impl TeamStore {
    /// Whether any document of the documents table `d` passes `filter` (`root`: the project's
    /// folder, for files typed absolute).
    fn any_admitted(&self, d: &str, filter: &Filter, root: Option<&str>) -> Result<bool> {
        let (filters, params) = filter_clauses(filter, 1, root);
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let sql = format!("SELECT EXISTS (SELECT 1 FROM {d} d WHERE {filters})");
        self.read(|c| Ok(c.query_one(&sql, &refs)?.get(0)))
    }

    /// The share of the documents table `d` that `filter` lets through, as the local pool
    /// reads it for the relevance: counted, over the documents counted exactly up to the
    /// store's exact bound and by the planner's estimate beyond it (as a search's background).
    fn share_admitted(&self, d: &str, filter: &Filter, root: Option<&str>) -> Result<f64> {
        let (filters, params) = filter_clauses(filter, 1, root);
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let sql = format!("SELECT count(*) FROM {d} d WHERE {filters}");
        let exact_up_to = self.exact_up_to;
        let (passed, total) = self.read(|c| {
            let passed: i64 = c.query_one(&sql, &refs)?.get(0);
            let planned = super::reads::planned_rows(c, d)?;
            let total = if planned >= exact_up_to {
                planned
            } else {
                c.query_one(&format!("SELECT count(*) FROM {d}"), &[])?.get::<_, i64>(0) as f64
            };
            Ok((passed as f64, total))
        })?;
        Ok((passed / total.max(1.0)).clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::DocKind;

    #[test]
    fn filters_become_numbered_params() {
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
