//! Heuristic decision extraction (`extraction_method: heuristic`). Pure: messages in,
//! decisions out. Each rule below cites a sentence it is meant to catch.
//!
//! Text is first stripped of what must never produce a decision: fenced code blocks, quoted
//! lines (`> …`), long quoted strings, and tool output (not part of message text). Sentences
//! that are questions, hypotheticals or plans of action ("now let's run the tests") are skipped.

use std::sync::OnceLock;

use crate::text::pattern::Pattern;

use crate::doc::{DecisionStatus, Role};
use crate::lexical::tokenize::is_cjk;

pub use super::message::{
    CALIBRATION, CALIBRATION_FEATURES, InContext, MESSAGE_FEATURE_COUNT, MessageFeatures, MessageScorer, SentenceView,
    TRUSTED_CONFIDENCE, calibration_features, confidence, message_feature_names, message_features, naming_class,
};
use super::replies;
use super::scorer::features;
pub use super::scorer::{FEATURES, Features, Scorer, SentenceContext};
pub use super::sentences::{Extracted, sentences};
use super::sentences::{REASON_WORDS, alternatives, clause_after, marked_sentences, re, summarize};

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
    re: Pattern,
    confidence: f32,
    status: DecisionStatus,
    who: Who,
}

/// Verbs that make "let's …" a choice rather than a plan of action.
const CHOICE: &str = r"(?:use|go with|go back to|switch(?:\s+\w+){0,4}\s+to|switch back to|revert to|migrate to|adopt|keep|leave|stick with|stay with|continue (?:to use|using|with)|pick|choose|replace|rely on|standardi[sz]e on|store|put|build it with|write it in|implement it (?:with|in)|focus on)";

/// Which authors a rule applies to.
#[derive(Clone, Copy, PartialEq)]
enum Who {
    Anyone,
    /// First-person preferences ("I don't want …", "I'll use …") decide something when the user
    /// says them; from the assistant they usually narrate the next step.
    User,
}

fn rules() -> &'static [Rule] {
    static R: OnceLock<Vec<Rule>> = OnceLock::new();
    R.get_or_init(|| {
        let r = |name, pat: &str, confidence, status, who| Rule {
            name,
            re: Pattern::new(&format!("(?i){pat}")).expect("valid rule"),
            confidence,
            status,
            who,
        };
        use DecisionStatus::*;
        use Who::*;
        vec![
            // "We tried Redis pub/sub, it didn't work, reverting to polling."
            r("rejected", r"\b(?:tried|attempted)\b.{0,80}\b(?:didn'?t work|did not work|doesn'?t work|failed|broke)\b", 0.7, Rejected, Anyone),
            // "Reverting the switch to gRPC; going back to REST." / "ugh, revert the header to the original"
            r("reverted", r"^(?:\w+,?\s+)?(?:we(?:'re| are| will|'ll)?\s+)?(?:revert(?:ing)?|roll(?:ing)? back|go(?:ing)? back to|switch(?:ing)? back to)\b", 0.65, Active, Anyone),
            // "We decided to keep the monolith for now." / "Decision: keep /admin." / "The token approach was decided."
            r("decided", r"\b(?:we|i|team|user)\s+(?:have\s+|had\s+)?decided\b|\bdecision\s*(?:is|was|:)|\bdecided (?:to|on|against)\b|\b(?:was|were|been) decided\b", 0.9, Active, Anyone),
            // "Chose redb over SQLite because it is pure Rust."
            r("chose", r"(?:^|:\s*|\b(?:we|i|user|team|they)\s+(?:\w+\s+)?)(?:chose|picked|opted for|settled on|went with|are going with|'re going with)\b", 0.85, Active, Anyone),
            // "Switching from Jest to Vitest for speed."
            r("switch", r"(?:^|\b(?:we|i|to|been|is|are|was|were|'re|'ll|will|just|now)\s+)(?:switch(?:ing|ed)?|migrat(?:e|ing|ed)|mov(?:e|ing|ed))\s+(?:\w+\s+){0,3}from\s+\S+.{0,40}?\bto\b", 0.8, Active, Anyone),
            // "Let's use chromem instead of Qdrant for the embedded vectorstore."
            r("lets_choice", &format!(r"\blet'?s\s+(?:just\s+)?{CHOICE}\b"), 0.85, Active, Anyone),
            // "We'll go with Postgres."
            r("will_choice", &format!(r"\b(?:we'?ll|we will|we are going to|we're going to)\s+(?:just\s+)?{CHOICE}\b"), 0.75, Active, Anyone),
            // "I'll use the standard option then, it is known to work."
            r("i_will_choice", r"\b(?:i'?ll|i will)\s+(?:just\s+)?(?:use|go with|stick with|keep|stay with|make|switch to|change)\b.*\b(?:then|instead|rather than|because|since|so that|so both|so the)\b", 0.7, Active, Anyone),
            // "Fix is to drop NLA and let Windows show its own login screen."
            r("fix_is_to", r"^(?:the\s+)?(?:fix|solution|chosen fix) is to\b", 0.6, Active, Anyone),
            // "I will use the desktop app for work and the web app for the rest."
            r("i_will_use", r"\b(?:i'?ll|i will|i'?m going to|i am going to)\s+(?:just\s+|only\s+)?(?:use|go with|stick with|stay with|scrap|drop|abandon)\b", 0.7, Active, User),
            // "We should not use global state in handlers." / "We shouldn't be committing the key."
            r("negation", r"\b(?:we|you)\s+(?:should(?:n'?t| not)|must(?:n'?t| not))\s+(?:be\s+)?\w+|\b(?:we|you)\s+(?:won'?t|will not)\s+(?:use|add|store|call|rely on|depend on)\b|\b(?:don'?t|never|avoid)\s+(?:use|using|store|storing|call|calling)\b", 0.7, Active, Anyone),
            // "I think I prefer the natural tooltip positioning before popper.js."
            r("prefer", r"^(?:\w+\s+){0,3}?i\s+(?:\w+\s+){0,2}?prefer\b|\band i prefer\b", 0.6, Active, User),
            // "I don't want it to auto-start; I want it launched by hand."
            r("dont_want", r"\b(?:i|we)\s+(?:really\s+|explicitly\s+)?(?:don'?t|dont|do not)\s+(?:want|need)\b", 0.6, Active, User),
            // "We can drop the export feature, it's a non-issue."
            r("abandon", r"\b(?:we can|we'?ll|let'?s|i'?ll|going to)\s+(?:just\s+)?(?:abandon|drop|scrap|ditch|skip)\s+(?:it|this|that|the)\b", 0.65, Rejected, Anyone),
            // "The staging database is not needed."
            r("not_needed", r"\b(?:is|are)\s+not\s+needed\b|\b(?:isn'?t|aren'?t)\s+needed\b|\bit'?s\s+not\s+needed\b|\b(?:not needed anymore|no longer needed)\b", 0.55, Rejected, User),
            // "Leave it as is then."
            r("leave_as_is", r"\bleave (?:it|them|this|that) (?:as is|alone)\b", 0.6, Active, Anyone),
            // "Use Redis rather than Postgres for sessions." / "The job needs to use make instead of npm."
            r("rather_than", &format!(r"^(?:we\s+(?:should\s+)?|i\s+(?:want to|prefer to)\s+|please\s+)?(?:{CHOICE}|prefer)\b.*\b(?:rather than|instead of)\b|\b(?:should|must|needs? to|will|'ll|going to)\s+(?:\w+\s+){{0,6}}?(?:use|go with|switch to|keep|put)\b.*\b(?:rather than|instead)\b"), 0.6, Active, Anyone),
            // "Used a prefix match instead of a regex." / "Changed to use npm install instead, which is more reliable."
            r("used_instead", r"(?:^|:\s*)(?:used|changed (?:it |this )?to use|switched to|replaced \S+ with)\b.*\binstead\b|\bchanged to use\b", 0.65, Active, Anyone),
            // "Better approach: keep the placeholder in the repo."
            r("approach", r"^(?:better|simpler|safer|final|chosen) approach\s*:", 0.6, Active, Anyone),
            // "X seems like the best fit." / "Option A is the right choice."
            r("best_fit", r"\b(?:is|seems like|looks like) the (?:best|right) (?:fit|choice)\b|是(?:正确|最合适)的?选择", 0.6, Active, Anyone),
            // "Use Postgres, and Docker Compose for development."
            r("imperative_use", r"^(?:please\s+)?use\s+[\w.-]+(?:,|\s+for\s)", 0.55, Active, User),
            // "Going forward we'll squash-merge every PR."
            r("going_forward", r"\b(?:going forward|from now on|from here on)\b", 0.6, Active, Anyone),
            // "Let's leave the admin pages for later; the main site comes first."
            r("defer", r"\b(?:let'?s|we'?ll|we will)\b.{0,60}\b(?:at a later date|later on|for later)\b", 0.6, Active, Anyone),
            // "Google Analytics will be implemented." / "It will always use the staging key."
            r("will_be", r"\b(?:will|shall)\s+(?:always|never)\s+\w+|\bwill be implemented\b", 0.6, Active, User),
            // Chinese: "改用 X" (switch to X), "还用上次的 X" (keep using X), "决定…" (decided), "应该…用 X"
            r("cjk_choice", r"(?:决定|采用|改用|就用|还用|继续用|统一用|不要用|别用|应该(?:都|只|统一|还是|继续|直接|改|换)?用|应该把.{0,20}?用|改为|改成|换成|替换为|统一为|默认(?:值)?为|的方针|不再使用|弃用)", 0.7, Active, Anyone),
            // Japanese: "X にします" (we'll go with X), "X に決めました" (decided on X), "X を使うことにした"
            r("ja_choice", r"(?:にします|に決め|ことにし(?:ます|た)|で行きます|でいきます|を採用|採用方針|に統一|へ移行|に移行し|を廃止|という方針|方針[:：]|決定[:：])", 0.7, Active, Anyone),
            // Korean: "X로 변경" (change to X), "하기로 했다" (decided to), "결정:" (decision:), "X 말고 Y" (Y, not X)
            r("ko_choice", r"(?:(?:로|으로)\s*(?:변경|바꿔|바꾸|교체|전환|통일|가자|하자|결정)|하기로\s*(?:했|함|하자|결정)|결정[:：]|말고\s)", 0.7, Active, Anyone),
        ]
    })
}

/// Questions, hypotheticals and conditionals are not decisions.
fn tentative(s: &str) -> bool {
    let l = s.to_lowercase();
    let l = l.trim_start_matches(|c: char| !c.is_alphanumeric());
    s.contains('?')
        || s.contains('？')
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
            "want me to",
            "do you want",
        ]
        .iter()
        .any(|p| l.starts_with(p))
        || l.contains(" if we ")
        || l.contains("we could ")
        || l.contains("we might ")
        || l.contains("would you like")
        || l.contains("what do you think")
        || l.contains(" but maybe ")
}

/// "Let me …" narrates the next step; it decides something only when it replaces an earlier
/// course for a stated reason ("let me put it in priv/ instead, since that is what ships").
fn narration(s: &str) -> bool {
    let l = s.to_lowercase();
    let l = l.trim_start_matches(|c: char| !c.is_alphanumeric());
    let l = l.strip_prefix("ok, ").or_else(|| l.strip_prefix("now ")).unwrap_or(l);
    l.starts_with("let me ") || l.starts_with("i'll now ") || l.starts_with("next, ")
}

/// The assistant narrating its next step in Chinese ("让我改用另一种方法", "我将调用…", "接下来…"):
/// a step of work, like "let me …".
fn cjk_narration(s: &str) -> bool {
    static R: OnceLock<Pattern> = OnceLock::new();
    R.get_or_init(|| {
        re(r"^(?:好的?[，,]\s*|现在|那么)?(?:我来|我先|我将|我会|我现在|我要|接下来|下面)|让我(?:[^们]|$)")
    })
    .is_match(s.trim_start())
}

fn narrated_choice(s: &str) -> bool {
    static R: OnceLock<Pattern> = OnceLock::new();
    R.get_or_init(|| re(r"(?i)\binstead\b.*\b(?:since|because|as it|so that)\b")).is_match(s)
}

/// One sentence of a message that may state a decision: what the rules made of it (a rule's
/// decision, or the sentence as a decision if no rule matched) and its features for the
/// [`Scorer`]. Questions, hypotheticals, narrated steps of work and options laid out before a
/// question are never candidates.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The decision it would be (`content` holds the sentence); `confidence` is the matching rule's, 0 when none matched.
    pub decision: Extracted,
    /// What the scorer reads.
    pub features: Features,
}

/// The sentences of `turn` that may state a decision (see [`Candidate`]); `previous` is the
/// message before it in the session.
pub fn candidates(turn: Turn<'_>, previous: Option<Turn<'_>>) -> Vec<Candidate> {
    let marked = marked_sentences(turn.text);
    // An assistant message that ends by asking something lays its list items out as options,
    // not choices.
    let asks =
        turn.role == Role::Assistant && marked.iter().rev().take(3).any(|(s, _)| s.contains('?') || s.contains('？'));
    let after_question = previous.is_some_and(|p| {
        p.role == Role::Assistant && marked_sentences(p.text).iter().rev().take(2).any(|(s, _)| tentative(s))
    });
    let sents: Vec<String> = marked.iter().map(|(s, _)| s.clone()).collect();
    let words = turn.text.split_whitespace().count() + turn.text.chars().filter(|c| is_cjk(*c)).count();
    let mut out = Vec::new();
    for (i, (s, is_item)) in marked.iter().enumerate() {
        if (s.split_whitespace().count() < 3 && s.chars().count() < 8) || tentative(s) || (asks && *is_item) {
            continue;
        }
        let narrated = narration(s);
        if (narrated && !narrated_choice(s)) || (turn.role == Role::Assistant && cjk_narration(s)) {
            continue;
        }
        let found = rules()
            .iter()
            .filter(|r| r.who == Who::Anyone || turn.role == Role::User)
            .find_map(|r| r.re.find(s).map(|m| (r, m.start())));
        let found = found.or_else(|| narrated.then(|| (narrated_rule(), 0)));
        let context = SentenceContext {
            user: turn.role == Role::User,
            rule: found.map(|(r, _)| r.confidence),
            rule_cjk: found.is_some_and(|(r, _)| matches!(r.name, "cjk_choice" | "ja_choice" | "ko_choice")),
            rule_user_only: found.is_some_and(|(r, _)| r.who == Who::User),
            narrated: found.is_some_and(|(r, _)| r.name == "instead_because"),
            item: *is_item,
            asks,
            index: i,
            sentences: marked.len(),
            after_question,
            words,
        };
        let features = features(s, &context);
        let (name, status, confidence, at) =
            found.map_or((UNMATCHED, DecisionStatus::Active, 0.0, 0), |(r, at)| (r.name, r.status, r.confidence, at));
        let mut reasoning = clause_after(&format!(" {s}"), REASON_WORDS).map(str::to_string);
        let mut content = s.clone();
        if reasoning.is_none()
            && let Some(next) = sents.get(i + 1)
            && REASON_WORDS.iter().any(|w| format!(" {} ", next.to_lowercase()).contains(w.trim_end()))
        {
            reasoning = Some(next.trim_end_matches('.').to_string());
            content = format!("{s} {next}");
        }
        let decision = Extracted {
            summary: summarize(s, at),
            content,
            alternatives: alternatives(s),
            reasoning,
            confidence,
            status,
            rule: name,
        };
        out.push(Candidate { decision, features });
    }
    out
}

/// Decisions in one message. `previous` is the message before it in the session, used to
/// recognise an accepted proposal (the user approving what the assistant laid out) and a pick
/// among the options the assistant offered. The default [`Scorer`] decides.
pub fn extract(turn: Turn<'_>, previous: Option<Turn<'_>>) -> Vec<Extracted> {
    extract_with(&Scorer::default(), turn, previous)
}

/// [`extract`] with a given scorer: each candidate sentence whose probability reaches the
/// scorer's threshold is a decision with that probability as its confidence. A user's message
/// where no rule-matched sentence is kept is also read as a reply to the assistant's message
/// before it, and a decision the reply makes replaces the sentences kept on the scorer's word
/// alone ("go with that" says less than the proposal it accepts).
pub fn extract_with(scorer: &Scorer, turn: Turn<'_>, previous: Option<Turn<'_>>) -> Vec<Extracted> {
    let kept: Vec<Extracted> = candidates(turn, previous)
        .into_iter()
        .filter_map(|c| {
            let p = scorer.probability(&c.features);
            // A heuristic is never certain: 1 is kept for decisions stored on purpose.
            (p >= scorer.threshold).then(|| Extracted { confidence: p.min(0.99), ..c.decision })
        })
        .collect();
    settle(kept, || match previous {
        Some(prev) if turn.role == Role::User && prev.role == Role::Assistant => {
            replies::decided_by_reply(turn.text, prev.text)
        }
        _ => None,
    })
}

/// A message's decisions from its kept candidates: when no rule matched any of them, the
/// decision its reading as a reply makes (`reply`, asked only then), if any, replaces them.
pub fn settle(kept: Vec<Extracted>, reply: impl FnOnce() -> Option<Extracted>) -> Vec<Extracted> {
    if kept.iter().all(|d| d.rule == UNMATCHED)
        && let Some(d) = reply()
    {
        return vec![d];
    }
    kept
}

/// The rule name of a candidate no rule matched.
pub const UNMATCHED: &str = "scored";

/// The rule for "let me do Y instead, since …": a change of course with a reason.
fn narrated_rule() -> &'static Rule {
    static R: OnceLock<Rule> = OnceLock::new();
    R.get_or_init(|| Rule {
        name: "instead_because",
        re: re(r"(?i)\binstead\b"),
        confidence: 0.6,
        status: DecisionStatus::Active,
        who: Who::Anyone,
    })
}

/// Decisions in a sequence of messages (one session, in order): each message is read with the
/// one before it, so accepted proposals and picks are found. Returns `(message index, decision)`.
pub fn extract_all<'a>(turns: impl IntoIterator<Item = Turn<'a>>) -> Vec<(usize, Extracted)> {
    let turns: Vec<Turn<'a>> = turns.into_iter().collect();
    let (sentence, message) = (Scorer::default(), MessageScorer::default());
    let mut out = Vec::new();
    for i in 0..turns.len() {
        let previous = i.checked_sub(1).map(|j| turns[j]);
        let reading = Reading::of(turns[i], previous);
        let context = reading.in_context(turns[i], previous, turns.get(i + 1).copied(), i, &sentence);
        let p = message.probability(&message_features(&context));
        if p >= message.threshold {
            out.extend(decide(turns[i], previous, &reading, &sentence, p).into_iter().map(|d| (i, d)));
        }
    }
    out
}

/// What the sentence rules make of one message: its candidate sentences, and the decision a
/// reply rule makes of it (a user's short reply to the assistant).
#[derive(Debug, Clone)]
pub struct Reading {
    /// Its sentences, each with what a rule made of it and its features.
    pub candidates: Vec<Candidate>,
    /// The reply rules' decision, if any.
    pub reply: Option<Extracted>,
}

impl Reading {
    /// Reads one message after the one before it.
    pub fn of(turn: Turn<'_>, previous: Option<Turn<'_>>) -> Reading {
        let reply = match previous {
            Some(prev) if turn.role == Role::User && prev.role == Role::Assistant => {
                replies::decided_by_reply(turn.text, prev.text)
            }
            _ => None,
        };
        Reading { candidates: candidates(turn, previous), reply }
    }

    /// What the sentence rules and `scorer` made of the message.
    pub fn view(&self, scorer: &Scorer) -> SentenceView {
        let probs = self.candidates.iter().map(|c| scorer.probability(&c.features));
        SentenceView {
            rule: self.candidates.iter().map(|c| c.decision.confidence).fold(0.0, f32::max),
            score: probs.clone().fold(0.0, f32::max),
            kept: probs.into_iter().any(|p| p >= scorer.threshold),
            reply: self.reply.is_some(),
        }
    }

    /// The message in its context, as the message model reads it.
    pub fn in_context<'a>(
        &self,
        turn: Turn<'a>,
        previous: Option<Turn<'a>>,
        next: Option<Turn<'a>>,
        index: usize,
        scorer: &Scorer,
    ) -> InContext<'a> {
        InContext {
            role: turn.role,
            text: turn.text,
            previous: previous.map(|p| (p.role, p.text)),
            next: next.map(|n| (n.role, n.text)),
            index,
            sentences: self.view(scorer),
        }
    }
}

/// Messages at most this long (characters) are their own summary when no sentence names the
/// decision better.
const SHORT_MESSAGE: usize = 280;

/// What a message decides, once the message model has said it decides something (with
/// probability `confidence`): the sentences the sentence scorer keeps; else the options the
/// user picked in answer to the assistant's question; else what a reply approves or picks
/// (the reply rules); else, for a short reply, the proposal it answers; else the message's most
/// decision-like sentence, or the message itself when it is short.
pub fn decide(
    turn: Turn<'_>,
    previous: Option<Turn<'_>>,
    reading: &Reading,
    scorer: &Scorer,
    probability: f32,
) -> Vec<Extracted> {
    name(turn, previous, reading, scorer, probability)
        .into_iter()
        .map(|d| Extracted { confidence: confidence(probability, d.rule).min(0.99), ..d })
        .collect()
}

/// What [`decide`] names, before each decision is given its confidence.
fn name(
    turn: Turn<'_>,
    previous: Option<Turn<'_>>,
    reading: &Reading,
    scorer: &Scorer,
    confidence: f32,
) -> Vec<Extracted> {
    let kept: Vec<Extracted> = reading
        .candidates
        .iter()
        .filter(|c| scorer.probability(&c.features) >= scorer.threshold)
        .map(|c| Extracted { confidence, ..c.decision.clone() })
        .collect();
    // A sentence a rule matched names the decision; a reply rule names it better than a
    // sentence no rule matched ("go with that" is the approval of the proposal before it).
    let matched = kept.iter().any(|d| d.rule != UNMATCHED);
    if matched || (!kept.is_empty() && reading.reply.is_none()) {
        return kept;
    }
    let text = turn.text.trim();
    if turn.role == Role::User && text.contains(" → ") {
        return answered(text, confidence);
    }
    if let Some(d) = &reading.reply {
        return vec![Extracted { confidence, ..d.clone() }];
    }
    let _ = previous;
    let best = reading
        .candidates
        .iter()
        .max_by(|a, b| scorer.probability(&a.features).total_cmp(&scorer.probability(&b.features)));
    let (summary, content) = match best {
        Some(c) if text.chars().count() > SHORT_MESSAGE => (c.decision.summary.clone(), c.decision.content.clone()),
        _ => {
            let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            (crate::text::prefix_chars(&one_line, SHORT_MESSAGE).to_string(), text.to_string())
        }
    };
    let alternatives = best.map(|c| c.decision.alternatives.clone()).unwrap_or_default();
    let reasoning = best.and_then(|c| c.decision.reasoning.clone());
    let status = best.map_or(DecisionStatus::Active, |c| c.decision.status);
    vec![Extracted { summary, content, alternatives, reasoning, confidence, status, rule: "message" }]
}

/// The choices of an answer to the assistant's questions (`question → answer (not: a; b)`
/// lines): one decision per question answered, the options not taken as its alternatives.
fn answered(text: &str, confidence: f32) -> Vec<Extracted> {
    text.lines()
        .filter_map(|line| {
            let (question, rest) = line.split_once(" → ")?;
            let (answer, others) = match rest.split_once(" (not: ") {
                Some((a, o)) => (a.trim(), o.trim_end_matches(')')),
                None => (rest.trim(), ""),
            };
            let alternatives = others.split("; ").filter(|o| !o.is_empty()).map(str::to_string).collect();
            Some(Extracted {
                summary: format!("{answer} ({})", question.trim()),
                content: line.to_string(),
                alternatives,
                reasoning: None,
                confidence,
                status: DecisionStatus::Active,
                rule: "answered_question",
            })
        })
        .collect()
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

    fn reply(prev: &str, text: &str) -> Vec<Extracted> {
        extract(Turn { role: Role::User, text }, Some(Turn { role: Role::Assistant, text: prev }))
    }

    #[test]
    fn picks_among_offered_options() {
        let prev = "Which layout do you prefer:\n- **A** — tabs on the left\n- **B** — tabs on top\n- **C** — no tabs, a command palette";
        let d = reply(prev, "B and make them smaller");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].rule, "picked_option");
        assert_eq!(d[0].summary, "Chose: Tabs on top");
        assert_eq!(d[0].alternatives.len(), 2);
        let d = reply(prev, "second option please");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].summary, "Chose: Tabs on top");
        let d = reply("I tried three fonts: mono, serif and rounded. Which one reads best?", "rounded looks the best");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].summary, "Chose: Rounded");
        // Naming something the assistant never offered is not a pick.
        assert!(reply("Which font reads best: mono or serif?", "comic sans looks the best").is_empty());
        // Numbered answers to numbered questions are answers, not picks.
        let prev = "A few questions:\n1. What hostname?\n2. Which timezone?";
        assert!(reply(prev, "1. atlas 2. UTC").is_empty());
    }

    #[test]
    fn answers_an_either_or_question() {
        let prev = "Should the banner read the location automatically, or use a fixed city?";
        let d = reply(prev, "yes it should read the location");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].rule, "answered_either_or");
        assert!(reply(prev, "why does it matter?").is_empty());
        assert!(reply(prev, "thanks").is_empty());
    }

    #[test]
    fn options_in_a_question_are_not_choices() {
        let t =
            "Two ways forward:\n1. Revert to the old parser\n2. Keep the new one and patch it\n\nWhich do you want?";
        assert!(extract(Turn { role: Role::Assistant, text: t }, None).is_empty());
    }

    #[test]
    fn narration_decides_only_with_a_reason() {
        let a = |t| extract(Turn { role: Role::Assistant, text: t }, None);
        assert!(a("Let me use grep instead and read the files.").is_empty());
        let d = a("Let me put the script in priv/ instead since that is what the release ships.");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].rule, "instead_because");
        assert!(a("I'll use replace_all for both patterns.").is_empty());
        assert_eq!(a("I'll use the standard option then, it is known to work.")[0].rule, "i_will_choice");
    }

    #[test]
    fn first_person_preferences_count_from_the_user_only() {
        assert_eq!(user("I don't want a splash screen at startup.")[0].rule, "dont_want");
        assert!(extract(Turn { role: Role::Assistant, text: "I don't want to guess the path." }, None).is_empty());
    }

    #[test]
    fn cjk_sentences_are_split_and_read() {
        let d = user("测试通过了。下一轮实验还用上次的配置。");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].rule, "cjk_choice");
        assert_eq!(user("このブランチ名にします。")[0].rule, "ja_choice");
        assert!(user("还用上次的配置吗？").is_empty());
    }

    #[test]
    fn chinese_narration_and_written_out_thinking_decide_nothing() {
        let a = |t| extract(Turn { role: Role::Assistant, text: t }, None);
        assert!(a("让我改用另一种方法，创建一个不依赖外部库的版本。").is_empty());
        assert!(a("我将立即调用最强的智能体，采用最稳妥的方式完成任务。").is_empty());
        assert!(
            a("<thinking>\n1. 项目背景：开发商把前期物业从甲公司换成乙公司\n</thinking>\n我来研究这个课题。")
                .is_empty()
        );
        // "Should work now" is not "should use".
        assert!(a("现在主空间的应用应该可以正常使用了。").is_empty());
        assert_eq!(user("你应该把验证的工作用子agent来做。")[0].rule, "cjk_choice");
        // Steps the assistant lists before asking which applies are options, not choices.
        assert!(
            a("怎么解决：\n1. 在身份管理中先改用密码认证登录\n2. 登录后再部署新密钥\n\n你看到的是哪个提示？")
                .is_empty()
        );
    }

    #[test]
    fn a_stated_preference_is_a_decision() {
        let d = user("The page shows on the main app itself, and I prefer this setting.");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].rule, "prefer");
        assert!(extract(Turn { role: Role::Assistant, text: "I prefer to check the logs first." }, None).is_empty());
    }

    #[test]
    fn markdown_and_quoted_phrases() {
        assert_eq!(user("**Decision**: keep the admin panel and drop the dashboard.")[0].rule, "decided");
        assert!(user("Add a doc section explaining \"why we chose this\" for each component.").is_empty());
        let long = "The open question was how to run the job on staging, given that the team has been switched from cron to the queue worker last week for every environment.";
        let d = user(long);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].summary.contains("queue worker"), "{}", d[0].summary);
    }
}
