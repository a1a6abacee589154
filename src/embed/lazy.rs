//! The default embedder of an [`crate::Index`]: the real model, loaded on first use.

use std::sync::{Arc, Mutex};

use super::{EmbedOptions, Embedder, FastEmbedder};
use crate::error::Result;
use crate::models::Manifest;

/// [`FastEmbedder`] loaded when a text is first embedded or split, not before: a process that
/// only reads (lexical search, decisions, blame, handoff, stats) never verifies the model files
/// or starts ONNX Runtime. Its id and dimension come from the built-in manifest, so collections
/// open and check their model without loading it. A model that cannot be loaded is reported by
/// the first call that needs it (the same error [`FastEmbedder::with_options`] returns), and
/// by every later one.
pub struct LazyEmbedder {
    options: EmbedOptions,
    model_id: String,
    dim: usize,
    loaded: Mutex<Option<Arc<FastEmbedder>>>,
}

impl std::fmt::Debug for LazyEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyEmbedder").field("model_id", &self.model_id).field("loaded", &self.is_loaded()).finish()
    }
}

impl LazyEmbedder {
    /// An embedder that loads the model with `options` on first use.
    pub fn new(options: EmbedOptions) -> Self {
        let manifest = Manifest::builtin();
        LazyEmbedder { options, model_id: manifest.model_id.clone(), dim: manifest.dimension, loaded: Mutex::new(None) }
    }

    /// Whether the model has been loaded.
    pub fn is_loaded(&self) -> bool {
        self.loaded.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// The loaded model, loading it now if needed.
    pub fn model(&self) -> Result<Arc<FastEmbedder>> {
        let mut slot = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = slot.as_ref() {
            return Ok(m.clone());
        }
        let m = Arc::new(FastEmbedder::with_options(self.options.clone())?);
        *slot = Some(m.clone());
        Ok(m)
    }
}

impl Embedder for LazyEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn max_tokens(&self) -> usize {
        self.options.max_tokens
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.model()?.embed(texts)
    }

    fn token_offsets(&self, text: &str) -> Vec<(usize, usize)> {
        match self.model() {
            Ok(m) => m.token_offsets(text),
            // Nothing will be embedded either: the embedding call reports why.
            Err(_) => crate::text::chunk::word_offsets(text),
        }
    }
}
