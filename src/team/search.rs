//! Search in the team store: by meaning through pgvector, by words through Postgres full text
//! over convdex's own lexemes, every filter as SQL, the candidates ranked by the local ranking
//! (calibrated fusion, context, relevance).

use std::collections::HashMap;

use postgres::types::ToSql;
use serde::Serialize;

use uuid::Uuid;

use super::words::{Corpus, Question, Words, quoted};
use super::{TeamStore, docs_table, vector_literal, vectors_table};
use crate::collection::{LANGUAGE_SAMPLE, LANGUAGE_SHARE, query_vectors};
use crate::doc::Document;
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::lexical::tokenize::is_cjk;
use crate::lexical::{Glossary, HAN, HANGUL, KANA, Languages};
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

/// Rows of the sample a larger project's mean length and common terms are read from.
const SAMPLE_ROWS: f64 = 5_000.0;
/// A sample of fewer rows (the planner's statistics overstate the project: much of it was
/// deleted since they were made) is not read: the project is counted exactly.
const MIN_SAMPLE: f32 = 500.0;
/// In a larger project, a term in more than this share of its documents (and at least
/// [`COMMON_FLOOR`] of them) is common: its frequency is estimated, and it chooses no candidates
/// while the question has a rarer word (it still counts in every candidate's BM25).
const COMMON_SHARE: f32 = 0.02;
const COMMON_FLOOR: f32 = 2_000.0;

/// How many rows the planner's statistics (refreshed by a push) say `table` holds; -1 when it
/// has none yet.
fn planned_rows(c: &mut postgres::Client, table: &str) -> std::result::Result<f64, postgres::Error> {
    let sql = "SELECT coalesce((SELECT reltuples::float8 FROM pg_class WHERE oid = to_regclass($1)), -1)";
    Ok(c.query_one(sql, &[&table])?.get(0))
}

/// The question's cosine with each of its `n` vectors (parameters `$1`..`$n`, vector literals),
/// as SQL columns over a vectors table's `embedding`; `max` takes each one's best over a group.
fn cosine_columns(n: usize, max: bool) -> String {
    (1..=n)
        .map(|i| {
            let c = format!("1 - (embedding <=> ${i}::text::vector)");
            if max { format!("max({c})::real") } else { format!("({c})::real") }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A background's mean and spread (`None`: no sample).
type Moments = Option<(f32, f32)>;

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
        // The question's vectors (as vector literals) for each set of languages a project is
        // written in, made once each; and its own embedding, which an English question's
        // glossed pairs start from.
        let mut vectors: HashMap<Languages, Vec<String>> = HashMap::new();
        let mut own: Option<Vec<f32>> = None;
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
            let literals: Vec<String> = match embedder {
                Some(e) if self.has_model(&tenant, &project, &model)? => {
                    // Read only when the question has words the glossary writes in those
                    // languages; a project that cannot be read for it counts as English, as
                    // locally.
                    let held = if cjk || !glossable {
                        [false; 4]
                    } else {
                        self.languages(&tenant, &project).unwrap_or([false; 4])
                    };
                    match vectors.entry(held) {
                        std::collections::hash_map::Entry::Occupied(o) => o.get().clone(),
                        std::collections::hash_map::Entry::Vacant(slot) => {
                            let v = query_vectors(e, &q.text, q.ranking.gloss, glossary, &held, own.as_deref())?;
                            if !cjk && own.is_none() {
                                own = v.first().cloned();
                            }
                            slot.insert(v.iter().map(|x| vector_literal(x)).collect()).clone()
                        }
                    }
                }
                _ => Vec::new(),
            };
            let mut docs: HashMap<Uuid, Document> = HashMap::new();
            // By meaning: up to `want` new documents per vector, nearest first.
            let vt = vectors_table(&tenant, &project, &model);
            let mut semantic: Vec<Uuid> = Vec::new();
            for v in &literals {
                let (filters, mut params) = q.clauses(2, root.as_deref());
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
                for doc in self.rows(&setting, &sql, &params)? {
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
            let mut corpus = None;
            if by_words {
                let c = self.corpus(&d, &question.terms())?;
                let mut found: Vec<Uuid> = Vec::new();
                for asked in question.asked() {
                    let Some(words) = asked.candidates(&c) else { continue };
                    let (filters, mut params) = q.clauses(2, root.as_deref());
                    params.insert(0, Box::new(words));
                    let sql = format!(
                        "SELECT d.doc::text FROM {d} d, (SELECT $1::text::tsquery AS w) q
                         WHERE d.words @@ q.w AND {filters} ORDER BY ts_rank(d.words, q.w) DESC LIMIT {}",
                        want * 3
                    );
                    for doc in self.rows("SET LOCAL enable_seqscan = on", &sql, &params)? {
                        found.push(doc.id);
                        docs.entry(doc.id).or_insert(doc);
                    }
                }
                let scoring = question.in_corpus(&c);
                let mut scored: Vec<(Uuid, (f32, bool))> = found
                    .into_iter()
                    .collect::<std::collections::HashSet<_>>()
                    .into_iter()
                    .filter_map(|id| scoring.score(&Words::of(&docs[&id])).map(|s| (id, s)))
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
                (background, scales) = self.backgrounds(&vt, &literals)?;
                cosine = self.cosines(&vt, &literals, &scales, &everyone)?;
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
                        && let Some(s) = scoring.score(&Words::of(&docs[id]))
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
            pools.push(Pool { candidates, model: model.clone(), background, lexical: scale });
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

    /// The question's backgrounds in a project: the first vector's, standing for every vector
    /// of the project (it calibrates the pool), and each vector's moments (a second vector's
    /// cosines are read on the first one's scale, as locally).
    fn backgrounds(&self, vt: &str, literals: &[String]) -> Result<(Background, Vec<Moments>)> {
        let params: Vec<&(dyn ToSql + Sync)> = literals.iter().map(|l| l as &(dyn ToSql + Sync)).collect();
        let (rows, count) = self.with(|c| {
            let rows = c.query(
                &format!(
                    "SELECT {} FROM {vt} ORDER BY id, chunk LIMIT {}",
                    cosine_columns(literals.len(), false),
                    fuse::BACKGROUND_SAMPLE
                ),
                &params,
            )?;
            // The planner's count for a large table (a push refreshes it), an exact one else.
            let planned = planned_rows(c, vt)?;
            let count: i64 = if planned >= self.exact_up_to {
                planned as i64
            } else {
                c.query_one(&format!("SELECT count(*) FROM {vt}"), &[])?.get(0)
            };
            Ok((rows, count))
        })?;
        let mut each = vec![Background::default(); literals.len()];
        for r in rows {
            for (i, b) in each.iter_mut().enumerate() {
                b.add(r.get(i));
            }
        }
        each[0].represents(count.max(0) as usize);
        Ok((each[0], each.iter().map(Background::moments).collect()))
    }

    /// The exact cosine of each document's best chunk with the best of the question's vectors,
    /// a second vector's read against its own background and written on the first one's scale
    /// (`crate::collection`'s `best_cosines`).
    fn cosines(&self, vt: &str, literals: &[String], scales: &[Moments], ids: &[Uuid]) -> Result<HashMap<Uuid, f32>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let ids = ids.to_vec();
        let mut params: Vec<&(dyn ToSql + Sync)> = literals.iter().map(|l| l as &(dyn ToSql + Sync)).collect();
        params.push(&ids);
        let rows = self.with(|c| {
            c.query(
                &format!(
                    "SELECT id, {} FROM {vt} WHERE id = ANY(${}) GROUP BY id",
                    cosine_columns(literals.len(), true),
                    literals.len() + 1
                ),
                &params,
            )
        })?;
        let rescale = |i: usize, c: f32| match (scales.first().copied().flatten(), scales.get(i).copied().flatten()) {
            (Some((m0, s0)), Some((mi, si))) if i > 0 => m0 + s0 * (c - mi) / si,
            _ => c,
        };
        Ok(rows
            .iter()
            .map(|r| {
                let best = (0..literals.len()).map(|i| rescale(i, r.get(i + 1))).fold(f32::MIN, f32::max);
                (r.get(0), best)
            })
            .collect())
    }

    /// What calibrates a project's BM25 for `terms`: its documents, their mean length and each
    /// term's document frequency. Counted exactly in a project of fewer than
    /// [`TeamStore::with_exact_up_to`] documents (as the planner's statistics know it); in a larger one, the number of documents
    /// is the planner's, the mean length is read from a sample of about 5,000 rows, and a term
    /// is counted exactly up to [`Corpus::common`] documents, a more common one estimated from
    /// the sample: a search reads a bounded number of rows whatever the project's size.
    fn corpus(&self, d: &str, terms: &[String]) -> Result<Corpus> {
        let each: Vec<String> = terms.iter().map(|t| quoted(t)).collect();
        self.with(|c| {
            let planned = planned_rows(c, d)?;
            // Counted exactly: a small project, or one the statistics overstate (its sample
            // would be too small to read).
            let exact = |c: &mut postgres::Client| -> std::result::Result<Corpus, postgres::Error> {
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
                Ok(Corpus {
                    docs: row.get::<_, i64>(0) as f32,
                    mean_len: row.get(1),
                    df: terms.iter().cloned().zip(df).collect(),
                    common: None,
                })
            };
            if planned < self.exact_up_to {
                return exact(c);
            }
            let docs = planned as f32;
            let common = (COMMON_SHARE * docs).max(COMMON_FLOOR);
            let percent = (100.0 * SAMPLE_ROWS / planned).clamp(0.01, 100.0);
            // One sample (the same pages while the table is unchanged): its size, mean length,
            // and each term's count in it; then each term's count, exact up to `common`.
            let rows = c.query(
                &format!(
                    "WITH s AS MATERIALIZED (SELECT words FROM {d} TABLESAMPLE SYSTEM ({percent}) REPEATABLE (7))
                     SELECT (SELECT count(*) FROM s)::real, (SELECT coalesce(avg(length(words)), 0) FROM s)::real,
                            (SELECT count(*) FROM s WHERE words @@ x::tsquery)::real,
                            (SELECT count(*) FROM (SELECT 1 FROM {d} WHERE words @@ x::tsquery LIMIT {limit}) m)::real
                     FROM unnest($1::text[]) WITH ORDINALITY AS u(x, i) ORDER BY i",
                    limit = common as i64 + 1
                ),
                &[&each],
            )?;
            let sampled: f32 = rows.first().map_or(0.0, |r| r.get(0));
            if sampled < MIN_SAMPLE {
                return exact(c);
            }
            let mean_len: f32 = rows.first().map_or(0.0, |r| r.get(1));
            let df = terms
                .iter()
                .cloned()
                .zip(rows.iter().map(|r| {
                    let (in_sample, counted): (f32, f32) = (r.get(2), r.get(3));
                    if counted <= common { counted } else { (in_sample / sampled * docs).max(counted) }
                }))
                .collect();
            Ok(Corpus { docs, mean_len, df, common: Some(common) })
        })
    }

    /// The Chinese, Japanese and Korean a project's messages are written in, read as a local
    /// collection reads them ([`crate::collection`]'s languages: a language counts when at
    /// least a fifth of up to 2,000 sampled messages carry its script), over the first messages
    /// by id (ids are hashes: a sample spread over the project).
    fn languages(&self, tenant: &str, project: &str) -> Result<Languages> {
        let class = |ranges: &[(char, char)]| {
            format!("[{}]", ranges.iter().map(|(a, b)| format!("{a}-{b}")).collect::<String>())
        };
        let (han, kana, hangul) = (class(&HAN), class(&KANA), class(&HANGUL));
        let d = docs_table(tenant, project);
        let counts: Vec<i64> = self.with(|c| {
            let r = c.query_one(
                &format!(
                    "SELECT count(*), count(*) FILTER (WHERE content ~ $1 AND content !~ $2),
                            count(*) FILTER (WHERE content ~ $2), count(*) FILTER (WHERE content ~ $3)
                     FROM (SELECT content FROM {d} WHERE kind = 'message' ORDER BY id LIMIT {LANGUAGE_SAMPLE}) s"
                ),
                &[&han, &kana, &hangul],
            )?;
            Ok((0..4).map(|i| r.get(i)).collect())
        })?;
        let read = counts[0] as f64;
        Ok([0_usize, 1, 2, 3].map(|i| i > 0 && read > 0.0 && counts[i] as f64 >= LANGUAGE_SHARE * read))
    }

    /// Runs `sql`, which selects a document's JSON, after `setting` in one transaction: the
    /// documents, in the query's order.
    fn rows(&self, setting: &str, sql: &str, params: &[Box<dyn ToSql + Sync>]) -> Result<Vec<Document>> {
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
            let doc: Document = serde_json::from_str(&json).map_err(|e| Error::Team {
                store: self.shown.clone(),
                reason: format!("a stored document does not decode ({e})"),
                fix: "push the project again from a machine that holds it (`convdex push`)".into(),
            })?;
            out.push(doc);
        }
        Ok(out)
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
