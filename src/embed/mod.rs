//! Text → unit-length vectors.
//!
//! [`Embedder`] is the one seam between convdex and a model. [`FastEmbedder`] runs the real
//! all-MiniLM-L6-v2 (int8 ONNX) through fastembed and ONNX Runtime, fully offline;
//! [`HashEmbedder`] is a deterministic stand-in for fast unit tests only.

mod fast;
mod hash;

pub use fast::{EmbedOptions, FastEmbedder};
pub use hash::HashEmbedder;

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
        word_offsets(text)
    }
}

/// Whitespace word spans, the fallback tokenisation.
pub(crate) fn word_offsets(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// Scales `v` to unit length in place (leaves an all-zero vector alone).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Dot product; equals cosine similarity for unit vectors.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Four accumulators let the compiler vectorise without fast-math.
    let mut acc = [0.0f32; 8];
    let chunks = a.len() / 8;
    for i in 0..chunks {
        for j in 0..8 {
            acc[j] += a[i * 8 + j] * b[i * 8 + j];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for i in chunks * 8..a.len() {
        s += a[i] * b[i];
    }
    s
}

#[cfg(test)]
#[allow(clippy::string_slice)] // test code: a bad offset fails the test
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive() {
        let a: Vec<f32> = (0..389).map(|i| (i as f32).sin()).collect();
        let b: Vec<f32> = (0..389).map(|i| (i as f32 * 0.3).cos()).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-3);
    }

    #[test]
    fn word_offsets_cover_words() {
        let t = "  hello  wide\tworld ";
        let w: Vec<&str> = word_offsets(t).iter().map(|&(s, e)| &t[s..e]).collect();
        assert_eq!(w, ["hello", "wide", "world"]);
    }
}
