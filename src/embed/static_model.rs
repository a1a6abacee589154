//! A static embedder (model2vec: potion-base-8M): one learned vector per token, a text's
//! vector is the mean of its tokens' vectors, normalised. No neural network runs, so it embeds
//! about two orders of magnitude faster than a transformer, for very large histories; it is
//! English only and weaker on meaning (docs/ranking.md, «Models»).

use std::path::Path;

use super::{EmbedOptions, Embedder, normalize};
use crate::error::{Error, Result};
use crate::models::{self, ModelSpec};

/// A model2vec static model: a tokenizer and a `[vocabulary, dim]` table of f32.
pub struct StaticEmbedder {
    tokenizer: tokenizers::Tokenizer,
    table: Vec<f32>,
    dim: usize,
    unk: Option<u32>,
    spec: &'static ModelSpec,
    options: EmbedOptions,
}

impl std::fmt::Debug for StaticEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticEmbedder").field("model", &self.spec.name).field("dim", &self.dim).finish()
    }
}

impl StaticEmbedder {
    /// Loads the static model `options` choose (its files located and verified as described in
    /// [`crate::models`]).
    pub fn with_options(options: EmbedOptions) -> Result<Self> {
        let spec = options.spec()?;
        let (tokenizer_path, table_path) = models::locate_static(options.model_dir.as_deref(), spec)?;
        let bad = |reason: String| Error::Runtime { path: table_path.clone(), reason };
        let mut tokenizer = tokenizers::Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| Error::Runtime { path: tokenizer_path.clone(), reason: e.to_string() })?;
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| bad(e.to_string()))?;
        let (table, rows, dim) = read_table(&table_path).map_err(bad)?;
        if dim != spec.dimension || rows < tokenizer.get_vocab_size(true) {
            return Err(Error::Runtime {
                path: table_path,
                reason: format!("table is {rows} × {dim}, the manifest says {} dimensions", spec.dimension),
            });
        }
        let unk = tokenizer.token_to_id("[UNK]");
        Ok(StaticEmbedder { tokenizer, table, dim, unk, spec, options })
    }

    /// The model's entry in the manifest.
    pub fn spec(&self) -> &'static ModelSpec {
        self.spec
    }

    fn embed_text(&self, text: &str) -> Result<Vec<f32>> {
        let enc = self.tokenizer.encode(text, false).map_err(|e| Error::Embed { reason: e.to_string() })?;
        let mut v = vec![0.0f32; self.dim];
        let mut n = 0usize;
        for &id in enc.get_ids().iter().filter(|&&id| Some(id) != self.unk).take(self.options.max_tokens) {
            let Some(row) = self.table.get(id as usize * self.dim..(id as usize + 1) * self.dim) else { continue };
            for (a, b) in v.iter_mut().zip(row) {
                *a += b;
            }
            n += 1;
        }
        if n > 0 {
            normalize(&mut v);
        }
        Ok(v)
    }
}

/// Reads the one f32 tensor of a safetensors file: (values, rows, columns).
fn read_table(path: &Path) -> std::result::Result<(Vec<f32>, usize, usize), String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let len = bytes.get(..8).ok_or("file shorter than its header")?;
    let len = u64::from_le_bytes(len.try_into().map_err(|_| "header length")?) as usize;
    let header = bytes.get(8..8usize.saturating_add(len)).ok_or("header runs past the end of the file")?;
    let header: serde_json::Value = serde_json::from_slice(header).map_err(|e| format!("header: {e}"))?;
    let (_, t) = header
        .as_object()
        .and_then(|o| o.iter().find(|(k, _)| k.as_str() != "__metadata__"))
        .ok_or("no tensor in the file")?;
    if t["dtype"] != "F32" {
        return Err(format!("tensor type {}, expected F32", t["dtype"]));
    }
    let shape: Vec<usize> =
        t["shape"].as_array().into_iter().flatten().filter_map(|x| x.as_u64()).map(|x| x as usize).collect();
    let offsets: Vec<usize> =
        t["data_offsets"].as_array().into_iter().flatten().filter_map(|x| x.as_u64()).map(|x| x as usize).collect();
    let (&[rows, cols], &[start, end]) = (shape.as_slice(), offsets.as_slice()) else {
        return Err("expected one 2-d tensor".into());
    };
    let data = bytes.get(8 + len + start..8 + len + end).ok_or("tensor data runs past the end of the file")?;
    if data.len() != rows * cols * 4 {
        return Err("tensor size differs from its shape".into());
    }
    Ok((data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(), rows, cols))
}

impl Embedder for StaticEmbedder {
    fn model_id(&self) -> &str {
        &self.spec.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn max_tokens(&self) -> usize {
        self.options.max_tokens
    }

    fn overhead_tokens(&self) -> usize {
        0
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        texts.iter().map(|t| self.embed_text(t)).collect()
    }

    fn token_offsets(&self, text: &str) -> Vec<(usize, usize)> {
        match self.tokenizer.encode(text, false) {
            Ok(enc) => enc.get_offsets().to_vec(),
            Err(_) => crate::text::chunk::word_offsets(text),
        }
    }
}
