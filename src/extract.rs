//! Heuristic decision extraction (`extraction_method: heuristic`). Pure: messages in,
//! decisions out. Each rule below cites a sentence it is meant to catch.
//!
//! Text is first stripped of what must never produce a decision: fenced code blocks, quoted
//! lines (`> …`), long quoted strings, and tool output (not part of message text). Sentences
//! that are questions, hypotheticals or plans of action ("now let's run the tests") are skipped.

use std::sync::OnceLock;

use regex::Regex;

use crate::doc::{DecisionStatus, Role};

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

/// Minimal view of a message for extraction.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    /// Author.
    pub role: Role,
    /// Text (already scrubbed).
    pub text: &'a str,
}

struct Rule {
    name: &'static str,
    re: Regex,
    confidence: f32,
    status: DecisionStatus,
}

/// Verbs that make "let's …" a choice rather than a plan of action.
const CHOICE: &str = r"(?:use|go with|switch(?:\s+\w+){0,4}\s+to|migrate to|adopt|keep|stick with|stay with|pick|choose|replace|rely on|standardi[sz]e on|store|put|build it with|write it in|implement it (?:with|in))";

fn rules() -> &'static [Rule] {
    static R: OnceLock<Vec<Rule>> = OnceLock::new();
    R.get_or_init(|| {
        let r = |name, pat: &str, confidence, status| Rule {
            name,
            re: Regex::new(&format!("(?i){pat}")).expect("valid rule"),
            confidence,
            status,
        };
        use DecisionStatus::*;
        vec![
            // "We tried Redis pub/sub, it didn't work, reverting to polling."
            r("rejected", r"\b(?:tried|attempted)\b.{0,80}\b(?:didn'?t work|did not work|doesn'?t work|failed|broke)\b", 0.7, Rejected),
            // "Reverting the switch to gRPC; going back to REST."
            r("reverted", r"^(?:we(?:'re| are| will|'ll)?\s+)?(?:revert(?:ing)?|roll(?:ing)? back|go(?:ing)? back to|switch(?:ing)? back to)\b", 0.65, Active),
            // "We decided to keep the monolith for now."
            r("decided", r"\b(?:we|i|team)\s+(?:have\s+)?decided\b|\bdecision\s*(?:is|was|:)|\bdecided to\b|\bdecided on\b", 0.9, Active),
            // "Chose redb over SQLite because it is pure Rust."
            r("chose", r"(?:^|\b(?:we|i|user|team|they)\s+(?:\w+\s+)?)(?:chose|picked|opted for|settled on|went with|are going with|'re going with)\b", 0.85, Active),
            // "Switching from Jest to Vitest for speed."
            r("switch", r"\b(?:switch(?:ing|ed)?|migrat(?:e|ing|ed)|mov(?:e|ing|ed))\s+(?:\w+\s+){0,3}from\s+\S+.{0,40}?\bto\b", 0.8, Active),
            // "Let's use chromem instead of Qdrant for the embedded vectorstore."
            r("lets_choice", &format!(r"\blet'?s\s+(?:just\s+)?{CHOICE}\b"), 0.85, Active),
            // "We'll go with Postgres."
            r("will_choice", &format!(r"\b(?:we'?ll|we will|we are going to|we're going to)\s+(?:just\s+)?{CHOICE}\b"), 0.75, Active),
            // "We should not use global state in handlers."
            r("negation", r"\b(?:we|you)\s+(?:should(?:n'?t| not)|must(?:n'?t| not)|won'?t|will not)\s+(?:use|add|store|call|rely on|depend on)\b|\b(?:don'?t|never|avoid)\s+(?:use|using|store|storing|call|calling)\b", 0.7, Active),
            // "Use Redis rather than Postgres for sessions."
            r("rather_than", &format!(r"^(?:we\s+(?:should\s+)?|i\s+(?:want to|prefer to)\s+|please\s+)?(?:{CHOICE}|prefer)\b.*\b(?:rather than|instead of)\b"), 0.6, Active),
            // "Going forward we'll squash-merge every PR."
            r("going_forward", r"\b(?:going forward|from now on|from here on)\b", 0.6, Active),
        ]
    })
}

fn re(pat: &str) -> Regex {
    Regex::new(pat).expect("valid")
}

fn code_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| re(r"(?s)```.*?(```|\z)"))
}

fn quoted_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| re(r#""[^"\n]{25,}"|“[^”\n]{25,}”"#))
}

/// Sentences of a text without code blocks, quoted lines and long quotations.
pub fn sentences(text: &str) -> Vec<String> {
    let text = code_re().replace_all(text, "\n");
    let text = quoted_re().replace_all(&text, " ");
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('>') || line.starts_with('|') || line.is_empty() {
            continue;
        }
        let line = line.trim_start_matches(|c: char| c == '-' || c == '*' || c == '#' || c.is_whitespace());
        let mut start = 0;
        let b = line.as_bytes();
        for i in 0..b.len() {
            let end = matches!(b[i], b'.' | b'!' | b'?') && (i + 1 == b.len() || b[i + 1] == b' ');
            if end {
                let s = line[start..=i].trim();
                if !s.is_empty() {
                    out.push(s.to_string());
                }
                start = i + 1;
            }
        }
        let s = line[start..].trim();
        if !s.is_empty() {
            out.push(s.to_string());
        }
    }
    out
}

/// Questions, hypotheticals and conditionals are not decisions.
fn tentative(s: &str) -> bool {
    let l = s.to_lowercase();
    let l = l.trim_start_matches(|c: char| !c.is_alphanumeric());
    s.contains('?')
        || l.starts_with("let me ")
        || l.starts_with("now let")
        || [
            "should we",
            "shall we",
            "do we",
            "can we",
            "could we",
            "would",
            "what if",
            "if ",
            "maybe",
            "perhaps",
            "we could",
            "we might",
            "i wonder",
            "whether",
            "option ",
            "alternatively",
            "either",
            "or we",
        ]
        .iter()
        .any(|p| l.starts_with(p))
        || l.contains(" if we ")
        || l.contains("we could ")
        || l.contains("we might ")
}

fn clause_after<'a>(s: &'a str, words: &[&str]) -> Option<&'a str> {
    let lower = s.to_lowercase();
    words
        .iter()
        .filter_map(|w| lower.find(w).map(|i| i + w.len()))
        .min()
        .map(|i| s[i..].trim().trim_end_matches(['.', '!']).trim())
        .filter(|c| c.split_whitespace().count() >= 2)
}

fn alternatives(s: &str) -> Vec<String> {
    let lower = s.to_lowercase();
    let mut out = Vec::new();
    for marker in ["instead of ", "rather than ", " over ", "from "] {
        if let Some(i) = lower.find(marker) {
            let rest = &s[i + marker.len()..];
            let stop = rest.to_lowercase().find([',', '.', ';', '(']).unwrap_or(rest.len());
            let mut alt = &rest[..stop];
            for end in [" to ", " for ", " because ", " since ", " as ", " in ", " so ", " and "] {
                if let Some(j) = alt.to_lowercase().find(end) {
                    alt = &alt[..j];
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
fn summarize(s: &str) -> String {
    let mut t = s.trim().trim_end_matches(['.', '!']).to_string();
    for prefix in ["ok, ", "ok ", "okay, ", "alright, ", "so ", "i think ", "yes, ", "great, ", "let's ", "lets "] {
        if t.to_lowercase().starts_with(prefix) {
            t = t[prefix.len()..].to_string();
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

const REASON_WORDS: &[&str] =
    &[" because ", " since ", " so that ", " due to ", " as it ", " as there", " which means "];

/// Decisions in one message. `previous` is the message before it in the session, used to
/// recognise an accepted proposal (the user approving what the assistant laid out).
pub fn extract(turn: Turn<'_>, previous: Option<Turn<'_>>) -> Vec<Extracted> {
    let sents = sentences(turn.text);
    let mut out: Vec<Extracted> = Vec::new();
    for (i, s) in sents.iter().enumerate() {
        if s.split_whitespace().count() < 3 || tentative(s) {
            continue;
        }
        let Some(rule) = rules().iter().find(|r| r.re.is_match(s)) else { continue };
        let mut reasoning = clause_after(&format!(" {s}"), REASON_WORDS).map(str::to_string);
        let mut content = s.clone();
        if reasoning.is_none()
            && let Some(next) = sents.get(i + 1)
            && REASON_WORDS.iter().any(|w| format!(" {} ", next.to_lowercase()).contains(w.trim_end()))
        {
            reasoning = Some(next.trim_end_matches('.').to_string());
            content = format!("{s} {next}");
        }
        let alternatives = alternatives(s);
        let mut confidence = rule.confidence;
        if reasoning.is_some() {
            confidence += 0.05;
        }
        if !alternatives.is_empty() {
            confidence += 0.05;
        }
        if turn.role == Role::Assistant {
            confidence -= 0.1;
        }
        out.push(Extracted {
            summary: summarize(s),
            content,
            alternatives,
            reasoning,
            confidence: confidence.clamp(0.05, 0.95),
            status: rule.status,
            rule: rule.name,
        });
    }
    if out.is_empty()
        && turn.role == Role::User
        && let Some(prev) = previous
        && prev.role == Role::Assistant
        && let Some(d) = accepted(turn.text, prev.text)
    {
        out.push(d);
    }
    out
}

/// "Yes, go with option 2" after the assistant recommended something: the recommendation is
/// the decision.
fn accepted(reply: &str, proposal: &str) -> Option<Extracted> {
    static APPROVE: OnceLock<Regex> = OnceLock::new();
    static PROPOSE: OnceLock<Regex> = OnceLock::new();
    let approve = APPROVE.get_or_init(|| {
        re(r"(?i)^\s*(yes|yep|yeah|ok|okay|sure|agreed|sounds good|looks good|lgtm|perfect|great|do it|go ahead|let'?s do (it|that)|go with (it|that|option \d|the (first|second|third)))\b")
    });
    let propose = PROPOSE.get_or_init(|| {
        re(r"(?i)\b(i'?d recommend|i recommend|i suggest|i'?d suggest|my recommendation|i'?d go with|i would go with|the best option is|i propose|recommended:?)\b")
    });
    let reply_words = reply.split_whitespace().count();
    if reply_words > 25 || !approve.is_match(reply) {
        return None;
    }
    let s = sentences(proposal).into_iter().find(|s| propose.is_match(s))?;
    let reasoning = clause_after(&format!(" {s}"), REASON_WORDS).map(str::to_string);
    Some(Extracted {
        summary: format!("Accepted proposal: {}", summarize(&propose.replace(&s, "").replace("  ", " "))),
        content: format!("{s} — {}", reply.trim()),
        alternatives: alternatives(&s),
        reasoning,
        confidence: 0.7,
        status: DecisionStatus::Active,
        rule: "accepted_proposal",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(t: &str) -> Vec<Extracted> {
        extract(Turn { role: Role::User, text: t }, None)
    }

    #[test]
    fn seed_example() {
        let d = user(
            "Let's use chromem instead of Qdrant for the embedded vectorstore. It simplifies deployment since there's no external dependency.",
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].summary, "Use chromem instead of Qdrant for the embedded vectorstore");
        assert_eq!(d[0].alternatives, ["Qdrant"]);
        assert_eq!(d[0].reasoning.as_deref(), Some("It simplifies deployment since there's no external dependency"));
        assert!(d[0].confidence >= 0.9);
    }

    #[test]
    fn positives() {
        for (t, rule) in [
            ("We decided to keep the monolith for now.", "decided"),
            ("Chose redb over SQLite because it is pure Rust.", "chose"),
            ("Switching from Jest to Vitest for faster runs.", "switch"),
            ("We'll go with Postgres for the analytics store.", "will_choice"),
            ("We should not use global state in request handlers.", "negation"),
            ("Use Redis rather than Postgres for sessions.", "rather_than"),
            ("Going forward we squash-merge every pull request.", "going_forward"),
            ("We tried Redis pub/sub but it didn't work, reverting to polling.", "rejected"),
        ] {
            let d = user(t);
            assert_eq!(d.len(), 1, "{t}: {d:?}");
            assert_eq!(d[0].rule, rule, "{t}");
        }
        assert_eq!(
            user("We tried Redis pub/sub but it didn't work, reverting to polling.")[0].status,
            DecisionStatus::Rejected
        );
        let alt = &user("Chose redb over SQLite because it is pure Rust.")[0];
        assert_eq!(alt.alternatives, ["SQLite"]);
        assert_eq!(alt.reasoning.as_deref(), Some("it is pure Rust"));
    }

    #[test]
    fn negatives() {
        for t in [
            "Should we use Redis instead of Postgres?",
            "If we switch from REST to gRPC, latency might drop.",
            "Maybe we could go with SQLite later.",
            "Now let's run the tests and see what fails.",
            "Let's check the logs first.",
            "```\nlet's use unsafe here instead of a lock\n```",
            "> We decided to drop Windows support.",
            "The error says \"we decided to refuse the connection because the certificate is invalid\".",
            "What if we used a queue rather than polling?",
        ] {
            assert!(user(t).is_empty(), "{t}: {:?}", user(t));
        }
    }

    #[test]
    fn accepted_proposal() {
        let prev = Turn {
            role: Role::Assistant,
            text: "Two options: a cron job, or a queue worker. I'd recommend the queue worker because retries come for free.",
        };
        let d = extract(Turn { role: Role::User, text: "Yes, go with that." }, Some(prev));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].rule, "accepted_proposal");
        assert!(d[0].summary.to_lowercase().contains("queue worker"), "{}", d[0].summary);
        assert!(extract(Turn { role: Role::User, text: "Why?" }, Some(prev)).is_empty());
    }
}
