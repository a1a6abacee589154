//! A collection's search: the builder with one terminal verb ([`SearchBuilder::run`]). It
//! reads the candidates from the store ([`crate::store::filter`]), runs the vector side along the
//! route the planner picks ([`crate::search::plan`]) and the lexical side, fuses them
//! ([`crate::search::fuse`]) and loads the hits.

use crate::sync::Shared;
use redb::{ReadableDatabase, ReadableTableMetadata};

use super::Collection;
use super::languages::query_vectors;
use crate::ann::Ann;
use crate::doc::DocKind;
use crate::error::{Error, Result};
use crate::ids::{DocSet, VectorId};
use crate::lexical::QueryWords;
use crate::search::fuse::{self, Pool};
use crate::search::plan::{self, Route, Settings, Shape};
use crate::search::query::{self, Filter, Query, SearchMode};
use crate::search::{Context, Fusion, Hit, Hits, Plan, PlanPath, Ranking, Recency, Signals};
use crate::store::tables::{DOCS, RANKING};

/// A search under construction; finish with [`SearchBuilder::run`]. Filters combine with AND.
#[must_use = "a search does nothing until `.run()`"]
pub struct SearchBuilder<'c> {
    coll: &'c Collection,
    query: Query,
    vector: Option<Vec<f32>>,
    exact: Option<bool>,
    ef: Option<usize>,
}

impl Collection {
    /// Searches for `text` (hybrid by default: by meaning with the collection's model and by
    /// words), ranked as chosen for the collection's model ([`Ranking::for_model`]).
    pub fn search(&self, text: &str) -> SearchBuilder<'_> {
        let query = Query { ranking: Ranking::for_model(self.embedder().model_id()), ..Query::new(text) };
        SearchBuilder::new(self, query, None)
    }

    /// Searches by a query vector of the collection's dimension (semantic only).
    pub fn search_vector(&self, vector: Vec<f32>) -> SearchBuilder<'_> {
        SearchBuilder::new(self, Query::new(""), Some(vector))
    }

    /// Runs a [`Query`] (what front ends parse their input into) with the default plan.
    pub fn query(&self, query: &Query) -> Result<Hits> {
        SearchBuilder::new(self, query.clone(), None).run()
    }
}

impl<'c> SearchBuilder<'c> {
    fn new(coll: &'c Collection, query: Query, vector: Option<Vec<f32>>) -> Self {
        SearchBuilder { coll, query, vector, exact: None, ef: None }
    }

    /// How much a hybrid hit's session and neighbouring messages lift it. Default: the
    /// collection's model's ([`Ranking::for_model`]; [`Context::default`] for the default
    /// model); [`Context::NONE`] ranks by the fused score alone. Semantic and
    /// lexical modes rank by their own score only.
    pub fn context(mut self, context: Context) -> Self {
        self.query.ranking.context = context;
        self
    }
    /// Semantic, lexical or hybrid. Default: hybrid for text queries; a vector query is
    /// semantic only.
    pub fn mode(mut self, mode: SearchMode) -> Self {
        self.query.mode = Some(mode);
        self
    }
    /// How hybrid search fuses the two signals. Default: the collection's model's
    /// ([`Ranking::for_model`]; [`Fusion::default`] for the default model).
    pub fn fusion(mut self, fusion: Fusion) -> Self {
        self.query.ranking.fusion = fusion;
        self
    }
    /// Prefer newer sessions ([`Recency`]; `Recency::default()`: half-life 30 days). Default:
    /// age does not matter.
    pub fn recent(mut self, recency: Recency) -> Self {
        self.query.ranking.recent = Some(recency);
        self
    }
    /// How much a match of the query's words written in another language counts
    /// ([`Ranking::translation`]; 0 turns translation off). Default:
    /// [`crate::DEFAULT_TRANSLATION`].
    pub fn translation(mut self, weight: f32) -> Self {
        self.query.ranking.translation = weight;
        self
    }
    /// How much the query's glosses count in the vector semantic search asks with
    /// ([`Ranking::gloss`]; 0 asks with the query's own vector only). Default: the
    /// collection's model's ([`Ranking::for_model`]).
    pub fn gloss(mut self, weight: f32) -> Self {
        self.query.ranking.gloss = weight;
        self
    }
    /// Whether hybrid search keeps each signal's best hit among its first three
    /// ([`Ranking::leaders`]). Default: [`crate::DEFAULT_LEADERS`].
    pub fn leaders(mut self, on: bool) -> Self {
        self.query.ranking.leaders = on;
        self
    }
    /// Replaces the whole ranking (fusion, context, recency, translation, gloss, leaders).
    pub fn ranking(mut self, ranking: Ranking) -> Self {
        self.query.ranking = ranking;
        self
    }
    /// Replaces the whole filter.
    pub fn filter(mut self, filter: Filter) -> Self {
        self.query.filter = filter;
        self
    }
    /// Only documents of this type (repeat for several). Default: all types.
    pub fn kind(mut self, kind: DocKind) -> Self {
        self.query.filter.kinds.push(kind);
        self
    }
    /// Documents carrying at least one of these tags.
    pub fn tags_any<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tags: I) -> Self {
        self.query.filter.tags_any.extend(tags.into_iter().map(|t| t.into().to_lowercase()));
        self
    }
    /// Documents carrying all of these tags.
    pub fn tags_all<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tags: I) -> Self {
        self.query.filter.tags_all.extend(tags.into_iter().map(|t| t.into().to_lowercase()));
        self
    }
    /// Documents of this domain.
    pub fn domain(mut self, domain: &str) -> Self {
        self.query.filter.domain = Some(domain.to_lowercase());
        self
    }
    /// Documents of this session (repeat for any of several).
    pub fn session(mut self, session_id: &str) -> Self {
        self.query.filter.sessions.push(session_id.to_string());
        self
    }
    /// Documents that discuss this file (repeat for any of several), however the path is typed.
    pub fn file(mut self, path: &str) -> Self {
        self.query.filter.files.push(path.to_string());
        self
    }
    /// Documents that discuss a file under this path prefix (e.g. a directory `src/`).
    pub fn file_prefix(mut self, prefix: &str) -> Self {
        self.query.filter.file_prefix = Some(prefix.to_string());
        self
    }
    /// Documents written by this agent (repeat for any of several).
    pub fn agent(mut self, agent: crate::ingest::layout::Agent) -> Self {
        self.query.filter.agents.push(agent);
        self
    }
    /// Documents at or after this time.
    pub fn since(mut self, t: chrono::DateTime<chrono::Utc>) -> Self {
        self.query.filter.since = Some(t);
        self
    }
    /// Documents at or before this time.
    pub fn until(mut self, t: chrono::DateTime<chrono::Utc>) -> Self {
        self.query.filter.until = Some(t);
        self
    }
    /// Both time bounds.
    pub fn between(self, since: chrono::DateTime<chrono::Utc>, until: chrono::DateTime<chrono::Utc>) -> Self {
        self.since(since).until(until)
    }
    /// Maximum number of hits, 1 to [`crate::MAX_LIMIT`]. Default: 10.
    pub fn limit(mut self, n: usize) -> Self {
        self.query.limit = n;
        self
    }
    /// `true` forces the exact scan (recall 1, slower on large collections); `false` forces
    /// the graph walk. Default: the planner decides from the number of candidates.
    pub fn exact(mut self, on: bool) -> Self {
        self.exact = Some(on);
        self
    }
    /// Override the graph's candidate list size. Default: chosen by the planner.
    pub fn ef(mut self, ef: usize) -> Self {
        self.ef = Some(ef);
        self
    }

    fn validate(&self) -> Result<()> {
        match &self.vector {
            None => self.query.validate()?,
            Some(v) => {
                query::validate_limit(self.query.limit)?;
                query::validate_ranking(&self.query.ranking)?;
                self.query.filter.validate()?;
                if v.len() != self.coll.embedder().dim() {
                    return Err(Error::DimensionMismatch { expected: self.coll.embedder().dim(), got: v.len() });
                }
                if matches!(self.query.mode, Some(SearchMode::Lexical | SearchMode::Hybrid)) {
                    return Err(Error::InvalidArgument(
                        "lexical and hybrid search need a text query; use `search(text)` or semantic mode".into(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Runs the search.
    pub fn run(self) -> Result<Hits> {
        self.validate()?;
        let coll = self.coll;
        let mode = coll.mode_for(&self.query, self.vector.is_some());
        let vectors = match (&self.vector, mode) {
            (Some(v), _) => {
                let mut v = v.clone();
                crate::embed::normalize(&mut v);
                vec![v]
            }
            (None, SearchMode::Lexical) => Vec::new(),
            (None, _) => {
                let (text, gloss) = (&self.query.text, self.query.ranking.gloss);
                let held = coll.gloss_languages(text, gloss);
                query_vectors(coll.embedder().as_ref(), text, gloss, &coll.options.glossary, &held, None)?
            }
        };
        let route = RouteOverride { exact: self.exact, ef: self.ef };
        let words = QueryWords::new(&self.query.text, self.query.ranking.translation, &coll.options.glossary);
        let (pool, plan, snapshot) = coll.pool(&self.query, &words, mode, &vectors, route)?;
        let asks = crate::search::asks_about_a_decision(&self.query.text);
        let ranked = fuse::rank(vec![pool], mode, &self.query.ranking, asks);
        let terms = words.highlight();
        let (shown, damaged) = shown(ranked, self.query.limit, std::slice::from_ref(&snapshot))?;
        // This collection's own search: a document it cannot read is damage to report, not a
        // hit to pass over in silence.
        if let Some((_, reason)) = damaged.into_iter().next() {
            return Err(Error::Damaged { path: coll.dir().join("data.redb"), reason });
        }
        let hits = shown.into_iter().map(|(r, doc)| hit(r, doc, &terms, plan)).collect();
        Ok(Hits { hits, plan })
    }
}

/// The documents of a collection as a pool found them (a read snapshot): the ranking reads
/// the candidates' [`crate::search::fields::RankFields`] only, and the full documents of the
/// hits shown come from here. It reads only while its collection is open.
pub(crate) struct Snapshot {
    docs: redb::ReadOnlyTable<u64, &'static [u8]>,
}

/// What [`shown`] returns: the hits with their documents, and the pools whose documents could
/// not be read, with why.
pub(crate) type Shown = (Vec<(fuse::Ranked, crate::doc::Document)>, Vec<(usize, String)>);

/// The first `limit` ranked candidates with their documents, read from the snapshot of the
/// pool each came from (`snapshots[r.pool]`), and the pools whose documents could not be read
/// (a document its ranking row names that is missing or does not decode: the store is damaged),
/// each with why. A candidate whose document cannot be read is passed over, and said to be.
pub(crate) fn shown(ranked: Vec<fuse::Ranked>, limit: usize, snapshots: &[Snapshot]) -> Result<Shown> {
    let mut out = Vec::with_capacity(limit.min(ranked.len()));
    let mut damaged: Vec<(usize, String)> = Vec::new();
    for r in ranked {
        if out.len() == limit {
            break;
        }
        let pool = r.pool;
        match crate::store::get_doc(&snapshots[pool].docs, r.candidate.id) {
            Ok(Some(doc)) => out.push((r, doc)),
            Ok(None) => {
                damaged.push((pool, format!("document {} is indexed but missing from the store", r.candidate.id)))
            }
            Err(Error::Codec { what, reason }) => {
                damaged.push((pool, format!("stored {what} could not be decoded ({reason})")));
            }
            Err(e) => return Err(e),
        }
    }
    damaged.sort();
    damaged.dedup_by_key(|d| d.0);
    Ok((out, damaged))
}

/// A ranked candidate and its document as a [`Hit`].
pub(crate) fn hit(r: fuse::Ranked, doc: crate::doc::Document, terms: &[String], plan: Plan) -> Hit {
    let fuse::Ranked { candidate, score, relevance, folded, .. } = r;
    let fuse::Candidate { chunk, signals, .. } = candidate;
    let snippet = if signals.lexical.is_some() { crate::lexical::snippet(&doc.content, terms, 160) } else { None };
    Hit { doc, score, relevance, folded, chunk, signals, snippet, plan }
}

/// Forced choices for the vector side (library callers and benchmarks).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RouteOverride {
    pub(crate) exact: Option<bool>,
    pub(crate) ef: Option<usize>,
}

impl Collection {
    /// The mode a query runs in here: a vector query is semantic; without a lexical index
    /// the default is semantic.
    pub(crate) fn mode_for(&self, query: &Query, vector_query: bool) -> SearchMode {
        match (vector_query, &self.lexical) {
            (true, _) => SearchMode::Semantic,
            (false, None) => query.mode.unwrap_or(SearchMode::Semantic),
            (false, Some(_)) => query.mode.unwrap_or_default(),
        }
    }

    /// This collection's candidates for `query`: the best [`crate::POOL_DEPTH`] documents (or
    /// `limit`, when larger) by cosine and by BM25 among those the filter lets through, each
    /// scored on both signals, with the query's background and lexical reference, and the
    /// snapshot their documents are read from. `vectors` are the query's embeddings by this
    /// collection's model ([`query_vectors`]; none in lexical mode): a document's cosine is its
    /// best with any of them, and the first one reads the background.
    pub(crate) fn pool(
        &self,
        query: &Query,
        words: &QueryWords,
        mode: SearchMode,
        vectors: &[Vec<f32>],
        route: RouteOverride,
    ) -> Result<(Pool, Plan, Snapshot)> {
        let tx = self.db.begin_read()?;
        let docs = tx.open_table(DOCS)?;
        let total = docs.len()? as usize;
        let root = self.meta()?.project_path;
        let cands = crate::store::filter::candidates(&tx, &query.filter.clauses(root.as_deref()))?;
        let candidates = cands.as_ref().map_or(total, DocSet::len);
        let selectivity = if total == 0 { 0.0 } else { candidates as f32 / total as f32 };
        let unembedded = tx.open_table(crate::store::tables::PENDING)?.len()? as usize;
        let mut plan = Plan { path: PlanPath::Lexical, mode, candidates, total, selectivity, unembedded };
        let mut pool = Pool { model: self.embedder().model_id().to_string(), ..Pool::default() };
        if candidates == 0 {
            return Ok((pool, plan, Snapshot { docs }));
        }
        // The share of documents the filter's files, directory and sessions let through (the
        // relevance reads it; what else the filter holds does not count).
        if query.filter.locates() {
            let located = query.filter.locating();
            let n = if located == query.filter {
                candidates
            } else {
                crate::store::filter::candidates(&tx, &located.clauses(root.as_deref()))?.map_or(total, |s| s.len())
            };
            pool.admitted = Some(n as f64 / total.max(1) as f64);
        }
        // A fixed depth: the same candidates, hence the same order, whatever the limit.
        let want = query.limit.max(crate::search::POOL_DEPTH);
        // (doc, cosine, chunk), best first, one entry per document.
        let mut semantic: Vec<(u64, f32, u32)> = Vec::new();
        // Each query vector's background moments (the first one's calibrates the pool).
        let mut scales: Vec<Option<(f32, f32)>> = Vec::new();
        if mode != SearchMode::Lexical {
            if vectors.is_empty() {
                return Err(Error::InvalidArgument("semantic search needs the query's vector".into()));
            }
            let graph = self.graph()?;
            let mut shape = Shape {
                filtered: cands.is_some(),
                candidates,
                selectivity,
                want,
                exact: route.exact,
                ef: route.ef,
                graph_ready: true,
            };
            let o = &self.options;
            let settings = Settings {
                exact_threshold: o.exact_threshold,
                exact_fraction: o.exact_fraction,
                ef_search: o.hnsw.ef_search,
            };
            // A persisted graph's links are read (in the background) only once a walk is
            // wanted: an exact scan needs the vectors alone. Until they are in, it answers.
            if plan::decide(shape, settings) != Route::Exact && graph.reading().loading() {
                graph.writing().poll(false);
            }
            let ann = graph.reading();
            shape.graph_ready = ann.graph_ready();
            let mut seen = std::collections::HashSet::new();
            for v in vectors {
                let (raw, path) =
                    vector_search(&ann, plan::decide(shape, settings), v, cands.as_ref(), candidates, want);
                plan.path = path;
                let mut taken = 0;
                for (id, score) in raw {
                    if taken < want && seen.insert(id.doc()) {
                        taken += 1;
                        semantic.push((id.doc(), score, id.chunk()));
                    }
                }
            }
            // The route only chooses the candidates; every cosine is the exact one of the
            // document's best chunk, so a document scores the same whichever route found it
            // (the graph's distances differ in the last bits, and a graph still loading
            // means the exact scan answers one search and the graph the next).
            let docs: Vec<u64> = semantic.iter().map(|x| x.0).collect();
            let backgrounds: Vec<fuse::Background> =
                vectors.iter().map(|v| ann.background(v, fuse::BACKGROUND_SAMPLE)).collect();
            scales = backgrounds.iter().map(fuse::Background::moments).collect();
            pool.background = backgrounds[0];
            let exact = best_cosines(&ann, vectors, &scales, &docs);
            for s in &mut semantic {
                if let Some(&(cos, chunk)) = exact.get(&s.0) {
                    (s.1, s.2) = (cos, chunk);
                }
            }
            semantic.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            semantic.truncate(want);
        }
        let mut lexical: Vec<crate::lexical::LexicalHit> = Vec::new();
        if mode != SearchMode::Semantic {
            let Some(l) = &self.lexical else {
                return Err(Error::InvalidArgument(
                    "this collection has no lexical index (CollectionOptions::lexical_index is off); use semantic mode"
                        .into(),
                ));
            };
            let allowed = cands.clone().map(std::sync::Arc::new);
            (lexical, pool.lexical) = l.search(words, allowed, want)?;
        }
        // Every candidate is scored on both signals in hybrid mode: the exact cosine of the
        // documents only the lexical list found.
        let lexical_only: Vec<u64> = {
            let sem: std::collections::HashSet<u64> = semantic.iter().map(|x| x.0).collect();
            lexical.iter().map(|x| x.0).filter(|d| !sem.contains(d)).collect()
        };
        let cosines = match mode {
            SearchMode::Hybrid if !lexical_only.is_empty() && !vectors.is_empty() => {
                best_cosines(&self.graph()?.reading(), vectors, &scales, &lexical_only)
            }
            _ => Default::default(),
        };
        let lex_rank: std::collections::HashMap<u64, (usize, f32, bool)> =
            lexical.iter().enumerate().map(|(r, &(d, s, t))| (d, (r + 1, s, t))).collect();
        let ranking = tx.open_table(RANKING)?;
        let mut push = |doc: u64, cos: Option<(f32, u32)>, sem_rank: Option<usize>| -> Result<()> {
            // An index may run ahead of this read snapshot; such candidates are skipped.
            let Some(fields) = crate::store::rank_fields(&ranking, &docs, doc)? else { return Ok(()) };
            let signals = Signals {
                semantic: cos.map(|c| c.0),
                semantic_rank: sem_rank,
                lexical: lex_rank.get(&doc).map(|x| x.1),
                lexical_rank: lex_rank.get(&doc).map(|x| x.0),
                translated: lex_rank.get(&doc).is_some_and(|x| x.2),
                ..Default::default()
            };
            pool.candidates.push(fuse::Candidate { id: doc, fields, chunk: cos.map_or(0, |c| c.1), signals });
            Ok(())
        };
        for (r, &(doc, cos, chunk)) in semantic.iter().enumerate() {
            push(doc, Some((cos, chunk)), Some(r + 1))?;
        }
        for doc in lexical_only {
            push(doc, cosines.get(&doc).copied(), None)?;
        }
        Ok((pool, plan, Snapshot { docs }))
    }
}

/// Carries out the planner's route: `(vector, cosine)` best first, and the path taken.
fn vector_search(
    ann: &Ann,
    route: Route,
    query: &[f32],
    cands: Option<&DocSet>,
    candidates: usize,
    want: usize,
) -> (Vec<(VectorId, f32)>, PlanPath) {
    let filter = cands.map(|set| move |doc: u64| set.contains(doc));
    let keep: Option<&(dyn Fn(u64) -> bool + Sync)> = filter.as_ref().map(|f| f as _);
    match route {
        Route::Exact => (ann.search_exact(query, cands, candidates, want), PlanPath::Exact),
        Route::PostFilter { over, knbn, ef } => {
            let set = cands.expect("a post-filter has a filter");
            let kept: Vec<(VectorId, f32)> = ann
                .search_graph(query, over, ef.max(over), None)
                .into_iter()
                .filter(|(id, _)| set.contains(id.doc()))
                .collect();
            let docs: std::collections::HashSet<u64> = kept.iter().map(|(id, _)| id.doc()).collect();
            if docs.len() >= want.min(candidates) {
                return (kept, PlanPath::Graph { ef, post_filter: true });
            }
            // Too few passed: the filtered walk.
            (ann.search_graph(query, knbn, ef.max(knbn), keep), PlanPath::Graph { ef, post_filter: false })
        }
        Route::Filtered { knbn, ef } => {
            (ann.search_graph(query, knbn, ef.max(knbn), keep), PlanPath::Graph { ef, post_filter: false })
        }
    }
}

/// Exact cosine of each document's best chunk with the best of `vectors`, each vector's cosine
/// read against its own background (`scales`: mean and spread, in the same order) and written
/// on the first one's scale (its mean plus its spread times the other's distance above its
/// background in spreads): a document counts as close when it stands out from the collection
/// for either form of the question, and one form's cosines running higher everywhere (a vector
/// between two languages sits nearer all of them) lifts nothing.
fn best_cosines(
    ann: &Ann,
    vectors: &[Vec<f32>],
    scales: &[Option<(f32, f32)>],
    docs: &[u64],
) -> std::collections::HashMap<u64, (f32, u32)> {
    let mut out = std::collections::HashMap::new();
    for (i, v) in vectors.iter().enumerate() {
        let rescale = |c: f32| match (scales.first().copied().flatten(), scales.get(i).copied().flatten()) {
            (Some((m0, s0)), Some((mi, si))) if i > 0 => m0 + s0 * (c - mi) / si,
            _ => c,
        };
        for (doc, (c, chunk)) in cosines(ann, v, docs) {
            let c = (rescale(c), chunk);
            let e = out.entry(doc).or_insert(c);
            if c.0 > e.0 {
                *e = c;
            }
        }
    }
    out
}

/// Exact cosine of each document's best chunk, for documents only the lexical list found.
fn cosines(ann: &Ann, query: &[f32], docs: &[u64]) -> std::collections::HashMap<u64, (f32, u32)> {
    let set: DocSet = docs.iter().copied().collect();
    let mut out = std::collections::HashMap::new();
    for (id, score) in ann.search_exact(query, Some(&set), docs.len(), docs.len() * 8) {
        let e = out.entry(id.doc()).or_insert((score, id.chunk()));
        if score > e.0 {
            *e = (score, id.chunk());
        }
    }
    out
}
