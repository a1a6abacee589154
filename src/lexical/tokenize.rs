//! The tokenizer and query parser of the lexical index (pure: text in, tokens out).
//!
//! Words; identifiers and paths indexed whole *and* split at `_`, `::`, `.`, `/`, `-` and
//! camelCase (`parseFrameHeader` → `parseframeheader`, `parse`, `frame`, `header`); numbers and
//! versions kept (`v1.2.3`); case folded; English stemming (`sessions` → `session`); Chinese,
//! Japanese and Korean text as overlapping character bigrams.
//!
//! Queries ([`LexicalQuery`]): `"quoted phrases"` must match as phrases and identifiers (a token
//! with `_ :: . / -` or inner capitals) must match whole; other words are optional and ranked by
//! BM25.

use tantivy::tokenizer::{Language, Stemmer, TextAnalyzer, Token, TokenStream, Tokenizer};

pub(crate) const TOKENIZER: &str = "convdex";
/// Most clauses (phrases, identifiers, required and optional terms) one query may have: a
/// query with more is a typed error ([`crate::Error::TooManyTerms`]), never cut in silence.
/// Every term of an 8 KiB query of prose fits (a pasted page of an error message included);
/// translations through the glossary take what is left.
pub const MAX_CLAUSES: usize = 1024;

/// A Chinese, Japanese (kana) or Korean character: one token each here, half a word for the
/// decision scorer's length.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF // Hiragana, Katakana
        | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF // Han
        | 0xAC00..=0xD7AF // Hangul syllables
    )
}

fn is_word(c: char) -> bool {
    (c.is_alphanumeric() && !is_cjk(c)) || c == '_'
}

fn is_connector(c: char) -> bool {
    matches!(c, '.' | '/' | ':' | '-' | '\\' | '#' | '@')
}

/// Splits one identifier-like run into its parts: at connectors and `_`, and camelCase.
fn parts(run: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = run.char_indices().collect();
    let mut start: Option<usize> = None;
    for (k, &(i, c)) in chars.iter().enumerate() {
        if is_connector(c) || c == '_' {
            if let Some(s) = start.take() {
                out.push((s, i));
            }
            continue;
        }
        if let Some(s) = start {
            let prev = chars[k - 1].1;
            let next = chars.get(k + 1).map(|x| x.1);
            // fooBar | HTTPServer (split before the last capital of a capital run)
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase));
            if boundary {
                out.push((s, i));
                start = Some(i);
            }
        } else {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push((s, run.len()));
    }
    out
}

/// The tokens of a text, before stemming: `(byte from, byte to, position, text)`.
pub fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut k = 0;
    let push = |out: &mut Vec<Token>, from: usize, to: usize, position: usize, len: usize| {
        out.push(Token {
            offset_from: from,
            offset_to: to,
            position,
            text: text.get(from..to).unwrap_or_default().to_lowercase(),
            position_length: len,
        });
    };
    while k < chars.len() {
        let (i, c) = chars[k];
        if is_cjk(c) {
            let start = k;
            while k < chars.len() && is_cjk(chars[k].1) {
                k += 1;
            }
            let run = &chars[start..k];
            let end_of = |j: usize| run.get(j + 1).map_or_else(|| chars.get(k).map_or(text.len(), |x| x.0), |x| x.0);
            if run.len() == 1 {
                push(&mut out, run[0].0, end_of(0), pos, 1);
                pos += 1;
            } else {
                for (j, &(from, _)) in run.iter().enumerate().take(run.len() - 1) {
                    push(&mut out, from, end_of(j + 1), pos, 1);
                    pos += 1;
                }
            }
            continue;
        }
        if !is_word(c) {
            k += 1;
            continue;
        }
        // A run: word characters, joined by up to two connectors between word characters.
        let start = i;
        let mut end;
        let mut j = k;
        loop {
            while j < chars.len() && is_word(chars[j].1) {
                j += 1;
            }
            end = j;
            let mut c2 = j;
            while c2 < chars.len() && c2 - j < 2 && is_connector(chars[c2].1) {
                c2 += 1;
            }
            if c2 > j && c2 < chars.len() && is_word(chars[c2].1) {
                j = c2;
                continue;
            }
            break;
        }
        let stop = chars.get(end).map_or(text.len(), |x| x.0);
        let run = text.get(start..stop).unwrap_or_default();
        let ps = parts(run);
        if ps.len() > 1 {
            push(&mut out, start, stop, pos, ps.len());
            for (n, (a, b)) in ps.iter().enumerate() {
                push(&mut out, start + a, start + b, pos + n, 1);
            }
            pos += ps.len();
        } else {
            push(&mut out, start, stop, pos, 1);
            pos += 1;
        }
        k = end;
    }
    out
}

/// The tokenizer registered with tantivy (see [`tokens`]).
#[derive(Clone, Default)]
pub struct CodeTokenizer;

/// Token stream over a precomputed token list.
pub struct VecTokenStream {
    tokens: Vec<Token>,
    at: usize,
}

impl TokenStream for VecTokenStream {
    fn advance(&mut self) -> bool {
        self.at += 1;
        self.at <= self.tokens.len()
    }
    fn token(&self) -> &Token {
        &self.tokens[self.at - 1]
    }
    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.at - 1]
    }
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = VecTokenStream;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> VecTokenStream {
        VecTokenStream { tokens: tokens(text), at: 0 }
    }
}

pub(crate) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CodeTokenizer).filter(Stemmer::new(Language::English)).build()
}

/// Analyzed tokens (stemmed), as stored in the index.
pub fn analyze(text: &str) -> Vec<Token> {
    let mut a = analyzer();
    let mut s = a.token_stream(text);
    let mut out = Vec::new();
    s.process(&mut |t| out.push(t.clone()));
    out
}

/// Words too common to rank by in a question ("when did she go …").
const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from", "had", "has", "have",
    "he", "her", "his", "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she", "so", "that",
    "the", "their", "them", "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why",
    "will", "with", "would", "you", "your",
];

/// What calibrates a query's BM25 scores (the lexical index computes it, the fusion of `search` reads it): `reference` is
/// what BM25 gives a document of average length containing every query term once, so
/// `BM25 / reference` is the share of the query a document matches, comparable between queries
/// and collections; `required` is the part of `reference` carried by the quoted phrases,
/// identifiers and required terms, which every hit matches whatever its length.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct LexicalScale {
    pub(crate) reference: f32,
    pub(crate) required: f32,
}

/// A parsed lexical query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LexicalQuery {
    /// Quoted phrases: analyzed terms with their positions; each must match.
    pub phrases: Vec<Vec<(usize, String)>>,
    /// Identifiers and paths: the whole token (a match ranks higher) and its parts, which must
    /// match as a phrase (so `transcript_renderer.ex` finds `lib/transcript_renderer.ex`).
    pub identifiers: Vec<(String, Vec<(usize, String)>)>,
    /// Single terms that must match (a one-word quoted phrase, a camelCase word).
    pub required: Vec<String>,
    /// Other terms, ranked by BM25.
    pub optional: Vec<String>,
    /// Concepts of a translated query (the query in another language, see
    /// [`crate::Ranking::translation`]): each matches through any of its forms (a form: terms,
    /// all optional), ranked by BM25 like [`Self::optional`] and counted once each in the
    /// query's scale. Empty in a parsed query.
    pub groups: Vec<Vec<Vec<String>>>,
}

impl LexicalQuery {
    /// Parses a query text.
    pub fn parse(text: &str) -> LexicalQuery {
        let mut q = LexicalQuery::default();
        let mut rest = String::new();
        for (n, piece) in text.split('"').enumerate() {
            // Odd pieces are inside quotes (an unclosed quote quotes to the end).
            if n % 2 == 1 && !piece.trim().is_empty() {
                let toks: Vec<(usize, String)> = analyze(piece)
                    .into_iter()
                    .filter(|t| t.position_length == 1)
                    .map(|t| (t.position, t.text))
                    .collect();
                if toks.len() > 1 {
                    q.phrases.push(toks);
                } else if let Some((_, t)) = toks.into_iter().next() {
                    q.required.push(t);
                }
            } else {
                rest.push(' ');
                rest.push_str(piece);
            }
        }
        let toks = analyze(&rest);
        let raw = tokens(&rest);
        for (k, (t, r)) in toks.iter().zip(&raw).enumerate() {
            let original = rest.get(r.offset_from..r.offset_to).unwrap_or_default();
            // `GitHub`, `JavaScript`: a capitalised word with one inner capital is a name, not
            // an identifier; it ranks like any word (whole, lower-cased).
            let name = t.position_length == 2
                && original.chars().next().is_some_and(char::is_uppercase)
                && original.chars().all(char::is_alphanumeric);
            if name {
                if !q.optional.contains(&t.text) {
                    q.optional.push(t.text.clone());
                }
                continue;
            }
            if t.position_length > 1 {
                // Identifier or path, written whole: its parts must match in order.
                let parts: Vec<(usize, String)> = toks
                    .get(k + 1..k + 1 + t.position_length)
                    .unwrap_or_default()
                    .iter()
                    .map(|p| (p.position, p.text.clone()))
                    .collect();
                if !q.identifiers.iter().any(|(w, _)| *w == t.text) {
                    q.identifiers.push((t.text.clone(), parts));
                }
                continue;
            }
            let camel = original.chars().skip(1).any(char::is_uppercase) && original.chars().any(char::is_lowercase);
            let part_of_identifier = raw
                .iter()
                .any(|o| o.position_length > 1 && o.offset_from <= r.offset_from && r.offset_to <= o.offset_to);
            if part_of_identifier {
                continue;
            }
            if camel && !q.required.contains(&t.text) {
                q.required.push(t.text.clone());
            } else if !STOP.contains(&r.text.as_str()) && !q.optional.contains(&t.text) {
                q.optional.push(t.text.clone());
            }
        }
        q
    }

    /// How many clauses the query has: phrases, identifiers, required and optional terms (see
    /// [`MAX_CLAUSES`]).
    pub fn clauses(&self) -> usize {
        self.phrases.len() + self.identifiers.len() + self.required.len() + self.optional.len()
    }

    /// Nothing to search for.
    pub fn is_empty(&self) -> bool {
        self.phrases.is_empty()
            && self.identifiers.is_empty()
            && self.required.is_empty()
            && self.optional.is_empty()
            && self.groups.is_empty()
    }

    /// Every analyzed term, for highlighting.
    pub fn terms(&self) -> Vec<String> {
        let mut t: Vec<String> = self.required.iter().chain(&self.optional).cloned().collect();
        t.extend(self.groups.iter().flatten().flatten().cloned());
        t.extend(self.phrases.iter().flatten().map(|(_, s)| s.clone()));
        for (whole, parts) in &self.identifiers {
            t.push(whole.clone());
            t.extend(parts.iter().map(|(_, s)| s.clone()));
        }
        t
    }
}

/// A snippet of `text` around the first match of any of `terms` (analyzed form), matches
/// wrapped in `[` `]`; `None` when nothing matches.
pub fn snippet(text: &str, terms: &[String], width: usize) -> Option<String> {
    if terms.is_empty() {
        return None;
    }
    let toks = analyze(text);
    let raw = tokens(text);
    let hits: Vec<(usize, usize)> = toks
        .iter()
        .zip(&raw)
        .filter(|(t, _)| terms.contains(&t.text))
        .map(|(_, r)| (r.offset_from, r.offset_to))
        .collect();
    let &(first, _) = hits.first()?;
    let mut start = first.saturating_sub(width / 3);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + width).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let mut at = start;
    // Outer matches only (an identifier and its parts overlap).
    let mut last_end = 0;
    for &(a, b) in &hits {
        if a < at || a >= end || a < last_end {
            continue;
        }
        out.push_str(text.get(at..a).unwrap_or_default());
        out.push('[');
        out.push_str(text.get(a..b.min(end)).unwrap_or_default());
        out.push(']');
        at = b.min(end);
        last_end = b;
    }
    out.push_str(text.get(at..end).unwrap_or_default());
    if end < text.len() {
        out.push('…');
    }
    Some(out.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        tokens(s).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn identifiers_are_whole_and_split() {
        assert_eq!(texts("call parse_frame_header()"), ["call", "parse_frame_header", "parse", "frame", "header"]);
        assert_eq!(texts("parseFrameHeader"), ["parseframeheader", "parse", "frame", "header"]);
        assert_eq!(texts("HTTPServer"), ["httpserver", "http", "server"]);
        assert_eq!(texts("std::io::Error"), ["std::io::error", "std", "io", "error"]);
        assert_eq!(texts("see src/auth.rs."), ["see", "src/auth.rs", "src", "auth", "rs"]);
        assert_eq!(texts("v1.2.3 and 42"), ["v1.2.3", "v1", "2", "3", "and", "42"]);
        assert_eq!(texts("well-known"), ["well-known", "well", "known"]);
    }

    #[test]
    fn positions_follow_parts() {
        let t = tokens("a parse_frame b");
        let pos: Vec<(String, usize)> = t.into_iter().map(|t| (t.text, t.position)).collect();
        assert_eq!(
            pos,
            [("a".into(), 0), ("parse_frame".into(), 1), ("parse".into(), 1), ("frame".into(), 2), ("b".into(), 3)]
        );
    }

    #[test]
    fn cjk_is_bigrams() {
        assert_eq!(texts("数据流"), ["数据", "据流"]);
        assert_eq!(texts("学 x"), ["学", "x"]);
        assert_eq!(texts("スキーマを確認"), ["スキ", "キー", "ーマ", "マを", "を確", "確認"]);
    }

    #[test]
    fn queries_split_into_phrases_identifiers_and_words() {
        let q = LexicalQuery::parse("why did \"connection refused\" happen in parse_frame_header?");
        assert_eq!(q.phrases.len(), 1);
        assert_eq!(q.identifiers.len(), 1);
        assert_eq!(q.identifiers[0].0, analyze("parse_frame_header")[0].text);
        assert_eq!(q.identifiers[0].1.len(), 3);
        assert!(q.optional.contains(&"happen".to_string()));
        assert!(!q.optional.iter().any(|t| t == "did" || t == "why"), "{:?}", q.optional);
        assert!(LexicalQuery::parse("  ").is_empty());
        let q = LexicalQuery::parse("push to GitHub");
        assert!(q.identifiers.is_empty() && q.optional.contains(&"github".to_string()), "{q:?}");
        let q = LexicalQuery::parse("useEffect cleanup");
        assert_eq!(q.identifiers[0].0, analyze("useEffect")[0].text);
    }

    #[test]
    fn snippets_highlight_matches() {
        let q = LexicalQuery::parse("frame header");
        let s = snippet("We fixed the parse_frame_header bug today.", &q.terms(), 80).unwrap();
        assert!(s.contains("parse_[frame]_[header]"), "{s}");
        let s = snippet(
            "We fixed the parse_frame_header bug today.",
            &LexicalQuery::parse("parse_frame_header").terms(),
            80,
        );
        assert!(s.unwrap().contains("[parse_frame_header]"));
        assert_eq!(snippet("nothing here", &q.terms(), 80), None);
    }
}
