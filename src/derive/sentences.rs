//! A message's text as sentences, and the pieces a decision is made of: its one-line summary,
//! the alternatives it names, the reason it gives. Shared by the sentence rules
//! ([`super::extract`]) and the reply rules (`replies.rs`). Pure.

use std::sync::OnceLock;

use crate::text::pattern::Pattern;

use crate::doc::DecisionStatus;
use crate::text::find_ci;

/// A decision found in one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    /// One line, readable on its own.
    pub summary: String,
    /// The sentence(s) it came from.
    pub content: String,
    /// Options considered and not taken.
    pub alternatives: Vec<String>,
    /// The because / since / so that clause, when present.
    pub reasoning: Option<String>,
    /// 0–1.
    pub confidence: f32,
    /// Active, or rejected for "tried X, reverting".
    pub status: DecisionStatus,
    /// Name of the rule that fired.
    pub rule: &'static str,
}

/// A pattern of the rules (written here, so always valid).
pub(super) fn re(pat: &str) -> Pattern {
    Pattern::new(pat).expect("valid")
}

pub(super) fn code_re() -> &'static Pattern {
    static R: OnceLock<Pattern> = OnceLock::new();
    // Code blocks, and the assistant's thinking written out in the text (it restates the task).
    R.get_or_init(|| re(r"(?s)```.*?(```|\z)|<thinking>.*?(</thinking>|\z)"))
}

fn quoted_re() -> &'static Pattern {
    static R: OnceLock<Pattern> = OnceLock::new();
    // Quoted phrases (with a space) are someone else's words: "why we chose this".
    R.get_or_init(|| re(r#""[^"\n]*\s[^"\n]*"|“[^”\n]*\s[^”\n]*”|「[^」\n]{4,}」"#))
}

fn split_re() -> &'static Pattern {
    static R: OnceLock<Pattern> = OnceLock::new();
    // Sentence ends (also CJK), and inline bullets that follow a label ("Done:  - a  - b").
    R.get_or_init(|| re(r"[.!?]\s+|[。！？]\s*|:\s+-\s+|\s{2,}-\s+"))
}

/// Sentences of a text without code blocks, quoted lines, quoted phrases and markdown emphasis.
pub fn sentences(text: &str) -> Vec<String> {
    marked_sentences(text).into_iter().map(|(s, _)| s).collect()
}

/// Sentences, each with whether it comes from a list item (`- …`, `1. …`).
pub(super) fn marked_sentences(text: &str) -> Vec<(String, bool)> {
    static ITEM: OnceLock<Pattern> = OnceLock::new();
    let item = ITEM.get_or_init(|| re(r"^(?:[-*•]|\d+[.)])\s"));
    let text = code_re().regex().replace_all(text, "\n");
    let text = quoted_re().regex().replace_all(&text, " ");
    let text = text.replace("**", "").replace("__", "");
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('>') || line.starts_with('|') || line.is_empty() {
            continue;
        }
        let is_item = item.is_match(line);
        let line = line.trim_start_matches(|c: char| c == '-' || c == '*' || c == '#' || c.is_whitespace());
        let mut start = 0;
        let mut push = |s: &str| {
            let s = s.trim().trim_start_matches(|c: char| c == '-' || c == '*' || c.is_whitespace());
            if !s.is_empty() {
                out.push((s.to_string(), is_item));
            }
        };
        for m in split_re().regex().find_iter(line) {
            // Keep the sentence's own terminator, drop the separator whitespace.
            let end =
                m.start() + m.as_str().chars().next().map_or(0, |c| if c.is_whitespace() { 0 } else { c.len_utf8() });
            push(line.get(start..end).unwrap_or_default());
            start = m.end();
        }
        push(line.get(start..).unwrap_or_default());
    }
    out
}

pub(super) fn clause_after<'a>(s: &'a str, words: &[&str]) -> Option<&'a str> {
    words
        .iter()
        .filter_map(|w| find_ci(s, w).map(|i| i + w.len()))
        .min()
        .and_then(|i| s.get(i..))
        .map(|c| c.trim().trim_end_matches(['.', '!']).trim())
        .filter(|c| c.split_whitespace().count() >= 2)
}

pub(super) fn alternatives(s: &str) -> Vec<String> {
    let lower = s.to_lowercase();
    let mut out = Vec::new();
    for marker in ["instead of ", "rather than ", " over ", "from "] {
        if let Some(rest) = find_ci(s, marker).and_then(|i| s.get(i + marker.len()..)) {
            let stop = rest.find([',', '.', ';', '(']).unwrap_or(rest.len());
            let mut alt = rest.get(..stop).unwrap_or(rest);
            for end in [" to ", " for ", " because ", " since ", " as ", " in ", " so ", " and "] {
                if let Some(j) = find_ci(alt, end) {
                    alt = alt.get(..j).unwrap_or(alt);
                }
            }
            let words: Vec<&str> = alt.split_whitespace().take(4).collect();
            if !words.is_empty() && (marker != "from " || lower.contains(" to ")) {
                let a = words.join(" ").trim_matches(|c: char| !c.is_alphanumeric()).to_string();
                if !a.is_empty() && !out.contains(&a) {
                    out.push(a);
                }
            }
        }
    }
    out
}

/// A readable one-line summary: the sentence without leading chatter, capitalised, ≤ 120 chars.
/// In a long sentence the summary starts at the clause holding the decision (byte offset `at`).
pub(super) fn summarize(s: &str, at: usize) -> String {
    // `at` is an offset in `s`; trimming the start shifts it.
    let at = at.saturating_sub(s.len() - s.trim_start().len());
    let mut t = s.trim().trim_end_matches(['.', '!', '。', '！']);
    if t.chars().count() > 120
        && at > 40
        && let Some(head) = t.get(..at)
    {
        let cut = [", ", "; ", " — ", ": ", " given that ", " and "]
            .iter()
            .filter_map(|sep| head.rfind(sep).map(|i| i + sep.len()))
            .max();
        if let Some(rest) = cut.and_then(|c| t.get(c..)) {
            t = rest;
        }
    }
    let mut t = t.to_string();
    for prefix in ["ok, ", "ok ", "okay, ", "alright, ", "so ", "i think ", "yes, ", "great, ", "let's ", "lets "] {
        if let Some(rest) = crate::text::strip_prefix_ci(&t, prefix) {
            t = rest.to_string();
        }
    }
    let t = t.split(" because ").next().unwrap_or(&t).trim_end_matches([',', ';', ':', ' ']).to_string();
    let mut c = t.chars();
    let t = match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => t,
    };
    if t.chars().count() > 120 { format!("{}…", t.chars().take(119).collect::<String>()) } else { t }
}

pub(super) const REASON_WORDS: &[&str] =
    &[" because ", " since ", " so that ", " due to ", " as it ", " as there", " which means ", " which is more "];
