//! Search, the pure part: what is asked ([`query`]: text, [`Filter`], mode, limit), which way
//! the vector side goes ([`plan`]), how rankings are fused ([`fuse`]), and what comes back
//! ([`Hit`], [`Hits`]). [`crate::Collection::search`] carries it out over a collection's store
//! and indexes; [`crate::Index::search`] over several collections.

pub(crate) mod fuse;
pub(crate) mod plan;
pub mod query;

use crate::doc::Document;
pub use fuse::{Context, Fusion, Signals};
pub use plan::{Plan, PlanPath};
pub use query::{Filter, MAX_LIMIT, MAX_QUERY_BYTES, Query, SearchMode};

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
