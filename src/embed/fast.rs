//! The real embedder: a model of the manifest (multilingual-e5-small by default) through
//! fastembed and ONNX Runtime.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fastembed::{InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};

use super::{Embedder, normalize};
use crate::error::{Error, Result};
use crate::models::{self, Manifest, ModelFiles, ModelSpec};

/// Options of [`FastEmbedder`]. Every field documents its default.
#[derive(Debug, Clone)]
pub struct EmbedOptions {
    /// The model, by its name in the manifest (`multilingual-e5-small`, `all-minilm-l6-v2`).
    /// Default: `None`, the manifest's default model (multilingual-e5-small).
    pub model: Option<String>,
    /// Directory holding the model files. Default: `None`, search as described in
    /// [`crate::models`].
    pub model_dir: Option<PathBuf>,
    /// Texts per model call. Default: 16 (on 2 cores, `benches/embed` measured batches of 16
    /// at or near the top for every text length; 64 was slower for medium and long texts).
    pub batch_size: usize,
    /// Tokens read per text, special tokens and prefix included; longer texts are truncated
    /// (collections split them first). Default: 256 (MiniLM's training length; for
    /// multilingual-e5-small, which reads up to 512, `benches/embed` measured 512-token
    /// chunks at about half the speed per token on 2 cores).
    pub max_tokens: usize,
    /// ONNX Runtime intra-op threads. Default: `None`, one per available core.
    pub threads: Option<usize>,
    /// Sort texts by length before batching (less padding); results keep input order.
    /// Default: `true`.
    pub sort_by_length: bool,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        EmbedOptions {
            model: None,
            model_dir: None,
            batch_size: 16,
            max_tokens: 256,
            threads: None,
            sort_by_length: true,
        }
    }
}

impl EmbedOptions {
    /// Sets [`EmbedOptions::model`] (a name of the manifest).
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.model = Some(name.into());
        self
    }
    /// The model these options choose: [`EmbedOptions::model`], else the manifest's default.
    pub fn spec(&self) -> Result<&'static ModelSpec> {
        let manifest = Manifest::builtin();
        match &self.model {
            Some(name) => manifest.model(name),
            None => Ok(manifest.default_spec()),
        }
    }
    /// Sets [`EmbedOptions::max_tokens`] (at least 8).
    pub fn max_tokens(mut self, n: usize) -> Self {
        self.max_tokens = n.max(8);
        self
    }
    /// Sets [`EmbedOptions::model_dir`].
    pub fn model_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.model_dir = Some(dir.as_ref().to_path_buf());
        self
    }
    /// Sets [`EmbedOptions::batch_size`] (at least 1).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }
    /// Sets [`EmbedOptions::sort_by_length`].
    pub fn sort_by_length(mut self, on: bool) -> Self {
        self.sort_by_length = on;
        self
    }
    /// Sets [`EmbedOptions::threads`].
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = Some(n.max(1));
        self
    }
}

/// A model of the manifest on ONNX Runtime, offline. `Send + Sync`; calls are serialised on
/// one session (ONNX Runtime parallelises inside a call). Stored texts and queries get the
/// model's prefixes (`passage: ` and `query: ` for e5) before they are embedded.
pub struct FastEmbedder {
    model: Mutex<TextEmbedding>,
    /// A copy of the tokenizer without truncation or padding, for splitting long texts.
    splitter: tokenizers::Tokenizer,
    files: ModelFiles,
    options: EmbedOptions,
    spec: &'static ModelSpec,
    /// Tokens of the passage prefix.
    prefix_tokens: usize,
}

impl std::fmt::Debug for FastEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastEmbedder").field("files", &self.files).field("options", &self.options).finish()
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::io(path, e))
}

impl FastEmbedder {
    /// Loads the model with default options.
    pub fn new() -> Result<Self> {
        Self::with_options(EmbedOptions::default())
    }

    /// Loads the model: locates and verifies the files, loads ONNX Runtime, builds a session.
    pub fn with_options(options: EmbedOptions) -> Result<Self> {
        let spec = options.spec()?;
        let files = models::locate_model(options.model_dir.as_deref(), spec)?;
        let runtime_err = |reason: String| Error::Runtime { path: files.runtime.clone(), reason };
        // Loads the shared library once per process; later calls keep the first library.
        let _ = ort::init_from(&files.runtime).map_err(|e| runtime_err(e.to_string()))?;
        let tokenizer_files = TokenizerFiles {
            tokenizer_file: read(&files.tokenizer)?,
            config_file: read(&files.config)?,
            special_tokens_map_file: read(&files.special_tokens_map)?,
            tokenizer_config_file: read(&files.tokenizer_config)?,
        };
        let model = UserDefinedEmbeddingModel::new(read(&files.model)?, tokenizer_files).with_pooling(Pooling::Mean);
        let threads = options.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let init = InitOptionsUserDefined::new().with_max_length(options.max_tokens).with_intra_threads(threads);
        let model = TextEmbedding::try_new_from_user_defined(model, init).map_err(|e| runtime_err(e.to_string()))?;
        let mut splitter = model.tokenizer.clone();
        splitter.with_padding(None);
        splitter.with_truncation(None).map_err(|e| runtime_err(e.to_string()))?;
        let prefix_tokens = match spec.passage_prefix.trim() {
            "" => 0,
            p => splitter.encode(p, false).map_or(4, |e| e.len()),
        };
        Ok(FastEmbedder { model: Mutex::new(model), splitter, files, options, spec, prefix_tokens })
    }

    /// The model's entry in the manifest.
    pub fn spec(&self) -> &'static ModelSpec {
        self.spec
    }

    /// The files this embedder was loaded from.
    pub fn files(&self) -> &ModelFiles {
        &self.files
    }

    /// The options in force.
    pub fn options(&self) -> &EmbedOptions {
        &self.options
    }

    fn run_batch(&self, model: &mut TextEmbedding, batch: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut out = model.embed(batch, Some(batch.len())).map_err(|e| Error::Embed { reason: e.to_string() })?;
        for v in &mut out {
            if v.len() != self.spec.dimension {
                return Err(Error::DimensionMismatch { expected: self.spec.dimension, got: v.len() });
            }
            normalize(v);
        }
        Ok(out)
    }

    /// Embeds `texts`, each with `prefix`, in length-sorted batches; results in input order.
    fn embed_with(&self, prefix: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut order: Vec<usize> = (0..texts.len()).collect();
        if self.options.sort_by_length {
            order.sort_by_key(|&i| texts[i].len());
        }
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        let mut model = self.model.lock().unwrap_or_else(|e| e.into_inner());
        for idx in order.chunks(self.options.batch_size.max(1)) {
            let batch: Vec<String> = idx.iter().map(|&i| format!("{prefix}{}", texts[i])).collect();
            for (v, &i) in self.run_batch(&mut model, &batch)?.into_iter().zip(idx) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

impl Embedder for FastEmbedder {
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
        2 + self.prefix_tokens
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_with(&self.spec.passage_prefix, texts)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed_with(&self.spec.query_prefix, &[text])?.pop().unwrap_or_default())
    }

    fn token_offsets(&self, text: &str) -> Vec<(usize, usize)> {
        match self.splitter.encode(text, false) {
            Ok(enc) => enc.get_offsets().to_vec(),
            Err(_) => crate::text::chunk::word_offsets(text),
        }
    }
}
