//! Text → unit-length vectors.
//!
//! [`Embedder`] is the one seam between convdex and a model. [`FastEmbedder`] runs a real model
//! of the manifest (multilingual-e5-small by default, or all-MiniLM-L6-v2) on ONNX Runtime, fully
//! offline, with the model's own tokenizer ([`ModelTokenizer`], a Unigram vocabulary held
//! compactly), and [`LazyEmbedder`] loads it on first use (an
//! [`crate::Index`]'s default); [`HashEmbedder`] is a deterministic stand-in for fast unit tests
//! only. Stored texts and queries are embedded apart ([`Embedder::embed`],
//! [`Embedder::embed_query`]): models trained with instructions read them differently.

mod derived;
mod fast;
mod hash;
mod lazy;
mod onnx;
mod static_model;
mod tokenizer;
mod unigram;

pub use fast::{EmbedOptions, FastEmbedder, read_tokenizer};
pub use hash::HashEmbedder;
pub use lazy::LazyEmbedder;
#[cfg(any(test, feature = "testing"))]
pub(crate) use onnx::environment as onnx_environment;
pub use static_model::StaticEmbedder;
pub use tokenizer::{ModelTokenizer, TokenizerConfig};
pub use unigram::CompactUnigram;

use std::sync::Arc;

use crate::error::Result;
use crate::models::ModelKind;

/// Loads the model `options` choose, of whichever kind it is.
pub fn load(options: EmbedOptions) -> Result<Arc<dyn Embedder>> {
    Ok(match options.spec()?.kind {
        ModelKind::Onnx => Arc::new(FastEmbedder::with_options(options)?),
        ModelKind::Static => Arc::new(StaticEmbedder::with_options(options)?),
    })
}

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
    /// Embeds a batch of stored texts (passages).
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// Embeds one stored text.
    fn embed_one(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed(&[text])?.pop().unwrap_or_default())
    }
    /// Embeds a search query. Models trained with instructions (e5: `query: ` before a
    /// question, `passage: ` before a stored text) embed the two differently. Default: as a
    /// stored text.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        self.embed_one(text)
    }
    /// Embeds several search queries, as [`Embedder::embed_query`] embeds each; results in
    /// input order. Default: one at a time; a model that runs batches embeds them in one.
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        texts.iter().map(|t| self.embed_query(t)).collect()
    }
    /// Maximum number of tokens the model reads, special tokens and prefix included; longer
    /// texts are truncated, so callers split them first (see [`Embedder::token_offsets`]).
    fn max_tokens(&self) -> usize {
        256
    }
    /// Tokens of every text the model reads besides its content: special tokens and the
    /// passage prefix. A chunk holds at most `max_tokens() - overhead_tokens()` tokens.
    /// Default: 2.
    fn overhead_tokens(&self) -> usize {
        2
    }
    /// Byte offsets `(start, end)` of each model token in `text`, without special tokens.
    /// The default approximates a token as a whitespace-separated word.
    fn token_offsets(&self, text: &str) -> Vec<(usize, usize)> {
        crate::text::chunk::word_offsets(text)
    }
}

pub use crate::vector::{dot, normalize};
