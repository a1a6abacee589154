//! The default embedder of an [`crate::Index`]: the real model, loaded on first use.

use crate::sync::Locked;
use std::sync::{Arc, Mutex};

use super::{EmbedOptions, Embedder};
use crate::error::Result;
use crate::models::ModelSpec;

/// The model [`EmbedOptions`] choose ([`super::FastEmbedder`] or [`super::StaticEmbedder`])
/// loaded when a text is first embedded or split, not before: a process that
/// only reads (lexical search, decisions, blame, handoff, stats) never verifies the model files
/// or starts ONNX Runtime. Its id and dimension come from the built-in manifest, so collections
/// open and check their model without loading it. A model that cannot be loaded is reported by
/// the first call that needs it (the same error [`super::load`] returns), and
/// by every later one.
pub struct LazyEmbedder {
    options: EmbedOptions,
    spec: &'static ModelSpec,
    loaded: Mutex<Option<Arc<dyn Embedder>>>,
}

impl std::fmt::Debug for LazyEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyEmbedder").field("model_id", &self.spec.id).field("loaded", &self.is_loaded()).finish()
    }
}

impl LazyEmbedder {
    /// An embedder that loads the model `options` choose ([`EmbedOptions::model`]) on first
    /// use. An unknown model name is an error now, not at the first embedding.
    pub fn new(options: EmbedOptions) -> Result<Self> {
        let spec = options.spec()?;
        Ok(LazyEmbedder { options, spec, loaded: Mutex::new(None) })
    }

    /// The model's entry in the manifest.
    pub fn spec(&self) -> &'static ModelSpec {
        self.spec
    }

    /// Whether the model has been loaded.
    pub fn is_loaded(&self) -> bool {
        self.loaded.locked().is_some()
    }

    /// The loaded model, loading it now if needed.
    pub fn model(&self) -> Result<Arc<dyn Embedder>> {
        let mut slot = self.loaded.locked();
        if let Some(m) = slot.as_ref() {
            return Ok(m.clone());
        }
        let m = super::load(self.options.clone())?;
        *slot = Some(m.clone());
        Ok(m)
    }
}

impl Embedder for LazyEmbedder {
    fn model_id(&self) -> &str {
        &self.spec.id
    }

    fn dim(&self) -> usize {
        self.spec.dimension
    }

    fn max_tokens(&self) -> usize {
        self.options.max_tokens
    }

    fn overhead_tokens(&self) -> usize {
        match self.model() {
            Ok(m) => m.overhead_tokens(),
            Err(_) => 2,
        }
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        self.model()?.embed_query(text)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.model()?.embed_queries(texts)
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
