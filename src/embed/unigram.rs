//! A Unigram vocabulary (multilingual-e5-small's 250,000 pieces) held as its pieces in one
//! string and a table of hashes instead of the `tokenizers` crate's byte trie, whose nodes each
//! own a hash map (`benches/embed`, part `memory`, measured that trie at most of e5's resident
//! memory). The pieces and ids are the same as that crate's Unigram model's, checked text by
//! text over the shared corpus by `tests/integration/tokenizer_parity.rs`.
//!
//! [`CompactUnigram::to_bytes`] writes the vocabulary and its table as they are in memory, and
//! [`CompactUnigram::from_bytes`] reads them back without hashing a piece again: what the
//! tokenizer saved beside the model (`super::derived`) is made of.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use tokenizers::models::unigram::UnigramTrainer;
use tokenizers::{Model, Token};

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

/// No id (a table slot that is only a prefix, a vocabulary without an unknown piece).
const NONE: u32 = u32::MAX;

/// Reads little-endian numbers and slices from the front of a byte string.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }
    fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }
    fn f64(&mut self) -> Option<f64> {
        self.array().map(f64::from_le_bytes)
    }
    /// `n` fixed-size records of `N` bytes each.
    fn records<const N: usize>(&mut self, n: usize) -> Option<impl Iterator<Item = [u8; N]> + 'a> {
        let bytes = self.take(n.checked_mul(N)?)?;
        Some(bytes.chunks_exact(N).filter_map(|c| c.try_into().ok()))
    }
}

impl CompactUnigram {
    /// The vocabulary and its table as bytes, for [`CompactUnigram::from_bytes`] (their layout
    /// is part of the saved tokenizer's, versioned by its first bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.text.len() + self.ends.len() * 12 + self.table.len() * 13 + 40);
        for n in [self.ends.len(), self.text.len(), self.table.len(), self.max_len] {
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        out.extend_from_slice(&self.unk_id.unwrap_or(NONE).to_le_bytes());
        out.push(u8::from(self.byte_fallback));
        out.extend_from_slice(&self.min_score.to_le_bytes());
        out.extend_from_slice(self.text.as_bytes());
        self.ends.iter().for_each(|e| out.extend_from_slice(&e.to_le_bytes()));
        self.scores.iter().for_each(|s| out.extend_from_slice(&s.to_le_bytes()));
        for (key, slot) in &self.table {
            out.extend_from_slice(&key.to_le_bytes());
            out.extend_from_slice(&slot.id.unwrap_or(NONE).to_le_bytes());
            out.push(u8::from(slot.prefix));
        }
        out
    }

    /// A vocabulary written by [`CompactUnigram::to_bytes`]; `None` when `bytes` are not one
    /// (cut short, too long, or inconsistent).
    pub fn from_bytes(bytes: &[u8]) -> Option<CompactUnigram> {
        let mut c = Cursor(bytes);
        let [pieces, text_len, table_len, max_len] = [c.u32()?, c.u32()?, c.u32()?, c.u32()?].map(|n| n as usize);
        let unk_id = Some(c.u32()?).filter(|&u| u != NONE);
        let byte_fallback = match c.take(1)? {
            [0] => false,
            [1] => true,
            _ => return None,
        };
        let min_score = c.f64()?;
        let text = String::from_utf8(c.take(text_len)?.to_vec()).ok()?;
        let ends: Vec<u32> = c.records::<4>(pieces)?.map(u32::from_le_bytes).collect();
        let scores: Vec<f64> = c.records::<8>(pieces)?.map(f64::from_le_bytes).collect();
        let mut table: HashMap<u64, Slot, BuildHasherDefault<KeyHasher>> = HashMap::default();
        table.reserve(table_len);
        for r in c.records::<13>(table_len)? {
            let mut parts = Cursor(&r);
            let (key, id) = (parts.u64()?, parts.u32()?);
            let prefix = parts.take(1)? == [1];
            table.insert(key, Slot { id: Some(id).filter(|&i| i != NONE), prefix });
        }
        let consistent = c.0.is_empty()
            && table.len() == table_len
            && ends.last().map_or(text.is_empty(), |&e| e as usize == text.len())
            && ends.windows(2).all(|w| w[0] <= w[1])
            && unk_id.is_none_or(|u| (u as usize) < pieces);
        consistent.then_some(CompactUnigram { text, ends, table, scores, unk_id, min_score, max_len, byte_fallback })
    }
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

    #[test]
    fn a_vocabulary_read_back_from_its_bytes_segments_the_same_and_damage_is_refused() {
        let ours = CompactUnigram::new(vocab(), Some(0), true).unwrap();
        let bytes = ours.to_bytes();
        let back = CompactUnigram::from_bytes(&bytes).unwrap();
        for text in ["abc", "ababc", "xyzab", "a世界b", "界界x", "ab界zz世", ""] {
            let a: Vec<(u32, String, (usize, usize))> =
                ours.tokenize(text).unwrap().into_iter().map(|t| (t.id, t.value, t.offsets)).collect();
            let b: Vec<(u32, String, (usize, usize))> =
                back.tokenize(text).unwrap().into_iter().map(|t| (t.id, t.value, t.offsets)).collect();
            assert_eq!(a, b, "{text:?}");
        }
        assert_eq!(back.to_bytes().len(), bytes.len());
        let without_unk = CompactUnigram::new(vocab(), None, false).unwrap();
        assert!(CompactUnigram::from_bytes(&without_unk.to_bytes()).unwrap().tokenize("zz").is_err());
        // Cut short at every length, or one byte too long: refused, never a panic.
        for n in 0..bytes.len() {
            assert!(CompactUnigram::from_bytes(&bytes[..n]).is_none(), "cut at {n}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(CompactUnigram::from_bytes(&longer).is_none());
        // Counts that promise more than the bytes hold.
        let mut lying = bytes.clone();
        lying[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(CompactUnigram::from_bytes(&lying).is_none());
    }
}
