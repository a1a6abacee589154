//! The real embedder: all-MiniLM-L6-v2 (int8 ONNX) through fastembed and ONNX Runtime.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fastembed::{InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};

use super::{Embedder, normalize};
use crate::error::{Error, Result};
use crate::models::{self, Manifest, ModelFiles};

/// Options of [`FastEmbedder`]. Every field documents its default.
#[derive(Debug, Clone)]
pub struct EmbedOptions {
    /// Directory holding the model files. Default: `None`, search as described in
    /// [`crate::models`].
    pub model_dir: Option<PathBuf>,
    /// Texts per model call. Default: 16 (on 2 cores, `benches/embed` measured batches of 16
    /// at or near the top for every text length; 64 was slower for medium and long texts).
    pub batch_size: usize,
    /// Tokens read per text; longer texts are truncated. Default: 256, the model's training
    /// length.
    pub max_tokens: usize,
    /// ONNX Runtime intra-op threads. Default: `None`, one per available core.
    pub threads: Option<usize>,
    /// Sort texts by length before batching (less padding); results keep input order.
    /// Default: `true`.
    pub sort_by_length: bool,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        EmbedOptions { model_dir: None, batch_size: 16, max_tokens: 256, threads: None, sort_by_length: true }
    }
}

impl EmbedOptions {
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

/// all-MiniLM-L6-v2 on ONNX Runtime, offline. `Send + Sync`; calls are serialised on one
/// session (ONNX Runtime parallelises inside a call).
pub struct FastEmbedder {
    model: Mutex<TextEmbedding>,
    /// A copy of the tokenizer without truncation or padding, for splitting long texts.
    splitter: tokenizers::Tokenizer,
    files: ModelFiles,
    options: EmbedOptions,
    model_id: String,
    dim: usize,
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
        let files = models::locate(options.model_dir.as_deref())?;
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
        let manifest = Manifest::builtin();
        Ok(FastEmbedder {
            model: Mutex::new(model),
            splitter,
            files,
            options,
            model_id: manifest.model_id.clone(),
            dim: manifest.dimension,
        })
    }

    /// The files this embedder was loaded from.
    pub fn files(&self) -> &ModelFiles {
        &self.files
    }

    /// The options in force.
    pub fn options(&self) -> &EmbedOptions {
        &self.options
    }

    fn run_batch(&self, model: &mut TextEmbedding, batch: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out = model.embed(batch, Some(batch.len())).map_err(|e| Error::Embed { reason: e.to_string() })?;
        for v in &mut out {
            if v.len() != self.dim {
                return Err(Error::DimensionMismatch { expected: self.dim, got: v.len() });
            }
            normalize(v);
        }
        Ok(out)
    }
}

impl Embedder for FastEmbedder {
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
        let mut order: Vec<usize> = (0..texts.len()).collect();
        if self.options.sort_by_length {
            order.sort_by_key(|&i| texts[i].len());
        }
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        let mut model = self.model.lock().unwrap_or_else(|e| e.into_inner());
        for idx in order.chunks(self.options.batch_size.max(1)) {
            let batch: Vec<&str> = idx.iter().map(|&i| texts[i]).collect();
            for (v, &i) in self.run_batch(&mut model, &batch)?.into_iter().zip(idx) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn token_offsets(&self, text: &str) -> Vec<(usize, usize)> {
        match self.splitter.encode(text, false) {
            Ok(enc) => enc.get_offsets().to_vec(),
            Err(_) => crate::text::chunk::word_offsets(text),
        }
    }
}
