//! Filtered vector search: a builder with one terminal verb, and the planner that picks an
//! exact scan or a filtered graph walk from the size of the candidate set.

use chrono::{DateTime, Utc};
use redb::{ReadTransaction, ReadableDatabase, ReadableTableMetadata};

use crate::collection::{Collection, get_doc};
use crate::doc::{DocKind, Document};
use crate::error::{Error, Result};
use crate::ids::DocSet;
use crate::store::tables::*;

/// The most hits one search returns ([`SearchBuilder::limit`]); more is [`Error::LimitTooLarge`].
pub const MAX_LIMIT: usize = 1000;
/// The longest query text, in bytes; longer is [`Error::QueryTooLong`]. The model reads at most
/// 256 tokens of it anyway.
pub const MAX_QUERY_BYTES: usize = 8 * 1024;

/// How a text query is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchMode {
    /// By meaning: the query's embedding against the documents' (cosine).
    Semantic,
    /// By words: BM25 over the lexical index; quoted phrases and identifiers must match
    /// exactly (see [`crate::lexical`]).
    Lexical,
    /// Both rankings fused ([`Fusion`]); the default.
    #[default]
    Hybrid,
}

impl std::str::FromStr for SearchMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "semantic" => Ok(SearchMode::Semantic),
            "lexical" => Ok(SearchMode::Lexical),
            "hybrid" => Ok(SearchMode::Hybrid),
            other => {
                Err(Error::InvalidArgument(format!("unknown search mode `{other}`; use semantic, lexical or hybrid")))
            }
        }
    }
}

/// How hybrid search merges the semantic and the lexical ranking.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank fusion: each list adds `1 / (k + rank)`.
    Rrf {
        /// The rank offset (60 in the original paper).
        k: f32,
    },
    /// Normalised score blend: `w · z(cos) + (1 − w) · z(bm25)`, z-scores over the union of
    /// both candidate lists. Lexical candidates the semantic list missed get their exact
    /// cosine, and semantic candidates the lexical index did not match have BM25 0, so every
    /// candidate is scored on both signals.
    Blend {
        /// Weight of the semantic score, 0–1.
        semantic_weight: f32,
    },
}

impl Default for Fusion {
    /// The blend chosen on LoCoMo (see README).
    fn default() -> Self {
        Fusion::Blend { semantic_weight: 0.5 }
    }
}

/// How hybrid search lets a hit's conversation lift it: a message whose session holds the
/// strongest candidates, or whose neighbouring messages match too, is more likely what was asked
/// for than an equally scored message alone (answers span turns; a topic lives in a session).
/// Both weights multiply a fused score's distance above the weakest of the top candidates
/// (`max(limit, 50)` of them), so they are independent of the fusion's scale, and a ranking
/// does not depend on `limit` beyond that pool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Context {
    /// Weight of the best fused score in the hit's session (the hit itself included).
    pub session: f32,
    /// Weight of the better fused score of the two adjacent messages (by message index).
    pub neighbours: f32,
}

impl Context {
    /// No context: the fused ranking as it is.
    pub const NONE: Context = Context { session: 0.0, neighbours: 0.0 };
}

impl Default for Context {
    /// Chosen on LoCoMo, checked on the Claude Code corpus cases (see README).
    fn default() -> Self {
        Context { session: 0.3, neighbours: 0.2 }
    }
}

/// Which signals matched a hit, and how.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Signals {
    /// Cosine similarity of the best chunk, when semantic search ran.
    pub semantic: Option<f32>,
    /// 1-based rank in the semantic list, when the document was in it.
    pub semantic_rank: Option<usize>,
    /// BM25 score, when the lexical index matched the document.
    pub lexical: Option<f32>,
    /// 1-based rank in the lexical list.
    pub lexical_rank: Option<usize>,
}

/// Which path a search took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanPath {
    /// Exact scan of exactly the candidate documents' vectors (recall 1).
    Exact,
    /// HNSW walk.
    Graph {
        /// Candidate list size used.
        ef: usize,
        /// `false`: the filter was applied during traversal. `true`: most documents pass the
        /// filter, so an unfiltered walk over-fetched and the filter was applied to its results
        /// (falling back to the filtered walk if too few passed).
        post_filter: bool,
    },
    /// Lexical mode: BM25 over the lexical index, restricted to the candidate documents.
    Lexical,
}

/// The plan a search ran with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Exact or graph (the vector side of a hybrid search), or lexical.
    pub path: PlanPath,
    /// The mode that ran.
    pub mode: SearchMode,
    /// Documents passing the filters (all documents when there is no filter).
    pub candidates: usize,
    /// Documents in the collection.
    pub total: usize,
    /// `candidates / total`.
    pub selectivity: f32,
}

/// One search result.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The document (a message once, whichever of its chunks matched).
    pub doc: Document,
    /// The ranking score: cosine (semantic), BM25 (lexical) or the fused score (hybrid).
    pub score: f32,
    /// Index of the best-matching chunk (0 when only the lexical index matched).
    pub chunk: u32,
    /// Which signals matched.
    pub signals: Signals,
    /// The text around the first lexical match, matches in `[` `]` (when words matched).
    pub snippet: Option<String>,
    /// The plan that produced it.
    pub plan: Plan,
}

/// Results and the plan used.
#[derive(Debug, Clone)]
pub struct Hits {
    /// Best first.
    pub hits: Vec<Hit>,
    /// The plan (also available when there are no hits).
    pub plan: Plan,
}

impl std::ops::Deref for Hits {
    type Target = [Hit];
    fn deref(&self) -> &[Hit] {
        &self.hits
    }
}

impl IntoIterator for Hits {
    type Item = Hit;
    type IntoIter = std::vec::IntoIter<Hit>;
    fn into_iter(self) -> Self::IntoIter {
        self.hits.into_iter()
    }
}

enum Query {
    Text(String),
    Vector(Vec<f32>),
}

/// A search under construction; finish with [`SearchBuilder::run`]. Filters combine with AND.
#[must_use = "a search does nothing until `.run()`"]
pub struct SearchBuilder<'c> {
    coll: &'c Collection,
    query: Query,
    kinds: Vec<DocKind>,
    tags_any: Vec<String>,
    tags_all: Vec<String>,
    domain: Option<String>,
    sessions: Vec<String>,
    files: Vec<String>,
    file_prefix: Option<String>,
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
    limit: usize,
    exact: Option<bool>,
    ef: Option<usize>,
    mode: Option<SearchMode>,
    fusion: Fusion,
    context: Context,
}

impl Collection {
    /// Searches by meaning for `text` (embedded with the collection's model).
    pub fn search(&self, text: &str) -> SearchBuilder<'_> {
        SearchBuilder::new(self, Query::Text(text.to_string()))
    }

    /// Searches by a query vector of the collection's dimension.
    pub fn search_vector(&self, vector: Vec<f32>) -> SearchBuilder<'_> {
        SearchBuilder::new(self, Query::Vector(vector))
    }
}

impl<'c> SearchBuilder<'c> {
    fn new(coll: &'c Collection, query: Query) -> Self {
        SearchBuilder {
            coll,
            query,
            kinds: Vec::new(),
            tags_any: Vec::new(),
            tags_all: Vec::new(),
            domain: None,
            sessions: Vec::new(),
            files: Vec::new(),
            file_prefix: None,
            since: None,
            until: None,
            limit: 10,
            exact: None,
            ef: None,
            mode: None,
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
        self.mode = Some(mode);
        self
    }

    /// How hybrid search fuses the two rankings. Default: [`Fusion::default`].
    pub fn fusion(mut self, fusion: Fusion) -> Self {
        self.fusion = fusion;
        self
    }

    /// Only documents of this type (repeat for several). Default: all types.
    pub fn kind(mut self, kind: DocKind) -> Self {
        self.kinds.push(kind);
        self
    }
    /// Documents carrying at least one of these tags.
    pub fn tags_any<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tags: I) -> Self {
        self.tags_any.extend(tags.into_iter().map(|t| t.into().to_lowercase()));
        self
    }
    /// Documents carrying all of these tags.
    pub fn tags_all<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tags: I) -> Self {
        self.tags_all.extend(tags.into_iter().map(|t| t.into().to_lowercase()));
        self
    }
    /// Documents of this domain.
    pub fn domain(mut self, domain: &str) -> Self {
        self.domain = Some(domain.to_lowercase());
        self
    }
    /// Documents of this session (repeat for any of several).
    pub fn session(mut self, session_id: &str) -> Self {
        self.sessions.push(session_id.to_string());
        self
    }
    /// Documents that discuss exactly this file path (repeat for any of several).
    pub fn file(mut self, path: &str) -> Self {
        self.files.push(path.to_string());
        self
    }
    /// Documents that discuss a file under this path prefix (e.g. a directory `src/`).
    pub fn file_prefix(mut self, prefix: &str) -> Self {
        self.file_prefix = Some(prefix.to_string());
        self
    }
    /// Documents at or after this time.
    pub fn since(mut self, t: DateTime<Utc>) -> Self {
        self.since = Some(t);
        self
    }
    /// Documents at or before this time.
    pub fn until(mut self, t: DateTime<Utc>) -> Self {
        self.until = Some(t);
        self
    }
    /// Both time bounds.
    pub fn between(self, since: DateTime<Utc>, until: DateTime<Utc>) -> Self {
        self.since(since).until(until)
    }
    /// Maximum number of hits, 1 to [`MAX_LIMIT`]. Default: 10.
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = n;
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
        if let Query::Text(t) = &self.query
            && t.trim().is_empty()
        {
            return Err(Error::EmptyQuery);
        }
        if self.limit == 0 {
            return Err(Error::ZeroLimit);
        }
        if self.limit > MAX_LIMIT {
            return Err(Error::LimitTooLarge { limit: self.limit, max: MAX_LIMIT });
        }
        if let Query::Text(t) = &self.query
            && t.len() > MAX_QUERY_BYTES
        {
            return Err(Error::QueryTooLong { bytes: t.len(), max: MAX_QUERY_BYTES });
        }
        if let (Some(s), Some(u)) = (self.since, self.until)
            && s > u
        {
            return Err(Error::InvertedTimeRange { since: s.to_rfc3339(), until: u.to_rfc3339() });
        }
        if let Query::Vector(v) = &self.query
            && v.len() != self.coll.embedder.dim()
        {
            return Err(Error::DimensionMismatch { expected: self.coll.embedder.dim(), got: v.len() });
        }
        if matches!(self.query, Query::Vector(_)) && matches!(self.mode, Some(SearchMode::Lexical | SearchMode::Hybrid))
        {
            return Err(Error::InvalidArgument(
                "lexical and hybrid search need a text query; use `search(text)` or semantic mode".into(),
            ));
        }
        match self.fusion {
            Fusion::Rrf { k } if k.is_nan() || k <= 0.0 => {
                return Err(Error::InvalidArgument(format!("RRF k must be positive, got {k}")));
            }
            Fusion::Blend { semantic_weight: w } if !(0.0..=1.0).contains(&w) => {
                return Err(Error::InvalidArgument(format!("blend weight must be within 0..=1, got {w}")));
            }
            _ => {}
        }
        if self.files.iter().any(|f| f.is_empty()) {
            return Err(Error::InvalidArgument("file filter is empty; give a path such as `src/auth.rs`".into()));
        }
        Ok(())
    }

    fn has_filter(&self) -> bool {
        !self.kinds.is_empty()
            || !self.tags_any.is_empty()
            || !self.tags_all.is_empty()
            || self.domain.is_some()
            || !self.sessions.is_empty()
            || !self.files.is_empty()
            || self.file_prefix.is_some()
            || self.since.is_some()
            || self.until.is_some()
    }

    /// The candidate documents passing every filter, from the secondary indexes.
    fn candidates(&self, tx: &ReadTransaction) -> Result<Option<DocSet>> {
        if !self.has_filter() {
            return Ok(None);
        }
        let mut acc: Option<DocSet> = None;
        let mut and = |s: DocSet| match &mut acc {
            Some(a) => a.intersect(&s),
            None => acc = Some(s),
        };
        if !self.kinds.is_empty() {
            let t = tx.open_multimap_table(IDX_KIND)?;
            let mut s = DocSet::new();
            for k in &self.kinds {
                for id in t.get(k.code())? {
                    s.insert(id?.value());
                }
            }
            and(s);
        }
        let tags = tx.open_multimap_table(IDX_TAG)?;
        if !self.tags_any.is_empty() {
            let mut s = DocSet::new();
            for tag in &self.tags_any {
                for id in tags.get(tag.as_str())? {
                    s.insert(id?.value());
                }
            }
            and(s);
        }
        for tag in &self.tags_all {
            let mut s = DocSet::new();
            for id in tags.get(tag.as_str())? {
                s.insert(id?.value());
            }
            and(s);
        }
        if let Some(d) = &self.domain {
            let t = tx.open_multimap_table(IDX_DOMAIN)?;
            let mut s = DocSet::new();
            for id in t.get(d.as_str())? {
                s.insert(id?.value());
            }
            and(s);
        }
        if !self.sessions.is_empty() {
            let t = tx.open_multimap_table(IDX_SESSION)?;
            let mut s = DocSet::new();
            for sess in &self.sessions {
                for id in t.get(sess.as_str())? {
                    s.insert(id?.value());
                }
            }
            and(s);
        }
        if !self.files.is_empty() || self.file_prefix.is_some() {
            let t = tx.open_multimap_table(IDX_FILE)?;
            // Paths in whatever form they were typed (see `Collection::file_forms`).
            let root = self.coll.meta()?.project_path;
            if !self.files.is_empty() {
                let mut s = DocSet::new();
                for f in &self.files {
                    for form in crate::text::paths::lookup_forms(f, root.as_deref()) {
                        for id in t.get(form.as_str())? {
                            s.insert(id?.value());
                        }
                    }
                }
                and(s);
            }
            if let Some(p) = &self.file_prefix {
                let mut s = DocSet::new();
                // A directory prefix keeps its `/` (`src/` must not match `srcx/`).
                let dir = p.ends_with('/') || p.ends_with('\\');
                for form in crate::text::paths::lookup_forms(p, root.as_deref()) {
                    let form = if dir && !form.is_empty() && !form.ends_with('/') { format!("{form}/") } else { form };
                    for entry in t.range(form.as_str()..)? {
                        let (k, ids) = entry?;
                        if !k.value().starts_with(form.as_str()) {
                            break;
                        }
                        for id in ids {
                            s.insert(id?.value());
                        }
                    }
                }
                and(s);
            }
        }
        if self.since.is_some() || self.until.is_some() {
            let t = tx.open_multimap_table(IDX_TIME)?;
            let lo = self.since.map_or(i64::MIN, |d| d.timestamp_millis());
            let hi = self.until.map_or(i64::MAX, |d| d.timestamp_millis());
            let mut s = DocSet::new();
            for entry in t.range(lo..=hi)? {
                let (_, ids) = entry?;
                for id in ids {
                    s.insert(id?.value());
                }
            }
            and(s);
        }
        Ok(acc)
    }

    fn query_vector(&self) -> Result<Vec<f32>> {
        let dim = self.coll.embedder.dim();
        match &self.query {
            Query::Text(t) => self.coll.embedder.embed_one(t),
            Query::Vector(v) => {
                if v.len() != dim {
                    return Err(Error::DimensionMismatch { expected: dim, got: v.len() });
                }
                let mut v = v.clone();
                crate::embed::normalize(&mut v);
                Ok(v)
            }
        }
    }

    /// The vector side: `(data id, cosine)` best first, and the path taken.
    fn vector_search(
        &self,
        query: &[f32],
        cands: Option<&DocSet>,
        candidates: usize,
        selectivity: f32,
        want: usize,
    ) -> (Vec<(u64, f32)>, PlanPath) {
        let coll = self.coll;
        // Take a graph that finished loading in the background since the last search.
        if coll.ann.read().unwrap_or_else(|e| e.into_inner()).loading() {
            coll.ann.write().unwrap_or_else(|e| e.into_inner()).poll(false);
        }
        let graph_ready = coll.ann.read().unwrap_or_else(|e| e.into_inner()).graph_ready();
        // Until a persisted graph has finished loading, the exact scan answers.
        let exact = !graph_ready
            || self.exact.unwrap_or(
                candidates <= coll.options.exact_threshold
                    || (cands.is_some() && selectivity < coll.options.exact_fraction),
            );
        let base_ef = coll.options.hnsw.ef_search.max(want * 2);
        let ef = self.ef.unwrap_or_else(|| {
            if cands.is_none() {
                base_ef
            } else {
                // Fewer passing nodes per visited node: widen the walk as selectivity drops.
                ((base_ef as f32 / selectivity.max(1e-3).sqrt()) as usize).clamp(base_ef, 2000)
            }
        });
        // Most documents pass: an unfiltered walk that over-fetches is cheaper than a filtered
        // walk, which cannot stop early.
        let post_filter = cands.is_some() && selectivity >= coll.options.exact_fraction.min(0.5);
        let ann = coll.ann.read().unwrap_or_else(|e| e.into_inner());
        // Documents have up to 256 chunks; ask for more than `want` vectors and keep each
        // document's best.
        if exact {
            return (ann.search_exact(query, cands, candidates, want), PlanPath::Exact);
        }
        let knbn = want * 3;
        let filter = cands.map(|s| move |doc: u64| s.contains(doc));
        let keep: Option<&(dyn Fn(u64) -> bool + Sync)> = filter.as_ref().map(|f| f as _);
        if let (Some(set), true) = (cands, post_filter) {
            let over = (knbn as f32 * 1.5 / selectivity) as usize + 10;
            let kept: Vec<(u64, f32)> = ann
                .search_graph(query, over, ef.max(over), None)
                .into_iter()
                .filter(|(id, _)| set.contains(id >> 8))
                .collect();
            let docs: std::collections::HashSet<u64> = kept.iter().map(|(id, _)| id >> 8).collect();
            if docs.len() >= want.min(candidates) {
                return (kept, PlanPath::Graph { ef, post_filter: true });
            }
        }
        // Too few passed the post-filter (or no filter): the filtered walk.
        (ann.search_graph(query, knbn, ef.max(knbn), keep), PlanPath::Graph { ef, post_filter: false })
    }

    /// Exact cosine of each document's best chunk, for documents only the lexical list found.
    fn cosines(&self, query: &[f32], docs: &[u64]) -> std::collections::HashMap<u64, (f32, u32)> {
        let set: DocSet = docs.iter().copied().collect();
        let ann = self.coll.ann.read().unwrap_or_else(|e| e.into_inner());
        let mut out = std::collections::HashMap::new();
        for (id, score) in ann.search_exact(query, Some(&set), docs.len(), docs.len() * 8) {
            let e = out.entry(id >> 8).or_insert((score, (id & 0xff) as u32));
            if score > e.0 {
                *e = (score, (id & 0xff) as u32);
            }
        }
        out
    }

    /// Runs the search.
    pub fn run(self) -> Result<Hits> {
        self.validate()?;
        let coll = self.coll;
        let mode = match self.query {
            Query::Vector(_) => SearchMode::Semantic,
            // Without a lexical index the default is semantic.
            Query::Text(_) if coll.lexical.is_none() => self.mode.unwrap_or(SearchMode::Semantic),
            Query::Text(_) => self.mode.unwrap_or_default(),
        };
        let tx = coll.db.begin_read()?;
        let total = tx.open_table(DOCS)?.len()? as usize;
        let cands = self.candidates(&tx)?;
        let candidates = cands.as_ref().map_or(total, DocSet::len);
        let selectivity = if total == 0 { 0.0 } else { candidates as f32 / total as f32 };
        let mut plan = Plan { path: PlanPath::Lexical, mode, candidates, total, selectivity };
        if candidates == 0 {
            return Ok(Hits { hits: Vec::new(), plan });
        }
        // Each list is deeper than `limit` when the other may reorder it.
        let want = if mode == SearchMode::Hybrid { (self.limit * 5).max(50) } else { self.limit };
        let mut query_vec = None;
        // (doc, cosine, chunk), best first, one entry per document.
        let mut semantic: Vec<(u64, f32, u32)> = Vec::new();
        if mode != SearchMode::Lexical {
            let q = self.query_vector()?;
            let (raw, path) = self.vector_search(&q, cands.as_ref(), candidates, selectivity, want);
            plan.path = path;
            let mut seen = std::collections::HashSet::new();
            for (data_id, score) in raw {
                if seen.insert(data_id >> 8) {
                    semantic.push((data_id >> 8, score, (data_id & 0xff) as u32));
                }
            }
            query_vec = Some(q);
        }
        let lexical_query = match &self.query {
            Query::Text(t) if mode != SearchMode::Semantic => Some(crate::lexical::LexicalQuery::parse(t)),
            _ => None,
        };
        let lexical: Vec<(u64, f32)> = match &lexical_query {
            Some(q) => match &coll.lexical {
                Some(l) => l.search(q, cands.clone().map(std::sync::Arc::new), want)?,
                None => {
                    return Err(Error::InvalidArgument(
                        "this collection has no lexical index (CollectionOptions::lexical_index is off); \
                         use semantic mode"
                            .into(),
                    ));
                }
            },
            None => Vec::new(),
        };
        // (doc, score, chunk, signals), best first.
        let mut ranked: Vec<(u64, f32, u32, Signals)> = Vec::new();
        let sem_rank: std::collections::HashMap<u64, (usize, f32, u32)> =
            semantic.iter().enumerate().map(|(r, &(d, s, c))| (d, (r + 1, s, c))).collect();
        let lex_rank: std::collections::HashMap<u64, (usize, f32)> =
            lexical.iter().enumerate().map(|(r, &(d, s))| (d, (r + 1, s))).collect();
        let signals = |d: u64, cos: Option<f32>| Signals {
            semantic: cos.or(sem_rank.get(&d).map(|x| x.1)),
            semantic_rank: sem_rank.get(&d).map(|x| x.0),
            lexical: lex_rank.get(&d).map(|x| x.1),
            lexical_rank: lex_rank.get(&d).map(|x| x.0),
        };
        match mode {
            SearchMode::Semantic => {
                ranked.extend(semantic.iter().map(|&(d, s, c)| (d, s, c, signals(d, None))));
            }
            SearchMode::Lexical => {
                ranked.extend(lexical.iter().map(|&(d, s)| (d, s, 0, signals(d, None))));
            }
            SearchMode::Hybrid => {
                let mut union: Vec<u64> = semantic.iter().map(|x| x.0).collect();
                union.extend(lexical.iter().map(|x| x.0).filter(|d| !sem_rank.contains_key(d)));
                match self.fusion {
                    Fusion::Rrf { k } => {
                        for &d in &union {
                            let score = sem_rank.get(&d).map_or(0.0, |x| 1.0 / (k + x.0 as f32))
                                + lex_rank.get(&d).map_or(0.0, |x| 1.0 / (k + x.0 as f32));
                            let chunk = sem_rank.get(&d).map_or(0, |x| x.2);
                            ranked.push((d, score, chunk, signals(d, None)));
                        }
                    }
                    Fusion::Blend { semantic_weight: w } => {
                        let only_lex: Vec<u64> = union.iter().copied().filter(|d| !sem_rank.contains_key(d)).collect();
                        let extra = match (&query_vec, only_lex.is_empty()) {
                            (Some(q), false) => self.cosines(q, &only_lex),
                            _ => Default::default(),
                        };
                        let cos = |d: u64| -> Option<(f32, u32)> {
                            sem_rank.get(&d).map(|x| (x.1, x.2)).or_else(|| extra.get(&d).copied())
                        };
                        // z-scores over the candidates; a document the lexical index did not
                        // match has BM25 0.
                        let z = |v: &[f32]| {
                            let n = v.len().max(1) as f32;
                            let mean = v.iter().sum::<f32>() / n;
                            let sd = (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n).sqrt();
                            (mean, sd.max(1e-6))
                        };
                        let cos_all: Vec<f32> = union.iter().filter_map(|&d| cos(d).map(|c| c.0)).collect();
                        let bm25_all: Vec<f32> = union.iter().map(|d| lex_rank.get(d).map_or(0.0, |x| x.1)).collect();
                        let ((cm, cs), (lm, ls)) = (z(&cos_all), z(&bm25_all));
                        for (&d, &bm25) in union.iter().zip(&bm25_all) {
                            let c = cos(d);
                            let cz = c.map_or(0.0, |x| (x.0 - cm) / cs);
                            let lz = (bm25 - lm) / ls;
                            ranked.push((d, w * cz + (1.0 - w) * lz, c.map_or(0, |x| x.1), signals(d, c.map(|x| x.0))));
                        }
                    }
                }
                ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            }
        }
        let terms = lexical_query.as_ref().map(|q| q.terms()).unwrap_or_default();
        let docs = tx.open_table(DOCS)?;
        // Hybrid with context: load the pool, re-score, re-sort; otherwise the ranking stands.
        let contextual = mode == SearchMode::Hybrid && self.context != Context::NONE;
        let pool = if contextual { self.limit.max(50) } else { self.limit };
        let mut loaded: Vec<(Document, f32, u32, Signals)> = Vec::with_capacity(pool);
        for (doc_id, score, chunk, signals) in ranked {
            // An index may run ahead of this read snapshot; such hits are skipped.
            let Some(doc) = get_doc(&docs, doc_id)? else { continue };
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
            .take(self.limit)
            .map(|(doc, score, chunk, signals)| {
                let snippet =
                    if signals.lexical.is_some() { crate::lexical::snippet(&doc.content, &terms, 160) } else { None };
                Hit { doc, score, chunk, signals, snippet, plan }
            })
            .collect();
        Ok(Hits { hits, plan })
    }
}

/// Adds the [`Context`] terms to fused scores and re-sorts (stable for equal scores).
fn with_context(pool: &mut [(Document, f32, u32, Signals)], context: Context) {
    use std::collections::HashMap;
    let Some(floor) = pool.iter().map(|x| x.1).reduce(f32::min) else { return };
    let position = |d: &Document| match &d.body {
        crate::doc::DocBody::Message(m) => Some(m.message_index),
        _ => None,
    };
    let mut best: HashMap<&str, f32> = HashMap::new();
    let mut at: HashMap<(&str, u64), f32> = HashMap::new();
    for (d, s, ..) in pool.iter() {
        let b = best.entry(d.session_id.as_str()).or_insert(floor);
        *b = b.max(*s);
        if let Some(i) = position(d) {
            at.insert((d.session_id.as_str(), i), *s);
        }
    }
    let boosts: Vec<f32> = pool
        .iter()
        .map(|(d, ..)| {
            let session = best[d.session_id.as_str()] - floor;
            let neighbour = position(d).map_or(0.0, |i| {
                let around = [i.checked_sub(1), i.checked_add(1)];
                around
                    .into_iter()
                    .flatten()
                    .filter_map(|j| at.get(&(d.session_id.as_str(), j)))
                    .fold(floor, |a, &b| a.max(b))
                    - floor
            });
            context.session * session + context.neighbours * neighbour
        })
        .collect();
    for (x, b) in pool.iter_mut().zip(boosts) {
        x.1 += b;
    }
    pool.sort_by(|a, b| b.1.total_cmp(&a.1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Role;

    fn pool(rows: &[(&str, u64, f32)]) -> Vec<(Document, f32, u32, Signals)> {
        rows.iter()
            .map(|&(s, i, score)| {
                (Document::message(s, &format!("{s}-{i}"), i, Role::User, "x"), score, 0, Signals::default())
            })
            .collect()
    }

    fn order(p: &[(Document, f32, u32, Signals)]) -> Vec<(String, u64)> {
        p.iter()
            .map(|(d, ..)| match &d.body {
                crate::doc::DocBody::Message(m) => (d.session_id.clone(), m.message_index),
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn context_lifts_hits_whose_session_and_neighbours_match() {
        // b:7 scores a little above a:3, but a:3 sits next to a:4 in the session that holds the
        // best candidate.
        let rows = [("a", 10, 2.0), ("b", 7, 1.05), ("a", 3, 1.0), ("a", 4, 0.9), ("c", 1, 0.0)];
        let mut p = pool(&rows);
        with_context(&mut p, Context::NONE);
        assert_eq!(order(&p)[1], ("b".into(), 7), "no context: the fused order stands");
        let mut p = pool(&rows);
        with_context(&mut p, Context::default());
        let o = order(&p);
        assert_eq!(o[0], ("a".into(), 10));
        assert_eq!(o[1], ("a".into(), 3), "{o:?}");
        assert_eq!(o.last().unwrap(), &("c".into(), 1), "the floor gets no lift");
        // Neighbours only: a:3 and a:4 lift each other; a lone strong hit keeps its place.
        let mut p = pool(&rows);
        with_context(&mut p, Context { session: 0.0, neighbours: 0.2 });
        let o = order(&p);
        assert_eq!(o[0], ("a".into(), 10));
        assert_eq!(o[1], ("a".into(), 3), "{o:?}");
        // Empty pools are fine.
        with_context(&mut [], Context::default());
    }
}
