//! Text → unit-length vectors.
//!
//! [`Embedder`] is the one seam between convdex and a model. [`FastEmbedder`] runs the real
//! all-MiniLM-L6-v2 (int8 ONNX) through fastembed and ONNX Runtime, fully offline, and
//! [`LazyEmbedder`] loads it on first use (an [`crate::Index`]'s default);
//! [`HashEmbedder`] is a deterministic stand-in for fast unit tests only.

mod fast;
mod hash;
mod lazy;

pub use fast::{EmbedOptions, FastEmbedder};
pub use hash::HashEmbedder;
pub use lazy::LazyEmbedder;

use crate::error::Result;

/// Turns texts into unit-length vectors of a fixed dimension.
///
/// Implementations must return one vector per input, in input order, each of length
/// [`dim`](Embedder::dim) and L2 norm 1 (an all-zero input embedding is returned as is).
pub trait Embedder: Send + Sync {
    /// Identifier stored in every collection built with this embedder; opening a collection
    /// with an embedder of another id is an error.
    fn model_id(&self) -> &str;
    /// Output dimension.
    fn dim(&self) -> usize;
    /// Embeds a batch.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// Embeds one text.
    fn embed_one(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed(&[text])?.pop().unwrap_or_default())
    }
    /// Maximum number of tokens the model reads; longer texts are truncated, so callers split
    /// them first (see [`Embedder::token_offsets`]).
    fn max_tokens(&self) -> usize {
        256
    }
    /// Byte offsets `(start, end)` of each model token in `text`, without special tokens.
    /// The default approximates a token as a whitespace-separated word.
    fn token_offsets(&self, text: &str) -> Vec<(usize, usize)> {
        crate::text::chunk::word_offsets(text)
    }
}

pub use crate::vector::{dot, normalize};
