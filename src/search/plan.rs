//! The planner: which way the vector side of a search goes. Candidates from the filter's
//! secondary indexes; at most `exact_threshold` of them (or a small share of the collection)
//! are scanned exactly (recall 1); otherwise the HNSW graph is walked, unfiltered with
//! over-fetching when most documents pass, or with the filter applied during traversal.

use crate::ann::Ann;
use crate::collection::CollectionOptions;
use crate::ids::{DocSet, VectorId};
use crate::search::query::SearchMode;

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

/// What the planner knows about a search.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape<'a> {
    /// The candidate documents (`None`: every document).
    pub(crate) cands: Option<&'a DocSet>,
    /// How many there are.
    pub(crate) candidates: usize,
    /// Their share of the collection.
    pub(crate) selectivity: f32,
    /// Documents wanted from the vector side.
    pub(crate) want: usize,
    /// `Some(true)` forces the exact scan, `Some(false)` the graph.
    pub(crate) exact: Option<bool>,
    /// Candidate list size for the graph walk, when forced.
    pub(crate) ef: Option<usize>,
}

/// The vector side: `(vector, cosine)` best first, and the path taken. Until a persisted graph
/// has finished loading, the exact scan answers.
pub(crate) fn vector_search(
    ann: &Ann,
    options: &CollectionOptions,
    query: &[f32],
    s: Shape<'_>,
) -> (Vec<(VectorId, f32)>, PlanPath) {
    let exact = !ann.graph_ready()
        || s.exact.unwrap_or(
            s.candidates <= options.exact_threshold || (s.cands.is_some() && s.selectivity < options.exact_fraction),
        );
    let base_ef = options.hnsw.ef_search.max(s.want * 2);
    let ef = s.ef.unwrap_or_else(|| {
        if s.cands.is_none() {
            base_ef
        } else {
            // Fewer passing nodes per visited node: widen the walk as selectivity drops.
            ((base_ef as f32 / s.selectivity.max(1e-3).sqrt()) as usize).clamp(base_ef, 2000)
        }
    });
    // Most documents pass: an unfiltered walk that over-fetches is cheaper than a filtered walk,
    // which cannot stop early.
    let post_filter = s.cands.is_some() && s.selectivity >= options.exact_fraction.min(0.5);
    // Documents have up to 256 chunks; ask for more than `want` vectors and keep each
    // document's best.
    if exact {
        return (ann.search_exact(query, s.cands, s.candidates, s.want), PlanPath::Exact);
    }
    let knbn = s.want * 3;
    let filter = s.cands.map(|set| move |doc: u64| set.contains(doc));
    let keep: Option<&(dyn Fn(u64) -> bool + Sync)> = filter.as_ref().map(|f| f as _);
    if let (Some(set), true) = (s.cands, post_filter) {
        let over = (knbn as f32 * 1.5 / s.selectivity) as usize + 10;
        let kept: Vec<(VectorId, f32)> = ann
            .search_graph(query, over, ef.max(over), None)
            .into_iter()
            .filter(|(id, _)| set.contains(id.doc()))
            .collect();
        let docs: std::collections::HashSet<u64> = kept.iter().map(|(id, _)| id.doc()).collect();
        if docs.len() >= s.want.min(s.candidates) {
            return (kept, PlanPath::Graph { ef, post_filter: true });
        }
    }
    // Too few passed the post-filter (or no filter): the filtered walk.
    (ann.search_graph(query, knbn, ef.max(knbn), keep), PlanPath::Graph { ef, post_filter: false })
}

/// Exact cosine of each document's best chunk, for documents only the lexical list found.
pub(crate) fn cosines(ann: &Ann, query: &[f32], docs: &[u64]) -> std::collections::HashMap<u64, (f32, u32)> {
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
