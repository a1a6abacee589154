//! How a text query is matched: by meaning, by words or both. Its own module because both the
//! query ([`super::query`]) and the ranking ([`super::fuse`]) read it.

use crate::error::{Error, Result};

/// How a text query is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum SearchMode {
    /// By meaning: the query's embedding against the documents' (cosine).
    Semantic,
    /// By words: BM25 over the lexical index; quoted phrases and identifiers must match
    /// exactly (see [`crate::lexical`]).
    Lexical,
    /// Both rankings fused ([`crate::Fusion`]); the default.
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
