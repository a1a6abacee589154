//! The real embedder: a model of the manifest (multilingual-e5-small by default) on ONNX
//! Runtime, tokenized by [`super::tokenizer`] and run by [`super::onnx`].

use crate::sync::Locked;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::derived::{Key, OPTIMIZED, TOKENIZER};
use super::onnx::{OnnxModel, SessionSettings};
use super::tokenizer::{ModelTokenizer, TokenizerConfig};
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
    /// At most this many tokens per model call, padding included (a batch of long texts holds
    /// fewer than [`EmbedOptions::batch_size`] texts): the model's working memory grows with
    /// the tokens of a call, so this bounds it. Token counts are estimated from byte lengths
    /// (at least one token per 3 bytes, capped at [`EmbedOptions::max_tokens`]). Default: 512
    /// (`benches/embed` on 2 cores: of 4,096, 2,048, 1,024 and 512 tokens per call, 512 was
    /// both the fastest and the smallest, for multilingual-e5-small and all-MiniLM-L6-v2).
    pub batch_tokens: usize,
    /// Let ONNX Runtime keep the memory of its largest call for later calls (its CPU arena).
    /// Default: `false`: without the arena the model's memory goes back after each call (with
    /// calls bounded by [`EmbedOptions::batch_tokens`] the arena measured no faster).
    pub memory_arena: bool,
    /// Save the model as ONNX Runtime optimised it, in ONNX Runtime's own format, and the
    /// tokenizer as convdex holds it, beside the model files the first time they are loaded
    /// (`model.optimized.ort` and `tokenizer.compact`, each checked against its source, and
    /// the graph against its runtime and CPU, and both for damage before each use), and start
    /// later processes from them: ONNX Runtime then reads the weights in place instead of
    /// parsing, copying and optimising the graph, and the tokenizer's 250,000 pieces are read
    /// back instead of parsed and hashed (`benches/embed`, part `load`). A directory that
    /// cannot be written is left alone. Default: `true`.
    pub optimized_cache: bool,
    /// Let ONNX Runtime's idle intra-op threads spin, waiting for work, instead of sleeping
    /// (ONNX Runtime's own default). Default: `false`: a spinning thread holds a core after
    /// each call, which on 2 cores is the core a search (or the collections read beside the
    /// model) needs next: cold CLI searches at 100k documents measured about 13 % faster
    /// without it (`benches/cold`), while bulk embedding measured about 10 % slower
    /// (`benches/embed`, part `spin`). The CLI turns it on for `index`, `import` and `migrate`.
    pub spin_wait: bool,
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
            batch_tokens: 512,
            memory_arena: false,
            optimized_cache: true,
            spin_wait: false,
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
    /// Sets [`EmbedOptions::batch_tokens`] (at least 1).
    pub fn batch_tokens(mut self, n: usize) -> Self {
        self.batch_tokens = n.max(1);
        self
    }
    /// Sets [`EmbedOptions::memory_arena`].
    pub fn memory_arena(mut self, on: bool) -> Self {
        self.memory_arena = on;
        self
    }
    /// Sets [`EmbedOptions::optimized_cache`].
    pub fn optimized_cache(mut self, on: bool) -> Self {
        self.optimized_cache = on;
        self
    }
    /// Sets [`EmbedOptions::spin_wait`].
    pub fn spin_wait(mut self, on: bool) -> Self {
        self.spin_wait = on;
        self
    }
    /// Sets [`EmbedOptions::threads`].
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = Some(n.max(1));
        self
    }
}

/// A model of the manifest on ONNX Runtime, offline. `Send + Sync`; batches are serialised on
/// one session (ONNX Runtime parallelises inside a batch), so concurrent calls interleave batch
/// by batch. Stored texts and queries get the
/// model's prefixes (`passage: ` and `query: ` for e5) before they are embedded.
pub struct FastEmbedder {
    model: Mutex<Loaded>,
    /// Queries waiting for the session: a long call lets them go first between its batches
    /// (a mutex alone would hand the session back to the call that just released it).
    queries_waiting: std::sync::atomic::AtomicUsize,
    files: ModelFiles,
    options: EmbedOptions,
    spec: &'static ModelSpec,
    /// Tokens of the passage prefix.
    prefix_tokens: usize,
}

/// The tokenizer and the session, used together under one lock.
struct Loaded {
    tokenizer: ModelTokenizer,
    onnx: OnnxModel,
}

impl std::fmt::Debug for FastEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastEmbedder").field("files", &self.files).field("options", &self.options).finish()
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::io(path, e))
}

/// Reads a model's tokenizer from its four files ([`ModelTokenizer::load`]) with calls
/// truncated at `max_tokens`; the error names the file that could not be read or used.
pub fn read_tokenizer(files: &ModelFiles, max_tokens: usize) -> Result<ModelTokenizer> {
    let tokenizer = read(&files.tokenizer)?;
    with_config(files, |config| ModelTokenizer::load(&tokenizer, config, max_tokens))
}

/// Runs `load` over the tokenizer's three small files, read; errors name `tokenizer.json`.
fn with_config(
    files: &ModelFiles,
    load: impl FnOnce(&TokenizerConfig<'_>) -> std::result::Result<ModelTokenizer, String>,
) -> Result<ModelTokenizer> {
    let config = read(&files.config)?;
    let (special_tokens_map, tokenizer_config) = (read(&files.special_tokens_map)?, read(&files.tokenizer_config)?);
    let config = TokenizerConfig {
        config: &config,
        special_tokens_map: &special_tokens_map,
        tokenizer_config: &tokenizer_config,
    };
    load(&config).map_err(|reason| Error::Runtime { path: files.tokenizer.clone(), reason })
}

/// The tokenizer of `spec`: from the saved compact tokenizer when there is a whole one for this
/// `tokenizer.json` ([`super::derived`]), else from `tokenizer.json`, verified as read (and then
/// saved compact, when `cache` is on and the directory can be written).
fn verified_tokenizer(files: &ModelFiles, spec: &ModelSpec, max_tokens: usize, cache: bool) -> Result<ModelTokenizer> {
    let sha = &spec.artefact("tokenizer").sha256;
    let key = cache.then(|| Key::tokenizer(sha, super::tokenizer::SAVED_MAGIC));
    if let Some((bytes, start)) = key.as_ref().and_then(|k| TOKENIZER.read(&files.dir, k)) {
        let saved = bytes.get(start..).unwrap_or_default();
        match with_config(files, |config| ModelTokenizer::load_saved(saved, config, max_tokens)) {
            Ok(tokenizer) => return Ok(tokenizer),
            // A whole file that does not read back (written by another version): replaced below.
            Err(_) => TOKENIZER.remove(&files.dir),
        }
    }
    let bytes = read(&files.tokenizer)?;
    models::verify_bytes(&files.tokenizer, &bytes, sha)?;
    let tokenizer = with_config(files, |config| ModelTokenizer::load(&bytes, config, max_tokens))?;
    // Only into a directory that can be written: `to_saved` reads `tokenizer.json` once more.
    if let Some(key) = key.filter(|_| TOKENIZER.scratch(&files.dir).is_some())
        && let Some(saved) = tokenizer.to_saved(&bytes)
    {
        // Best effort: the next process reads `tokenizer.json` again when this fails.
        let _ = TOKENIZER.store(&files.dir, &key, &saved, &files.tokenizer);
    }
    Ok(tokenizer)
}

/// The session of `spec`: from the saved optimised graph when there is a whole one for this
/// model, runtime and CPU ([`super::derived`]), else from `model.onnx`, verified as read (and
/// then saved optimised, when `cache` is on and the directory can be written).
fn session(files: &ModelFiles, spec: &ModelSpec, settings: SessionSettings<'_>, cache: bool) -> Result<OnnxModel> {
    let runtime_err = |reason: String| Error::Runtime { path: files.runtime.clone(), reason };
    let key = cache.then(|| Key::graph(&spec.artefact("model").sha256, models::runtime_identity(&files.runtime)));
    if let Some((bytes, start)) = key.as_ref().and_then(|k| OPTIMIZED.read(&files.dir, k)) {
        match OnnxModel::load_ort(settings, bytes, start) {
            Ok(model) => return Ok(model),
            // A graph this runtime cannot start: replaced from the model below.
            Err(_) => OPTIMIZED.remove(&files.dir),
        }
    }
    let bytes = read(&files.model)?;
    models::verify_bytes(&files.model, &bytes, &spec.artefact("model").sha256)?;
    let scratch = key.as_ref().and_then(|_| OPTIMIZED.scratch(&files.dir));
    let model = match OnnxModel::load(settings, &bytes, scratch.as_deref()) {
        Ok(model) => model,
        // Saving the optimised graph is an extra; a session that cannot save still runs.
        Err(_) if scratch.is_some() => OnnxModel::load(settings, &bytes, None).map_err(runtime_err)?,
        Err(reason) => return Err(runtime_err(reason)),
    };
    if let (Some(key), Some(saved)) = (key, scratch) {
        // Best effort: the next process starts from the model again when this fails.
        if let Ok(graph) = std::fs::read(&saved) {
            let _ = OPTIMIZED.store(&files.dir, &key, &graph, &files.model);
        }
    }
    Ok(model)
}

impl FastEmbedder {
    /// Loads the model with default options.
    pub fn new() -> Result<Self> {
        Self::with_options(EmbedOptions::default())
    }

    /// Loads the model: locates the files, verifies each as it is read, loads ONNX Runtime
    /// and builds a session on one thread while another reads the tokenizer.
    pub fn with_options(options: EmbedOptions) -> Result<Self> {
        let spec = options.spec()?;
        let files = models::locate_model_unverified(options.model_dir.as_deref(), spec)?;
        let threads = options.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let settings =
            SessionSettings { runtime: &files.runtime, threads, arena: options.memory_arena, spin: options.spin_wait };
        let (onnx, tokenizer) = std::thread::scope(|s| {
            let tokenizer = s.spawn(|| verified_tokenizer(&files, spec, options.max_tokens, options.optimized_cache));
            let onnx = session(&files, spec, settings, options.optimized_cache);
            (onnx, tokenizer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        });
        let mut model = Loaded { onnx: onnx?, tokenizer: tokenizer? };
        let prefix_tokens = match spec.passage_prefix.trim() {
            "" => 0,
            p => model.tokenizer.offsets(p).len(),
        };
        Ok(FastEmbedder {
            model: Mutex::new(model),
            queries_waiting: std::sync::atomic::AtomicUsize::new(0),
            files,
            options,
            spec,
            prefix_tokens,
        })
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

    fn run_batch(&self, model: &mut Loaded, batch: &[String]) -> Result<Vec<Vec<f32>>> {
        let embed_err = |reason: String| Error::Embed { reason };
        let encodings = model.tokenizer.encode_batch(batch).map_err(|e| embed_err(e.to_string()))?;
        let mut out = model.onnx.embed(&encodings).map_err(embed_err)?;
        for v in &mut out {
            if v.len() != self.spec.dimension {
                return Err(Error::DimensionMismatch { expected: self.spec.dimension, got: v.len() });
            }
            normalize(v);
        }
        Ok(out)
    }

    /// Embeds `texts`, each with `prefix`, in length-sorted batches; results in input order.
    /// Queries (`query`) go before the next batch of a call that embeds stored texts.
    fn embed_with(&self, prefix: &str, texts: &[&str], query: bool) -> Result<Vec<Vec<f32>>> {
        use std::sync::atomic::Ordering;
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut order: Vec<usize> = (0..texts.len()).collect();
        if self.options.sort_by_length {
            order.sort_by_key(|&i| texts[i].len());
        }
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        let estimate = |i: usize| (texts[i].len() / 3 + self.overhead_tokens()).clamp(1, self.options.max_tokens);
        let batches = batches(&order, estimate, self.options.batch_size.max(1), self.options.batch_tokens.max(1));
        for idx in batches {
            let batch: Vec<String> = idx.iter().map(|&i| format!("{prefix}{}", texts[i])).collect();
            // The session is taken per batch, not per call: a query embedded while a long
            // indexing call runs (a search served by the indexing process) waits for one batch
            // at most, not for the whole call.
            let mut model = if query {
                self.queries_waiting.fetch_add(1, Ordering::SeqCst);
                let m = self.model.locked();
                self.queries_waiting.fetch_sub(1, Ordering::SeqCst);
                m
            } else {
                let start = std::time::Instant::now();
                while self.queries_waiting.load(Ordering::SeqCst) > 0 && start.elapsed().as_secs() < 5 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                self.model.locked()
            };
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
        self.embed_with(&self.spec.passage_prefix, texts, false)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed_with(&self.spec.query_prefix, &[text], true)?.pop().unwrap_or_default())
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_with(&self.spec.query_prefix, texts, true)
    }

    fn token_offsets(&self, text: &str) -> Vec<(usize, usize)> {
        let mut model = self.model.locked();
        let offsets = model.tokenizer.offsets(text);
        if offsets.is_empty() && !text.trim().is_empty() { crate::text::chunk::word_offsets(text) } else { offsets }
    }
}

/// Splits `order` into consecutive batches of at most `max_texts` texts whose padded size
/// (texts × the longest one's estimated tokens) stays within `max_tokens` (a text longer than
/// that goes alone).
fn batches(order: &[usize], tokens: impl Fn(usize) -> usize, max_texts: usize, max_tokens: usize) -> Vec<&[usize]> {
    let mut out = Vec::new();
    let (mut start, mut longest) = (0, 0);
    for (k, &i) in order.iter().enumerate() {
        let longer = longest.max(tokens(i));
        let n = k - start;
        if n > 0 && (n + 1 > max_texts || (n + 1) * longer > max_tokens) {
            out.push(&order[start..k]);
            start = k;
            longest = tokens(i);
        } else {
            longest = longer;
        }
    }
    if start < order.len() {
        out.push(&order[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::batches;

    #[test]
    fn batches_keep_order_and_bound_texts_and_padded_tokens() {
        let lens = [3usize, 5, 5, 9, 100, 100, 100, 400, 1000];
        let order: Vec<usize> = (0..lens.len()).collect();
        let got = batches(&order, |i| lens[i], 4, 300);
        let flat: Vec<usize> = got.iter().flat_map(|b| b.iter().copied()).collect();
        assert_eq!(flat, order, "every text once, in order");
        for b in &got {
            let longest = b.iter().map(|&i| lens[i]).max().unwrap();
            assert!(b.len() <= 4);
            assert!(b.len() == 1 || b.len() * longest <= 300, "{b:?}");
        }
        assert_eq!(got, vec![&[0, 1, 2, 3][..], &[4, 5, 6][..], &[7][..], &[8][..]]);
        assert!(batches(&[], |_| 1, 4, 300).is_empty());
    }
}
