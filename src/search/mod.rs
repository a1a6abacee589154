//! Search, the pure part: what is asked ([`query`]: text, [`Filter`], [`SearchMode`], limit), which way
//! the vector side goes ([`plan`]), how rankings are fused ([`fuse`]), and what comes back
//! ([`Hit`], [`Hits`]). [`crate::Collection::search`] carries it out over a collection's store
//! and indexes; [`crate::Index::search`] over several collections.

pub(crate) mod fields;
pub(crate) mod fuse;
mod mode;
pub(crate) mod plan;
pub mod query;
mod ranking;
mod tuned;

use crate::doc::Document;
pub(crate) use fuse::Background;
pub use fuse::POOL_DEPTH;
pub use plan::{Plan, PlanPath};
pub use query::{Filter, MAX_LIMIT, MAX_QUERY_BYTES, Query, SearchMode, asks_about_a_decision};
pub use ranking::{
    Context, DEFAULT_ANSWER, DEFAULT_BACKGROUND_PRIOR, DEFAULT_CLOSING, DEFAULT_DECISION_LIFT, DEFAULT_GLOSS,
    DEFAULT_LEADERS, DEFAULT_QUESTION, DEFAULT_TRANSLATION, Fusion, Ranking, Recency, Signals,
};
pub use tuned::answer_among;

/// One search result.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Hit {
    /// The document (a message once, whichever of its chunks matched).
    pub doc: Document,
    /// The ranking score: the cosine's distance above the background in standard deviations
    /// (semantic), the share of the query matched (lexical), their fusion with context
    /// (hybrid); see [`Ranking`]. Comparable across collections of one search.
    pub score: f32,
    /// The score as a person reads it, 0–100: roughly the percentage of hits shown with this
    /// relevance that answered the question on held-out evaluation sets. Read with a curve
    /// fitted for the collection's model and the search mode, from the signals before recency
    /// (recency reorders hits, it does not make them more relevant).
    pub relevance: u8,
    /// How many other messages of the same session with identical content were folded into
    /// this hit.
    pub folded: usize,
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
