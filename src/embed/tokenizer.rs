//! A model's tokenizer, loaded from its `tokenizer.json` the way fastembed loads it (padding to
//! the longest text of a call, truncation, the special tokens of `special_tokens_map.json`),
//! with one difference: a Unigram vocabulary is held compactly ([`CompactUnigram`]).
//! Normalisation, pre-tokenisation, special tokens, offsets and post-processing are the
//! `tokenizers` crate's own. A compact tokenizer can be saved as bytes and read back without
//! parsing `tokenizer.json` or hashing its pieces again ([`ModelTokenizer::to_saved`]).

use serde::Deserialize;
use tokenizers::decoders::DecoderWrapper;
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::processors::PostProcessorWrapper;
use tokenizers::{AddedToken, Encoding, PaddingParams, PaddingStrategy, TokenizerImpl, TruncationParams};

use super::unigram::CompactUnigram;

type Pipeline<M> = TokenizerImpl<M, NormalizerWrapper, PreTokenizerWrapper, PostProcessorWrapper, DecoderWrapper>;

/// A model's tokenizer: a Unigram vocabulary compact, any other model as `tokenizers` builds it.
pub enum ModelTokenizer {
    /// A Unigram vocabulary ([`CompactUnigram`]).
    Compact(Box<Pipeline<CompactUnigram>>),
    /// WordPiece, BPE or WordLevel, as the `tokenizers` crate holds them.
    Other(Box<tokenizers::Tokenizer>),
}

impl std::fmt::Debug for ModelTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ModelTokenizer::Compact(_) => "ModelTokenizer::Compact",
            ModelTokenizer::Other(_) => "ModelTokenizer::Other",
        })
    }
}

/// Runs `$body` with `$t` bound to the pipeline, whichever its model.
macro_rules! each {
    ($self:expr, $t:ident => $body:expr) => {
        match $self {
            ModelTokenizer::Compact($t) => $body,
            ModelTokenizer::Other($t) => $body,
        }
    };
}

/// The three small files that configure a tokenizer: `config.json`, `special_tokens_map.json`
/// and `tokenizer_config.json`, as bytes.
pub struct TokenizerConfig<'a> {
    /// `config.json` (its `pad_token_id`).
    pub config: &'a [u8],
    /// `special_tokens_map.json`.
    pub special_tokens_map: &'a [u8],
    /// `tokenizer_config.json` (`model_max_length`, `pad_token`).
    pub tokenizer_config: &'a [u8],
}

/// What `tokenizer.json` holds besides its model, read as it is written.
#[derive(Deserialize)]
struct FileParts {
    version: Option<serde_json::Value>,
    truncation: Option<serde_json::Value>,
    padding: Option<serde_json::Value>,
    normalizer: Option<serde_json::Value>,
    pre_tokenizer: Option<serde_json::Value>,
    post_processor: Option<serde_json::Value>,
    decoder: Option<serde_json::Value>,
    #[serde(default)]
    added_tokens: Vec<AddedToken>,
}

/// The first bytes of [`ModelTokenizer::to_saved`]'s output, naming its layout (this file's and
/// [`CompactUnigram::to_bytes`]'s): a change to either changes the number, and a file saved in
/// another layout is neither read nor used (its derived file's key holds these bytes too).
pub(crate) const SAVED_MAGIC: &[u8; 12] = b"convdex-tok1";

fn bad(e: &dyn std::fmt::Display) -> String {
    format!("tokenizer.json cannot be read as a tokenizer: {e}")
}

impl ModelTokenizer {
    /// Loads a tokenizer from `tokenizer.json` that pads each call to its longest text and
    /// truncates at `max_tokens` (or the model's own limit when lower), with the special tokens
    /// of `special_tokens_map.json`: what fastembed's `load_tokenizer` builds. Errors say which
    /// file is wrong.
    pub fn load(tokenizer: &[u8], config: &TokenizerConfig<'_>, max_tokens: usize) -> Result<ModelTokenizer, String> {
        // A Unigram vocabulary is held compactly; any other model, or a vocabulary the compact
        // form cannot hold (two pieces sharing a hash), as `tokenizers` builds it.
        let t = match serde_json::from_slice(tokenizer) {
            Ok(compact) => ModelTokenizer::Compact(Box::new(compact)),
            Err(_) => {
                ModelTokenizer::Other(Box::new(tokenizers::Tokenizer::from_bytes(tokenizer).map_err(|e| bad(&e))?))
            }
        };
        t.configure(config, max_tokens)
    }

    /// The compact tokenizer loaded from `tokenizer.json`, as bytes that
    /// [`ModelTokenizer::load_saved`] reads back without parsing or hashing the vocabulary
    /// again: `tokenizer.json` without its vocabulary, its added tokens, and the vocabulary as
    /// [`CompactUnigram::to_bytes`] writes it. `None` for a tokenizer that is not
    /// [`ModelTokenizer::Compact`] or a `tokenizer.json` that is not the one it was loaded from.
    pub fn to_saved(&self, tokenizer: &[u8]) -> Option<Vec<u8>> {
        let ModelTokenizer::Compact(p) = self else { return None };
        let rest: FileParts = serde_json::from_slice(tokenizer).ok()?;
        let mut pipeline = serde_json::Map::new();
        for (name, value) in [
            ("version", rest.version),
            ("truncation", rest.truncation),
            ("padding", rest.padding),
            ("normalizer", rest.normalizer),
            ("pre_tokenizer", rest.pre_tokenizer),
            ("post_processor", rest.post_processor),
            ("decoder", rest.decoder),
        ] {
            pipeline.insert(name.into(), value.unwrap_or_default());
        }
        // A one-piece model in its place, replaced by the saved vocabulary when read back.
        pipeline.insert(
            "model".into(),
            serde_json::json!({"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]], "byte_fallback": false}),
        );
        let parts = [
            serde_json::to_vec(&pipeline).ok()?,
            serde_json::to_vec(&rest.added_tokens).ok()?,
            p.get_model().to_bytes(),
        ];
        let mut out = SAVED_MAGIC.to_vec();
        for part in &parts {
            out.extend_from_slice(&u32::try_from(part.len()).ok()?.to_le_bytes());
            out.extend_from_slice(part);
        }
        Some(out)
    }

    /// A tokenizer from [`ModelTokenizer::to_saved`]'s bytes, configured as
    /// [`ModelTokenizer::load`] configures one. Errors when the bytes are not such a tokenizer.
    pub fn load_saved(saved: &[u8], config: &TokenizerConfig<'_>, max_tokens: usize) -> Result<ModelTokenizer, String> {
        let parts = saved_parts(saved).ok_or("not a tokenizer saved by convdex (cut short or another version)")?;
        let [pipeline, added, vocab] = parts;
        let mut p: Pipeline<CompactUnigram> = serde_json::from_slice(pipeline).map_err(|e| bad(&e))?;
        let added: Vec<AddedToken> = serde_json::from_slice(added).map_err(|e| bad(&e))?;
        p.with_model(CompactUnigram::from_bytes(vocab).ok_or("a saved vocabulary that does not read back")?);
        // Added after the model, as `tokenizers` adds them when it reads `tokenizer.json`.
        p.add_tokens(added).map_err(|e| bad(&e))?;
        ModelTokenizer::Compact(Box::new(p)).configure(config, max_tokens)
    }

    /// Padding, truncation and special tokens as fastembed sets them.
    fn configure(mut self, files: &TokenizerConfig<'_>, max_tokens: usize) -> Result<ModelTokenizer, String> {
        let json = |what: &str, bytes: &[u8]| {
            serde_json::from_slice::<serde_json::Value>(bytes).map_err(|e| format!("{what} is not valid JSON: {e}"))
        };
        let config = json("config.json", files.config)?;
        let specials = json("special_tokens_map.json", files.special_tokens_map)?;
        let tokenizer_config = json("tokenizer_config.json", files.tokenizer_config)?;
        let model_max = tokenizer_config["model_max_length"]
            .as_f64()
            .ok_or("tokenizer_config.json has no numeric `model_max_length`")?;
        let max_length = max_tokens.min(model_max as f32 as usize);
        let pad = &tokenizer_config["pad_token"];
        let pad_token: String =
            pad.as_str().or_else(|| pad["content"].as_str()).ok_or("tokenizer_config.json has no `pad_token`")?.into();
        let pad_id =
            config["pad_token_id"].as_u64().map(|id| id as u32).or_else(|| self.token_to_id(&pad_token)).unwrap_or(0);
        each!(&mut self, p => {
            p.with_padding(Some(PaddingParams {
                strategy: PaddingStrategy::BatchLongest,
                pad_token,
                pad_id,
                ..Default::default()
            }));
            p.with_truncation(Some(TruncationParams { max_length, ..Default::default() })).map_err(|e| bad(&e))?;
            for token in special_tokens(&specials) {
                p.add_special_tokens([token]).map_err(|e| bad(&e))?;
            }
        });
        Ok(self)
    }

    /// The id of a piece or added token.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        each!(self, p => p.token_to_id(token))
    }

    /// Encodes texts as one call: special tokens added, truncated, padded to the longest.
    pub fn encode_batch(&self, texts: &[String]) -> tokenizers::Result<Vec<Encoding>> {
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        each!(self, p => p.encode_batch(inputs, true))
    }

    /// Encodes `text` whole: no special tokens, no truncation, no padding (byte offsets).
    pub fn encode_whole(&mut self, text: &str) -> tokenizers::Result<Encoding> {
        each!(self, p => {
            let truncation = p.get_truncation().cloned();
            let padding = p.get_padding().cloned();
            p.with_padding(None);
            let _ = p.with_truncation(None);
            let out = p.encode(text, false);
            p.with_padding(padding);
            // Restoring settings it had cannot fail (they were accepted once).
            let _ = p.with_truncation(truncation);
            out
        })
    }

    /// Byte offsets of every token of `text` ([`ModelTokenizer::encode_whole`]; none when it
    /// cannot be encoded).
    pub fn offsets(&mut self, text: &str) -> Vec<(usize, usize)> {
        self.encode_whole(text).map(|e| e.get_offsets().to_vec()).unwrap_or_default()
    }
}

/// The special tokens of `special_tokens_map.json`: plain strings, or objects with all of
/// `content`, `single_word`, `lstrip`, `rstrip` and `normalized` (others are left out, as
/// fastembed leaves them).
fn special_tokens(map: &serde_json::Value) -> Vec<AddedToken> {
    let Some(map) = map.as_object() else { return Vec::new() };
    map.values()
        .filter_map(|v| {
            if let Some(content) = v.as_str() {
                return Some(AddedToken { content: content.into(), special: true, ..Default::default() });
            }
            Some(AddedToken {
                content: v["content"].as_str()?.into(),
                special: true,
                single_word: v["single_word"].as_bool()?,
                lstrip: v["lstrip"].as_bool()?,
                rstrip: v["rstrip"].as_bool()?,
                normalized: v["normalized"].as_bool()?,
            })
        })
        .collect()
}

/// The three parts of [`ModelTokenizer::to_saved`]'s bytes, each after its length.
fn saved_parts(saved: &[u8]) -> Option<[&[u8]; 3]> {
    let mut rest = saved.strip_prefix(SAVED_MAGIC.as_slice())?;
    let mut part = || {
        let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        let (part, after) = (rest.get(4..4usize.checked_add(len)?)?, rest.get(4 + len..)?);
        rest = after;
        Some(part)
    };
    let parts = [part()?, part()?, part()?];
    rest.is_empty().then_some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small Unigram `tokenizer.json` in e5's shape: Metaspace pre-tokenizer, an added token
    /// beyond the vocabulary (`<mask>`, as e5's is).
    const UNIGRAM: &str = r#"{
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [
            {"id": 0, "content": "<unk>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
            {"id": 9, "content": "<mask>", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true}
        ],
        "normalizer": null,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
        "post_processor": null, "decoder": null,
        "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": false, "vocab": [
            ["<unk>", 0.0], ["▁", -1.0], ["a", -1.5], ["b", -2.0], ["ab", -2.5], ["▁ab", -2.0],
            ["世界", -3.0], ["界", -3.5], ["▁世", -4.0]
        ]}
    }"#;

    fn config() -> TokenizerConfig<'static> {
        TokenizerConfig {
            config: br#"{"pad_token_id": 0}"#,
            special_tokens_map: br#"{"unk_token": "<unk>", "mask_token": "<mask>"}"#,
            tokenizer_config: br#"{"model_max_length": 512, "pad_token": "<unk>"}"#,
        }
    }

    /// Each text's ids and offsets.
    type Encoded = Vec<(Vec<u32>, Vec<(usize, usize)>)>;

    fn encoded(t: &mut ModelTokenizer, texts: &[&str]) -> Encoded {
        let batch: Vec<String> = texts.iter().map(|s| s.to_string()).collect();
        let mut out: Vec<_> =
            t.encode_batch(&batch).unwrap().iter().map(|e| (e.get_ids().to_vec(), e.get_offsets().to_vec())).collect();
        out.extend(texts.iter().map(|s| {
            let e = t.encode_whole(s).unwrap();
            (e.get_ids().to_vec(), e.get_offsets().to_vec())
        }));
        out
    }

    #[test]
    fn a_saved_compact_tokenizer_encodes_as_the_one_loaded_from_tokenizer_json() {
        let texts = ["ab ab", "a <mask> b", "世界 ab界", "zz 世", "", "<mask>"];
        let mut loaded = ModelTokenizer::load(UNIGRAM.as_bytes(), &config(), 16).unwrap();
        let saved = loaded.to_saved(UNIGRAM.as_bytes()).unwrap();
        assert!(saved.len() < UNIGRAM.len() * 2);
        let mut back = ModelTokenizer::load_saved(&saved, &config(), 16).unwrap();
        assert_eq!(back.token_to_id("<mask>"), Some(9));
        assert_eq!(encoded(&mut back, &texts), encoded(&mut loaded, &texts));
        // Damaged or foreign bytes are an error, never a panic.
        for n in [0, 5, 12, 20, saved.len() / 2, saved.len() - 1] {
            assert!(ModelTokenizer::load_saved(&saved[..n], &config(), 16).is_err(), "cut at {n}");
        }
        assert!(ModelTokenizer::load_saved(UNIGRAM.as_bytes(), &config(), 16).is_err());
    }

    #[test]
    fn only_a_compact_tokenizer_is_saved() {
        let word_level = r#"{"version": "1.0", "added_tokens": [], "normalizer": null,
            "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null, "decoder": null,
            "model": {"type": "WordLevel", "vocab": {"<unk>": 0, "a": 1}, "unk_token": "<unk>"}}"#;
        let t = ModelTokenizer::load(word_level.as_bytes(), &config(), 16).unwrap();
        assert!(matches!(t, ModelTokenizer::Other(_)));
        assert!(t.to_saved(word_level.as_bytes()).is_none());
    }
}
