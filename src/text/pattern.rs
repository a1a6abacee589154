//! A regular expression with a cheaper twin that rules text out first. Pure.
//!
//! The regex crate's fast engine (a lazy DFA) applies a Unicode word boundary (`\b`) only to
//! ASCII text: on a sentence with one Chinese, Japanese or Korean character, or one accented
//! letter, a pattern with `\b` is searched by its slower engines (a backtracker or a PikeVM).
//! Deriving decisions asks a few dozen such patterns about every sentence, and most answer no.
//!
//! The twin is the same pattern with every `\b` and `\B` taken out. Taking out an assertion only
//! ever lets more text match, so where the twin finds nothing the pattern finds nothing; where
//! the twin matches, the pattern itself answers. Every answer is the pattern's own: the twin
//! only saves asking it when the answer is certainly no.

use regex::{Captures, Match, Regex};

/// A compiled pattern that answers exactly as [`Regex`] does, faster on non-ASCII text that
/// it does not match.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    re: Regex,
    /// The pattern without word boundaries, when it had any (and the rest still compiles).
    twin: Option<Regex>,
}

impl Pattern {
    /// Compiles `pattern` and its twin.
    pub(crate) fn new(pattern: &str) -> Result<Self, regex::Error> {
        let re = Regex::new(pattern)?;
        let twin = without_word_boundaries(pattern).and_then(|p| {
            let twin = Regex::new(&p).ok();
            // Correct without its twin, only slower: a pattern whose twin does not compile is
            // a pattern to write differently, and the tests say so.
            debug_assert!(twin.is_some(), "no twin for {pattern}");
            twin
        });
        Ok(Self { re, twin })
    }

    /// Whether the pattern matches somewhere in `text`.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.may_match(text) && self.re.is_match(text)
    }

    /// The pattern's leftmost match in `text`.
    pub(crate) fn find<'h>(&self, text: &'h str) -> Option<Match<'h>> {
        if self.may_match(text) { self.re.find(text) } else { None }
    }

    /// The pattern's leftmost match in `text` with its groups.
    pub(crate) fn captures<'h>(&self, text: &'h str) -> Option<Captures<'h>> {
        if self.may_match(text) { self.re.captures(text) } else { None }
    }

    /// The pattern itself, for what the twin cannot shorten (replacing, iterating).
    pub(crate) fn regex(&self) -> &Regex {
        &self.re
    }

    /// False only where the pattern certainly does not match. On ASCII text the pattern's own
    /// fast engine runs, so the twin is not asked.
    fn may_match(&self, text: &str) -> bool {
        match &self.twin {
            Some(twin) if !text.is_ascii() => twin.is_match(text),
            _ => true,
        }
    }
}

/// `pattern` with every `\b`, `\B` (and `\b{start}`-style boundary) removed; `None` when it has
/// none. Escapes are read in pairs, so an escaped backslash followed by `b` stays as it is.
fn without_word_boundaries(pattern: &str) -> Option<String> {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    let mut removed = false;
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('b' | 'B') => {
                removed = true;
                if chars.peek() == Some(&'{') {
                    // `\b{start}`, `\b{end}`, `\b{start-half}`, `\b{end-half}`.
                    for c in chars.by_ref() {
                        if c == '}' {
                            break;
                        }
                    }
                }
            }
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    removed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_boundaries_come_out_and_nothing_else_does() {
        assert_eq!(without_word_boundaries(r"(?i)\bwe\s+decided\b").as_deref(), Some(r"(?i)we\s+decided"));
        assert_eq!(without_word_boundaries(r"\Bx\b{start}y\b{end-half}").as_deref(), Some("xy"));
        // An escaped backslash before a `b` is a backslash and a letter, not a boundary.
        assert_eq!(without_word_boundaries(r"a\\b"), None);
        assert_eq!(without_word_boundaries(r"a\\\bc").as_deref(), Some(r"a\\c"));
        assert_eq!(without_word_boundaries(r"(?-u:\b)x").as_deref(), Some("(?-u:)x"));
        assert_eq!(without_word_boundaries(r"no boundary \d+"), None);
    }

    #[test]
    fn answers_exactly_as_the_pattern_does_in_every_script() {
        let patterns = [
            r"(?i)\b(?:we|i)\s+decided\b|决定|決定|결정",
            r"(?i)\b(?:use|go with)\b.{0,20}\binstead\b",
            r"(?i)^(?:\w+,?\s+)?(?:revert(?:ing)?|roll(?:ing)? back)\b",
            r"\bnot\b",
            r"(?i)\b(?:ok|yes)\b|^\W*(?:好|はい|네)",
        ];
        let texts = [
            "We decided to keep redb.",
            "我们决定用 redb，因为 we decided earlier.",
            "café: we decided",
            "wedecided nothing",
            "決定しました。",
            "결정했습니다: use Postgres instead",
            "Reverting the header, ça va",
            "notable, knot, ünot, not…",
            "好的，就这样",
            "yesterday okay? ¿ok?",
            "",
            "é",
            "使用 gRPC instead of REST",
            "Ünd we decided",
        ];
        for p in patterns {
            let (pattern, re) = (Pattern::new(p).unwrap(), Regex::new(p).unwrap());
            assert!(pattern.twin.is_some(), "{p}");
            for t in texts {
                assert_eq!(pattern.is_match(t), re.is_match(t), "{p} on {t}");
                assert_eq!(pattern.find(t).map(|m| m.range()), re.find(t).map(|m| m.range()), "{p} on {t}");
                let groups =
                    |c: Option<Captures<'_>>| c.map(|c| c.iter().map(|g| g.map(|g| g.range())).collect::<Vec<_>>());
                assert_eq!(groups(pattern.captures(t)), groups(re.captures(t)), "{p} on {t}");
            }
        }
    }

    #[test]
    fn an_invalid_pattern_is_an_error() {
        assert!(Pattern::new(r"(\b").is_err());
    }
}
