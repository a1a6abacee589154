//! A model's tokenizer, loaded from its `tokenizer.json` the way fastembed loads it (padding to
//! the longest text of a call, truncation, the special tokens of `special_tokens_map.json`),
//! with one difference: a Unigram vocabulary (multilingual-e5-small's 250,000 pieces) is held
//! as its pieces in one string and a table of hashes instead of the `tokenizers` crate's byte
//! trie, whose nodes each own a hash map (`benches/embed`, part `memory`, measured that trie at
//! most of e5's resident memory). Normalisation, pre-tokenisation, special tokens, offsets and post-processing are
//! the `tokenizers` crate's own; the pieces and ids are the same as its Unigram model's, checked
//! text by text over the shared corpus by `tests/integration/tokenizer_parity.rs`.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::unigram::UnigramTrainer;
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::processors::PostProcessorWrapper;
use tokenizers::{AddedToken, Encoding, Model, PaddingParams, PaddingStrategy, Token, TokenizerImpl, TruncationParams};

/// The score below the lowest piece's that a character no piece covers gets (sentencepiece's
/// and the `tokenizers` crate's `K_UNK_PENALTY`).
const UNK_PENALTY: f64 = 10.0;

/// A Unigram vocabulary as its pieces in one string plus one table of 64-bit hashes, segmenting
/// a pre-token by the same Viterbi search, scores and tie-breaking as the `tokenizers` crate's
/// `Unigram` (with `fuse_unk`, no sampling), which walks a byte trie instead. The table holds
/// every piece (its id, checked against the piece's text on lookup) and every proper prefix of a
/// piece (a mark), so a candidate grows a character at a time, its hash with it, and stops as
/// soon as no piece starts with it, as a trie walk would.
#[derive(Debug, Clone)]
pub struct CompactUnigram {
    /// Every piece, in id order, back to back.
    text: String,
    /// Where piece `id` ends in `text` (it starts where piece `id - 1` ends).
    ends: Vec<u32>,
    /// [`key`] of a piece or of a proper prefix of one → [`Slot`].
    table: HashMap<u64, Slot, BuildHasherDefault<KeyHasher>>,
    scores: Vec<f64>,
    unk_id: Option<u32>,
    min_score: f64,
    /// The longest piece, in bytes: no candidate is looked up beyond it.
    max_len: usize,
    byte_fallback: bool,
}

/// What the table knows of a string: the id of the piece it is (if any) and whether some
/// longer piece starts with it.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    id: Option<u32>,
    prefix: bool,
}

/// FNV-1a over bytes, extended one character at a time as a candidate grows.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    const START: Fnv = Fnv(0xcbf2_9ce4_8422_2325);

    fn add(self, bytes: &[u8]) -> Fnv {
        Fnv(bytes.iter().fold(self.0, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)))
    }

    /// The table's key: FNV's state mixed (splitmix64's finaliser) so every bit of it counts.
    fn key(self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The key of a whole string.
fn key(s: &str) -> u64 {
    Fnv::START.add(s.as_bytes()).key()
}

/// Each prefix of `s` that ends on a character boundary, shortest first, as its length in bytes
/// and its hash: a candidate piece grown one character at a time.
fn prefixes(s: &str) -> impl Iterator<Item = (usize, Fnv)> + '_ {
    s.char_indices().scan(Fnv::START, |h, (at, c)| {
        let end = at + c.len_utf8();
        *h = h.add(s.as_bytes().get(at..end).unwrap_or_default());
        Some((end, *h))
    })
}

/// Keys are already mixed: the table uses them as they are.
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0 = Fnv(self.0).add(bytes).key();
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[derive(Deserialize)]
struct RawUnigram {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    unk_id: Option<usize>,
    vocab: Vec<(String, f64)>,
    #[serde(default)]
    byte_fallback: bool,
}

impl<'de> Deserialize<'de> for CompactUnigram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let raw = RawUnigram::deserialize(d)?;
        if let Some(kind) = raw.kind.filter(|k| k != "Unigram") {
            return Err(serde::de::Error::custom(format!("a {kind} model, not a Unigram one")));
        }
        CompactUnigram::new(raw.vocab, raw.unk_id, raw.byte_fallback).map_err(serde::de::Error::custom)
    }
}

impl CompactUnigram {
    /// A vocabulary of `(piece, score)` in id order. Errors as `tokenizers`' `Unigram::from`
    /// does: an unknown-piece id outside the vocabulary.
    pub fn new(vocab: Vec<(String, f64)>, unk_id: Option<usize>, byte_fallback: bool) -> Result<Self, String> {
        if let Some(unk) = unk_id
            && unk >= vocab.len()
        {
            return Err(format!("the unknown piece's id {unk} is outside the vocabulary of {}", vocab.len()));
        }
        let mut text = String::new();
        let mut ends = Vec::with_capacity(vocab.len());
        let mut scores = Vec::with_capacity(vocab.len());
        let (mut min_score, mut max_len) = (f64::INFINITY, 0);
        for (piece, score) in vocab {
            max_len = max_len.max(piece.len());
            min_score = min_score.min(score);
            text.push_str(&piece);
            ends.push(u32::try_from(text.len()).map_err(|_| "a vocabulary of more than 4 GiB of pieces")?);
            scores.push(score);
        }
        let mut model = CompactUnigram {
            text,
            ends,
            table: HashMap::default(),
            scores,
            unk_id: unk_id.map(|u| u as u32),
            min_score,
            max_len,
            byte_fallback,
        };
        let mut table: HashMap<u64, Slot, BuildHasherDefault<KeyHasher>> = HashMap::default();
        table.reserve(model.ends.len() * 2);
        let mut keys = Vec::new();
        for id in 0..model.ends.len() as u32 {
            let piece = model.piece(id);
            keys.clear();
            keys.extend(prefixes(piece).map(|(_, h)| h.key()));
            let Some(whole) = keys.pop() else { continue };
            let slot = table.entry(whole).or_default();
            if let Some(other) = slot.id
                && model.piece(other) != piece
            {
                return Err(format!("two pieces share a 64-bit hash (ids {other} and {id})"));
            }
            // A piece listed twice keeps its last id, as in `tokenizers`.
            slot.id = Some(id);
            // Its proper prefixes, longest first: one already marked had every shorter one
            // marked with it, so the marking stops there (most prefixes are shared).
            for &key in keys.iter().rev() {
                let slot = table.entry(key).or_default();
                if slot.prefix {
                    break;
                }
                slot.prefix = true;
            }
        }
        table.shrink_to_fit();
        model.table = table;
        Ok(model)
    }

    /// The piece of `id` (empty for an id outside the vocabulary).
    fn piece(&self, id: u32) -> &str {
        let id = id as usize;
        let start = id.checked_sub(1).and_then(|p| self.ends.get(p)).map_or(0, |&e| e as usize);
        let end = self.ends.get(id).map_or(start, |&e| e as usize);
        self.text.get(start..end).unwrap_or("")
    }

    /// The id of `candidate` if it is a piece (its key and text both match), and whether a
    /// longer piece may start with it (a hash shared by chance only lengthens the search).
    fn look(&self, key: u64, candidate: &str) -> (Option<u32>, bool) {
        match self.table.get(&key) {
            Some(slot) => (slot.id.filter(|&id| self.piece(id) == candidate), slot.prefix),
            None => (None, false),
        }
    }

    /// The id of `piece`, if it is one.
    fn id(&self, piece: &str) -> Option<u32> {
        self.look(key(piece), piece).0
    }

    fn unk(&self) -> tokenizers::Result<u32> {
        self.unk_id.ok_or_else(|| "this Unigram vocabulary has no unknown piece".into())
    }

    /// The best segmentation of `s` as byte ranges, unknown characters fused into one range.
    fn segment(&self, s: &str) -> tokenizers::Result<Vec<(usize, usize)>> {
        #[derive(Clone, Copy)]
        struct Best {
            id: u32,
            score: f64,
            start: Option<usize>,
        }
        let size = s.len();
        let unk_score = self.min_score - UNK_PENALTY;
        let mut best = vec![Best { id: 0, score: 0.0, start: None }; size + 1];
        let better = |best: &mut [Best], end: usize, id: u32, score: f64, start: usize| {
            let node = &mut best[end];
            if node.start.is_none() || score > node.score {
                *node = Best { id, score, start: Some(start) };
            }
        };
        let mut at = 0;
        while at < size {
            let till = best[at].score;
            // `at` is always a character boundary: it only moves by whole characters.
            let rest = s.get(at..).ok_or("a segmentation position inside a character")?;
            let first = rest.chars().next().map_or(1, char::len_utf8);
            let mut single = false;
            // Candidates in increasing length, as the trie's common-prefix search yields them.
            for (len, h) in prefixes(rest).take_while(|&(len, _)| len <= self.max_len) {
                let candidate = rest.get(..len).ok_or("a candidate inside a character")?;
                let (id, longer) = self.look(h.key(), candidate);
                if let Some(id) = id {
                    better(&mut best, at + len, id, self.scores[id as usize] + till, at);
                    single |= len == first;
                }
                if !longer {
                    break;
                }
            }
            if !single {
                better(&mut best, at + first, self.unk()?, unk_score + till, at);
            }
            at += first;
        }
        let mut out = Vec::new();
        let mut end = size;
        let mut unk_run: Option<usize> = None;
        while end > 0 {
            let node = best[end];
            let start = node.start.ok_or("a position the segmentation never reached")?;
            if Some(node.id) == self.unk_id {
                // Runs of unknown pieces fuse into one (`fuse_unk`), ending where the first ended.
                unk_run.get_or_insert(end);
            } else {
                if let Some(e) = unk_run.take() {
                    out.push((end, e));
                }
                out.push((start, end));
            }
            end = start;
        }
        if let Some(e) = unk_run {
            out.push((0, e));
        }
        out.reverse();
        Ok(out)
    }
}

impl Model for CompactUnigram {
    type Trainer = UnigramTrainer;

    fn tokenize(&self, sequence: &str) -> tokenizers::Result<Vec<Token>> {
        if sequence.is_empty() {
            return Ok(Vec::new());
        }
        let mut tokens = Vec::new();
        for (start, end) in self.segment(sequence)? {
            let piece = sequence.get(start..end).ok_or("a piece that does not end on a character boundary")?;
            let id = match self.id(piece) {
                Some(id) => id,
                None if self.byte_fallback => {
                    let bytes: Option<Vec<Token>> = piece
                        .bytes()
                        .map(|b| {
                            let name = format!("<0x{b:02X}>");
                            self.id(&name).map(|id| Token::new(id, name, (start, end)))
                        })
                        .collect();
                    if let Some(bytes) = bytes {
                        tokens.extend(bytes);
                        continue;
                    }
                    self.unk()?
                }
                None => self.unk()?,
            };
            tokens.push(Token::new(id, piece.to_string(), (start, end)));
        }
        Ok(tokens)
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.id(token)
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        ((id as usize) < self.ends.len()).then(|| self.piece(id).to_string())
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        (0..self.ends.len() as u32).map(|id| (self.piece(id).to_string(), id)).collect()
    }

    fn get_vocab_size(&self) -> usize {
        self.ends.len()
    }

    fn save(&self, _folder: &Path, _prefix: Option<&str>) -> tokenizers::Result<Vec<PathBuf>> {
        Err("convdex's compact Unigram vocabulary is read-only; save the original tokenizer.json".into())
    }

    fn get_trainer(&self) -> UnigramTrainer {
        UnigramTrainer::default()
    }
}

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

/// The files a tokenizer is loaded from, as bytes (`tokenizer.json`, `config.json`,
/// `special_tokens_map.json`, `tokenizer_config.json`).
pub struct TokenizerBytes<'a> {
    /// `tokenizer.json`.
    pub tokenizer: &'a [u8],
    /// `config.json` (its `pad_token_id`).
    pub config: &'a [u8],
    /// `special_tokens_map.json`.
    pub special_tokens_map: &'a [u8],
    /// `tokenizer_config.json` (`model_max_length`, `pad_token`).
    pub tokenizer_config: &'a [u8],
}

impl ModelTokenizer {
    /// Loads a tokenizer that pads each call to its longest text and truncates at
    /// `max_tokens` (or the model's own limit when lower), with the special tokens of
    /// `special_tokens_map.json`: what fastembed's `load_tokenizer` builds. Errors say which
    /// file is wrong.
    pub fn load(files: &TokenizerBytes<'_>, max_tokens: usize) -> Result<ModelTokenizer, String> {
        let json = |what: &str, bytes: &[u8]| {
            serde_json::from_slice::<serde_json::Value>(bytes).map_err(|e| format!("{what} is not valid JSON: {e}"))
        };
        let config = json("config.json", files.config)?;
        let specials = json("special_tokens_map.json", files.special_tokens_map)?;
        let tokenizer_config = json("tokenizer_config.json", files.tokenizer_config)?;
        let bad = |e: &dyn std::fmt::Display| format!("tokenizer.json cannot be read as a tokenizer: {e}");
        // A Unigram vocabulary is held compactly; any other model, or a vocabulary the compact
        // form cannot hold (two pieces sharing a hash), as `tokenizers` builds it.
        let mut t = match serde_json::from_slice(files.tokenizer) {
            Ok(compact) => ModelTokenizer::Compact(Box::new(compact)),
            Err(_) => ModelTokenizer::Other(Box::new(
                tokenizers::Tokenizer::from_bytes(files.tokenizer).map_err(|e| bad(&e))?,
            )),
        };
        let model_max = tokenizer_config["model_max_length"]
            .as_f64()
            .ok_or("tokenizer_config.json has no numeric `model_max_length`")?;
        let max_length = max_tokens.min(model_max as f32 as usize);
        let pad = &tokenizer_config["pad_token"];
        let pad_token: String =
            pad.as_str().or_else(|| pad["content"].as_str()).ok_or("tokenizer_config.json has no `pad_token`")?.into();
        let pad_id =
            config["pad_token_id"].as_u64().map(|id| id as u32).or_else(|| t.token_to_id(&pad_token)).unwrap_or(0);
        each!(&mut t, p => {
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
        Ok(t)
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokenizers::models::unigram::Unigram;

    fn vocab() -> Vec<(String, f64)> {
        [
            ("<unk>", 0.0),
            ("a", -1.0),
            ("b", -2.0),
            ("ab", -2.5),
            ("abc", -4.0),
            ("c", -1.5),
            ("界", -3.0),
            ("世界", -3.5),
        ]
        .iter()
        .map(|(p, s)| (p.to_string(), *s))
        .collect()
    }

    #[test]
    fn segments_as_the_tokenizers_unigram_does_including_unknown_runs_and_ties() {
        let ours = CompactUnigram::new(vocab(), Some(0), false).unwrap();
        let theirs = Unigram::from(vocab(), Some(0), false).unwrap();
        for text in ["abc", "ababc", "xyzab", "a世界b", "界界x", "ab界zz世", "cba", "ééé", "a\u{1F600}b", ""] {
            let a: Vec<(u32, String, (usize, usize))> =
                ours.tokenize(text).unwrap().into_iter().map(|t| (t.id, t.value, t.offsets)).collect();
            let b: Vec<(u32, String, (usize, usize))> =
                theirs.tokenize(text).unwrap().into_iter().map(|t| (t.id, t.value, t.offsets)).collect();
            assert_eq!(a, b, "{text:?}");
        }
    }

    #[test]
    fn a_vocabulary_without_an_unknown_piece_errors_instead_of_panicking() {
        let ours = CompactUnigram::new(vocab(), None, false).unwrap();
        assert!(ours.tokenize("zz").is_err());
        assert_eq!(ours.tokenize("ab").unwrap().len(), 1);
        assert!(CompactUnigram::new(vocab(), Some(99), false).is_err());
    }

    #[test]
    fn a_piece_listed_twice_keeps_its_last_id_as_in_tokenizers() {
        let mut twice = vocab();
        twice.push(("ab".to_string(), -0.5));
        let ours = CompactUnigram::new(twice.clone(), Some(0), false).unwrap();
        let theirs = Unigram::from(twice, Some(0), false).unwrap();
        for text in ["ab", "abab", "cab"] {
            let a: Vec<u32> = ours.tokenize(text).unwrap().into_iter().map(|t| t.id).collect();
            let b: Vec<u32> = theirs.tokenize(text).unwrap().into_iter().map(|t| t.id).collect();
            assert_eq!(a, b, "{text:?}");
        }
        assert_eq!(ours.token_to_id("ab"), theirs.token_to_id("ab"));
        assert_eq!(ours.id_to_token(3).as_deref(), Some("ab"));
        assert_eq!(ours.id_to_token(99), None);
    }
}
