//! Filtered vector search: a builder with one terminal verb, and the planner that picks an
//! exact scan or a filtered graph walk from the size of the candidate set.

use chrono::{DateTime, Utc};
use redb::{ReadTransaction, ReadableDatabase, ReadableTableMetadata};

use crate::collection::{Collection, get_doc};
use crate::doc::{DocKind, Document};
use crate::docset::DocSet;
use crate::error::{Error, Result};
use crate::store::tables::*;

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
}

/// The plan a search ran with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Exact or graph.
    pub path: PlanPath,
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
    /// Cosine similarity of the best-matching chunk.
    pub score: f32,
    /// Index of the best-matching chunk.
    pub chunk: u32,
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
        }
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
    /// Maximum number of hits. Default: 10.
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
        if let (Some(s), Some(u)) = (self.since, self.until)
            && s > u
        {
            return Err(Error::InvertedTimeRange { since: s.to_rfc3339(), until: u.to_rfc3339() });
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
            if !self.files.is_empty() {
                let mut s = DocSet::new();
                for f in &self.files {
                    for id in t.get(f.as_str())? {
                        s.insert(id?.value());
                    }
                }
                and(s);
            }
            if let Some(p) = &self.file_prefix {
                let mut s = DocSet::new();
                for entry in t.range(p.as_str()..)? {
                    let (k, ids) = entry?;
                    if !k.value().starts_with(p.as_str()) {
                        break;
                    }
                    for id in ids {
                        s.insert(id?.value());
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

    /// Runs the search.
    pub fn run(self) -> Result<Hits> {
        self.validate()?;
        let coll = self.coll;
        let dim = coll.embedder.dim();
        let query = match &self.query {
            Query::Text(t) => coll.embedder.embed_one(t)?,
            Query::Vector(v) => {
                if v.len() != dim {
                    return Err(Error::DimensionMismatch { expected: dim, got: v.len() });
                }
                let mut v = v.clone();
                crate::embed::normalize(&mut v);
                v
            }
        };
        // Take a graph that finished loading in the background since the last search.
        if coll.ann.read().unwrap_or_else(|e| e.into_inner()).loading() {
            coll.ann.write().unwrap_or_else(|e| e.into_inner()).poll(false);
        }
        let graph_ready = coll.ann.read().unwrap_or_else(|e| e.into_inner()).graph_ready();
        let tx = coll.db.begin_read()?;
        let total = tx.open_table(DOCS)?.len()? as usize;
        let cands = self.candidates(&tx)?;
        let candidates = cands.as_ref().map_or(total, DocSet::len);
        let selectivity = if total == 0 { 0.0 } else { candidates as f32 / total as f32 };
        // Until a persisted graph has finished loading, the exact scan answers.
        let exact = !graph_ready
            || self.exact.unwrap_or(
                candidates <= coll.options.exact_threshold
                    || (cands.is_some() && selectivity < coll.options.exact_fraction),
            );
        let base_ef = coll.options.hnsw.ef_search.max(self.limit * 2);
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
        let mut plan = Plan {
            path: if exact { PlanPath::Exact } else { PlanPath::Graph { ef, post_filter } },
            candidates,
            total,
            selectivity,
        };
        if candidates == 0 {
            return Ok(Hits { hits: Vec::new(), plan });
        }
        // Documents have up to 256 chunks; ask for more than `limit` vectors and keep each
        // document's best.
        let raw: Vec<(u64, f32)> = {
            let ann = coll.ann.read().unwrap_or_else(|e| e.into_inner());
            if exact {
                ann.search_exact(&query, cands.as_ref(), candidates, self.limit)
            } else {
                let knbn = self.limit * 3;
                let filter = cands.as_ref().map(|s| move |doc: u64| s.contains(doc));
                let keep: Option<&(dyn Fn(u64) -> bool + Sync)> = filter.as_ref().map(|f| f as _);
                let over = match (&cands, post_filter) {
                    (Some(set), true) => {
                        let want = (knbn as f32 * 1.5 / selectivity) as usize + 10;
                        let kept: Vec<(u64, f32)> = ann
                            .search_graph(&query, want, ef.max(want), None)
                            .into_iter()
                            .filter(|(id, _)| set.contains(id >> 8))
                            .collect();
                        let docs: std::collections::HashSet<u64> = kept.iter().map(|(id, _)| id >> 8).collect();
                        (docs.len() >= self.limit.min(candidates)).then_some(kept)
                    }
                    _ => None,
                };
                match over {
                    Some(kept) => kept,
                    None => {
                        // Too few passed the post-filter: the plan that ran is the filtered walk.
                        plan.path = PlanPath::Graph { ef, post_filter: false };
                        ann.search_graph(&query, knbn, ef.max(knbn), keep)
                    }
                }
            }
        };
        let docs = tx.open_table(DOCS)?;
        let mut seen = std::collections::HashSet::new();
        let mut hits = Vec::with_capacity(self.limit);
        for (data_id, score) in raw {
            let doc_id = data_id >> 8;
            if !seen.insert(doc_id) {
                continue;
            }
            // The graph may run ahead of this read snapshot; such hits are skipped.
            let Some(doc) = get_doc(&docs, doc_id)? else { continue };
            hits.push(Hit { doc, score, chunk: (data_id & 0xff) as u32, plan });
            if hits.len() == self.limit {
                break;
            }
        }
        Ok(Hits { hits, plan })
    }
}
