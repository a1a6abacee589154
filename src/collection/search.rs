//! A collection's search: the builder with one terminal verb ([`SearchBuilder::run`]). It
//! reads the candidates from the store ([`crate::store::filter`]), runs the vector side along the
//! route the planner picks ([`crate::search::plan`]) and the lexical side, fuses them
//! ([`crate::search::fuse`]) and loads the hits.

use redb::{ReadableDatabase, ReadableTableMetadata};

use super::Collection;
use crate::ann::Ann;
use crate::doc::{DocKind, Document};
use crate::error::{Error, Result};
use crate::ids::{DocSet, VectorId};
use crate::search::fuse::{self, Ranked, with_context};
use crate::search::plan::{self, Route, Settings, Shape};
use crate::search::query::{self, Filter, Query, SearchMode};
use crate::search::{Context, Fusion, Hit, Hits, Plan, PlanPath, Signals};
use crate::store::tables::DOCS;

/// A search under construction; finish with [`SearchBuilder::run`]. Filters combine with AND.
#[must_use = "a search does nothing until `.run()`"]
pub struct SearchBuilder<'c> {
    coll: &'c Collection,
    query: Query,
    vector: Option<Vec<f32>>,
    exact: Option<bool>,
    ef: Option<usize>,
    fusion: Fusion,
    context: Context,
}

impl Collection {
    /// Searches for `text` (hybrid by default: by meaning with the collection's model and by
    /// words).
    pub fn search(&self, text: &str) -> SearchBuilder<'_> {
        SearchBuilder::new(self, Query::new(text), None)
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
        SearchBuilder {
            coll,
            query,
            vector,
            exact: None,
            ef: None,
            fusion: Fusion::default(),
            context: Context::default(),
        }
    }

    /// How much a hybrid hit's session and neighbouring messages lift it. Default:
    /// [`Context::default`]; [`Context::NONE`] ranks by the fused score alone. Semantic and
    /// lexical modes rank by their own score only.
    pub fn context(mut self, context: Context) -> Self {
        self.context = context;
        self
    }
    /// Semantic, lexical or hybrid. Default: hybrid for text queries; a vector query is
    /// semantic only.
    pub fn mode(mut self, mode: SearchMode) -> Self {
        self.query.mode = Some(mode);
        self
    }
    /// How hybrid search fuses the two rankings. Default: [`Fusion::default`].
    pub fn fusion(mut self, fusion: Fusion) -> Self {
        self.fusion = fusion;
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
    pub fn agent(mut self, agent: crate::Agent) -> Self {
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
                self.query.filter.validate()?;
                if v.len() != self.coll.embedder.dim() {
                    return Err(Error::DimensionMismatch { expected: self.coll.embedder.dim(), got: v.len() });
                }
                if matches!(self.query.mode, Some(SearchMode::Lexical | SearchMode::Hybrid)) {
                    return Err(Error::InvalidArgument(
                        "lexical and hybrid search need a text query; use `search(text)` or semantic mode".into(),
                    ));
                }
            }
        }
        match self.fusion {
            Fusion::Rrf { k } if k.is_nan() || k <= 0.0 => {
                Err(Error::InvalidArgument(format!("RRF k must be positive, got {k}")))
            }
            Fusion::Blend { semantic_weight: w } if !(0.0..=1.0).contains(&w) => {
                Err(Error::InvalidArgument(format!("blend weight must be within 0..=1, got {w}")))
            }
            _ => Ok(()),
        }
    }

    fn query_vector(&self) -> Result<Vec<f32>> {
        match &self.vector {
            None => self.coll.embedder.embed_one(&self.query.text),
            Some(v) => {
                let mut v = v.clone();
                crate::embed::normalize(&mut v);
                Ok(v)
            }
        }
    }

    /// Runs the search.
    pub fn run(self) -> Result<Hits> {
        self.validate()?;
        let coll = self.coll;
        let limit = self.query.limit;
        let mode = match (&self.vector, &coll.lexical) {
            (Some(_), _) => SearchMode::Semantic,
            // Without a lexical index the default is semantic.
            (None, None) => self.query.mode.unwrap_or(SearchMode::Semantic),
            (None, Some(_)) => self.query.mode.unwrap_or_default(),
        };
        let tx = coll.db.begin_read()?;
        let total = tx.open_table(DOCS)?.len()? as usize;
        let root = coll.meta()?.project_path;
        let cands = crate::store::filter::candidates(&tx, &self.query.filter.clauses(root.as_deref()))?;
        let candidates = cands.as_ref().map_or(total, DocSet::len);
        let selectivity = if total == 0 { 0.0 } else { candidates as f32 / total as f32 };
        let mut plan = Plan { path: PlanPath::Lexical, mode, candidates, total, selectivity };
        if candidates == 0 {
            return Ok(Hits { hits: Vec::new(), plan });
        }
        // Each list is deeper than `limit` when the other may reorder it.
        let want = if mode == SearchMode::Hybrid { (limit * 5).max(50) } else { limit };
        let mut query_vec = None;
        // (doc, cosine, chunk), best first, one entry per document.
        let mut semantic: Vec<(u64, f32, u32)> = Vec::new();
        if mode != SearchMode::Lexical {
            let q = self.query_vector()?;
            // Take a graph that finished loading in the background since the last search.
            if coll.ann.read().unwrap_or_else(|e| e.into_inner()).loading() {
                coll.ann.write().unwrap_or_else(|e| e.into_inner()).poll(false);
            }
            let ann = coll.ann.read().unwrap_or_else(|e| e.into_inner());
            let shape = Shape {
                filtered: cands.is_some(),
                candidates,
                selectivity,
                want,
                exact: self.exact,
                ef: self.ef,
                graph_ready: ann.graph_ready(),
            };
            let o = &coll.options;
            let settings = Settings {
                exact_threshold: o.exact_threshold,
                exact_fraction: o.exact_fraction,
                ef_search: o.hnsw.ef_search,
            };
            let (raw, path) = vector_search(&ann, plan::decide(shape, settings), &q, cands.as_ref(), candidates, want);
            plan.path = path;
            let mut seen = std::collections::HashSet::new();
            for (id, score) in raw {
                if seen.insert(id.doc()) {
                    semantic.push((id.doc(), score, id.chunk()));
                }
            }
            query_vec = Some(q);
        }
        let lexical_query =
            (mode != SearchMode::Semantic).then(|| crate::lexical::LexicalQuery::parse(&self.query.text));
        let lexical: Vec<(u64, f32)> = match (&lexical_query, &coll.lexical) {
            (Some(q), Some(l)) => l.search(q, cands.clone().map(std::sync::Arc::new), want)?,
            (Some(_), None) => {
                return Err(Error::InvalidArgument(
                    "this collection has no lexical index (CollectionOptions::lexical_index is off); use semantic mode"
                        .into(),
                ));
            }
            (None, _) => Vec::new(),
        };
        let cosines = match (&query_vec, mode, self.fusion) {
            (Some(q), SearchMode::Hybrid, Fusion::Blend { .. }) => {
                let only = fuse::lexical_only(&semantic, &lexical);
                let ann = coll.ann.read().unwrap_or_else(|e| e.into_inner());
                if only.is_empty() { Default::default() } else { cosines(&ann, q, &only) }
            }
            _ => Default::default(),
        };
        let ranked = fuse::rank(mode, self.fusion, &semantic, &lexical, &cosines);
        let terms = lexical_query.as_ref().map(|q| q.terms()).unwrap_or_default();
        let docs = tx.open_table(DOCS)?;
        // Hybrid with context: load the pool, re-score, re-sort; otherwise the ranking stands.
        let contextual = mode == SearchMode::Hybrid && self.context != Context::NONE;
        let pool = if contextual { limit.max(50) } else { limit };
        let mut loaded: Vec<(Document, f32, u32, Signals)> = Vec::with_capacity(pool);
        for Ranked { doc, score, chunk, signals } in ranked {
            // An index may run ahead of this read snapshot; such hits are skipped.
            let Some(doc) = crate::store::get_doc(&docs, doc)? else { continue };
            loaded.push((doc, score, chunk, signals));
            if loaded.len() == pool {
                break;
            }
        }
        if contextual {
            with_context(&mut loaded, self.context);
        }
        let hits = loaded
            .into_iter()
            .take(limit)
            .map(|(doc, score, chunk, signals)| {
                let snippet =
                    if signals.lexical.is_some() { crate::lexical::snippet(&doc.content, &terms, 160) } else { None };
                Hit { doc, score, chunk, signals, snippet, plan }
            })
            .collect();
        Ok(Hits { hits, plan })
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
