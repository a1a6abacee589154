//! The planner (pure): which way the vector side of a search goes. Candidates come from the
//! filter's secondary indexes; at most `exact_threshold` of them (or a small share of the
//! collection) are scanned exactly (recall 1); otherwise the HNSW graph is walked, unfiltered
//! with over-fetching when most documents pass, or with the filter applied during traversal.
//! [`crate::Collection`] carries out the [`Route`] chosen here.

use crate::search::query::SearchMode;

/// Which path a search took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// Documents of the collection still waiting for their vectors (indexed by words first):
    /// semantic search did not see them. 0 once indexing has finished.
    pub unembedded: usize,
}

/// What the planner knows about a search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shape {
    /// Whether a filter restricts the candidates.
    pub(crate) filtered: bool,
    /// How many candidates pass it (all documents without a filter).
    pub(crate) candidates: usize,
    /// Their share of the collection.
    pub(crate) selectivity: f32,
    /// Documents wanted from the vector side.
    pub(crate) want: usize,
    /// `Some(true)` forces the exact scan, `Some(false)` the graph.
    pub(crate) exact: Option<bool>,
    /// Candidate list size for the graph walk, when forced.
    pub(crate) ef: Option<usize>,
    /// Whether the graph can be walked (false while a persisted one is still loading).
    pub(crate) graph_ready: bool,
}

/// The planner's settings (from [`crate::CollectionOptions`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Settings {
    pub(crate) exact_threshold: usize,
    pub(crate) exact_fraction: f32,
    pub(crate) ef_search: usize,
}

/// How the vector side runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Route {
    /// Scan the candidates' vectors, keep the best `want` documents.
    Exact,
    /// Walk the graph unfiltered for `over` vectors and keep the candidates; if fewer than the
    /// wanted documents pass, walk it filtered for `knbn`. The candidate list is at least `ef`.
    PostFilter { over: usize, knbn: usize, ef: usize },
    /// Walk the graph with the filter (if any) applied during traversal, for `knbn` vectors;
    /// the candidate list is at least `ef`.
    Filtered { knbn: usize, ef: usize },
}

/// Chooses the route (see the module documentation).
pub(crate) fn decide(s: Shape, cfg: Settings) -> Route {
    let exact = !s.graph_ready
        || s.exact.unwrap_or(s.candidates <= cfg.exact_threshold || (s.filtered && s.selectivity < cfg.exact_fraction));
    if exact {
        return Route::Exact;
    }
    let base_ef = cfg.ef_search.max(s.want * 2);
    let ef = s.ef.unwrap_or_else(|| {
        if !s.filtered {
            base_ef
        } else {
            // Fewer passing nodes per visited node: widen the walk as selectivity drops.
            ((base_ef as f32 / s.selectivity.max(1e-3).sqrt()) as usize).clamp(base_ef, 2000)
        }
    });
    // Documents have up to 256 chunks: ask for more vectors than documents wanted.
    let knbn = s.want * 3;
    // Most documents pass: an unfiltered walk that over-fetches is cheaper than a filtered walk,
    // which cannot stop early.
    if s.filtered && s.selectivity >= cfg.exact_fraction.min(0.5) {
        let over = (knbn as f32 * 1.5 / s.selectivity) as usize + 10;
        return Route::PostFilter { over, knbn, ef };
    }
    Route::Filtered { knbn, ef }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: Settings = Settings { exact_threshold: 2048, exact_fraction: 0.12, ef_search: 64 };

    fn shape(candidates: usize, total: usize, filtered: bool) -> Shape {
        Shape {
            filtered,
            candidates,
            selectivity: candidates as f32 / total as f32,
            want: 10,
            exact: None,
            ef: None,
            graph_ready: true,
        }
    }

    #[test]
    fn routes_by_candidates_and_selectivity() {
        // (candidates, total, filtered) -> route
        let table = [
            ((1_000, 1_000, false), Route::Exact), // small collection
            ((100_000, 100_000, false), Route::Filtered { knbn: 30, ef: 64 }),
            ((100, 100_000, true), Route::Exact),    // few candidates
            ((10_000, 100_000, true), Route::Exact), // 10 % < 12 %
            ((50_000, 100_000, true), Route::PostFilter { over: 100, knbn: 30, ef: 90 }),
            ((20_000, 100_000, true), Route::PostFilter { over: 235, knbn: 30, ef: 143 }),
        ];
        for ((c, t, f), want) in table {
            assert_eq!(decide(shape(c, t, f), CFG), want, "{c} of {t}, filtered {f}");
        }
    }

    #[test]
    fn overrides_and_a_loading_graph() {
        let big = shape(100_000, 100_000, false);
        assert_eq!(decide(Shape { exact: Some(true), ..big }, CFG), Route::Exact);
        assert_eq!(decide(Shape { graph_ready: false, ..big }, CFG), Route::Exact, "exact until the graph is in");
        let few = shape(100, 100_000, true);
        assert_eq!(decide(Shape { exact: Some(false), ..few }, CFG), Route::Filtered { knbn: 30, ef: 2000 });
        assert_eq!(decide(Shape { ef: Some(500), ..big }, CFG), Route::Filtered { knbn: 30, ef: 500 });
    }
}
