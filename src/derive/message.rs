//! Whether a message decides something, read with the conversation around it: a logistic
//! regression over features of the message, the one before it (did the assistant offer options,
//! recommend, ask?) and the one after it (did the user reject or approve?), and what the
//! sentence rules and the sentence scorer ([`super::scorer`]) made of it. Pure.
//!
//! The sentence scorer reads one sentence and keeps it or not; many decisions are no sentence
//! of their own ("2", "ok, keep it short", "あいのみではなくあいの実", the user's answer to the
//! assistant's question). This model decides per message, and [`super::extract`] then names what
//! was decided: the sentence the rules found, the option picked, the proposal approved, or the
//! message itself when it is short.
//!
//! The weights are fitted on the development parts of both labelled sets only
//! (`tests/data/decision_labels.json` `dev`/`dev2`, `tests/data/decision_labels_fresh.json`
//! `fresh-dev`) by `tests/integration/decision_eval.rs`, which checks that refitting reproduces
//! them; the held-out parts never shaped a weight or the threshold.

use std::sync::OnceLock;

use crate::text::pattern::Pattern;

use super::sentences::re;
use crate::doc::Role;
use crate::lexical::tokenize::is_cjk;

/// What is read of each message whoever wrote it, once for a user's message and once for an
/// assistant's (the weights differ): see [`FEATURES`].
const PER_ROLE: [&str; 37] = [
    "len<=15",
    "len<=40",
    "len<=100",
    "len<=250",
    "len<=600",
    "len<=1500",
    "len>1500",
    "cjk",
    "approve",
    "pick",
    "negation_first",
    "revert",
    "imperative_choice",
    "convention",
    "question",
    "status",
    "narration",
    "first_person_choice",
    "pasted",
    "activity",
    "many_lines",
    "recommends",
    "after_user",
    "after_options",
    "after_recommendation",
    "after_question",
    "after_activity",
    "next_rejects",
    "next_approves",
    "next_asks",
    "next_is_work",
    "first_message",
    "early_message",
    "rule",
    "sentence_score",
    "sentence_kept",
    "reply_rule",
];

/// Features that do not depend on who wrote the message.
const SHARED: [&str; 7] = [
    "bias",
    "answer",
    "answer_lists_others",
    "answer_short",
    "answer_recommended",
    "short_reply_to_options",
    "short_reply_to_question",
];

/// How many features a message has: the shared ones, then the per-role ones for a user's
/// message, then for an assistant's (names in [`message_feature_names`]).
pub const MESSAGE_FEATURE_COUNT: usize = SHARED.len() + 2 * PER_ROLE.len();

/// One message's features, in the order of [`message_feature_names`].
pub type MessageFeatures = [f32; MESSAGE_FEATURE_COUNT];

/// The features' names: the shared ones, then `user:` and `assistant:` copies of the per-role
/// ones.
pub fn message_feature_names() -> Vec<String> {
    SHARED
        .iter()
        .map(|s| s.to_string())
        .chain(PER_ROLE.iter().map(|s| format!("user:{s}")))
        .chain(PER_ROLE.iter().map(|s| format!("assistant:{s}")))
        .collect()
}

/// What the sentence rules and scorer made of a message ([`super::extract::candidates`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct SentenceView {
    /// The highest confidence of a rule that matched one of its sentences (0 when none).
    pub rule: f32,
    /// The sentence scorer's highest probability over its sentences.
    pub score: f32,
    /// The sentence scorer kept one of its sentences.
    pub kept: bool,
    /// A reply rule made a decision of it.
    pub reply: bool,
}

/// A message with its neighbours, as the model reads it.
#[derive(Debug, Clone, Copy)]
pub struct InContext<'a> {
    /// The message.
    pub role: Role,
    /// Its text.
    pub text: &'a str,
    /// The message before it.
    pub previous: Option<(Role, &'a str)>,
    /// The message after it.
    pub next: Option<(Role, &'a str)>,
    /// Its position in the session (0 first).
    pub index: usize,
    /// What the sentence rules made of it.
    pub sentences: SentenceView,
}

fn rx(cell: &'static OnceLock<Pattern>, pattern: &str) -> &'static Pattern {
    cell.get_or_init(|| re(pattern))
}

macro_rules! detector {
    ($name:ident, $pattern:expr) => {
        fn $name(text: &str) -> bool {
            static R: OnceLock<Pattern> = OnceLock::new();
            rx(&R, $pattern).is_match(text)
        }
    };
}

detector!(
    approves,
    r"(?i)^\s*(?:yes|yep|yeah|ok(?:ay)?|sure|sounds good|lgtm|go ahead|do it|proceed|approved?|agreed?|perfect|great|that works|let'?s do (?:it|that)|好的?|可以|行|对|是的|嗯|没问题|同意|就这样|按(?:你|这个)|はい|お願い|進めて|それで|いいね|了解|네|좋아|진행|그래|ㅇㅋ)"
);
detector!(
    picks,
    r"(?i)^\s*(?:\(?[1-9a-d１-９][).、．:]?|option\s*[1-9a-d]|[a-d]案|第[一二三四1-4]|the (?:first|second|third|last)(?: one)?|(?:first|second|third) (?:one|option)|#?[1-9]\s*(?:please|pls)?)\s*$|^\s*[1-9a-d１-９]\s*[,，、 ]|^\s*(?:option|方案|案|选项)\s*[a-d1-9]"
);
detector!(
    negation_first,
    r"(?i)^\s*(?:no\b|nope|don'?t|do not|not\b|never|stop|wrong|nah|不要|别|不用|不对|错了|不是|いや|やめ|違う|아니|하지\s*마|말고)"
);
detector!(
    reverts,
    r"(?i)\b(?:revert|roll ?back|undo|go back to|restore)\b|回滚|还原|恢复|撤销|改回|戻して|元に戻|되돌|원래대로|롤백"
);
detector!(
    imperative_choice,
    r"(?i)\b(?:use|switch to|change (?:it )?to|make (?:it|them|this)|set (?:it )?to|replace|rename|instead of|rather than|prefer|go with|stick with|keep)\b|改成|改为|换成|设为|设置为|使用|用.{1,12}(?:吧|来|代替)|采用|统一|にして|に変更|を使|に統一|で(?:お願い|行|いこ)|に置き換|로\s*(?:바꿔|변경|해)|으로\s*(?:바꿔|변경|해)|사용|쓰자|로 하자"
);
detector!(
    convention,
    r"(?i)\b(?:always|never|from now on|going forward|every time|in future|by default|must|convention|rule)\b|每次|以后|始终|一律|务必|必须|总是|默认|必ず|常に|今後|毎回|ルール|すること|항상|앞으로|반드시|매번"
);
detector!(
    question,
    r"(?i)[?？]|\b(?:should (?:we|i)|can (?:we|you)|could (?:we|you)|would|what|why|how|which|is there|do you|does)\b|吗|呢|怎么|为什么|如何|哪|ですか|でしょうか|どう|なぜ|어떻게|왜|나요|습니까"
);
detector!(
    status,
    r"(?i)^\s*(?:done|completed?|fixed|updated|all (?:tests )?pass|success|summary|here'?s what|i'?ve (?:updated|made|added|fixed|created)|the (?:changes|fix)|✅|已完成|完成|已(?:修复|更新|添加)|修改完成|完了しました|完了|修正しました|更新しました|완료|수정했|변경했)"
);
detector!(
    narration,
    r"(?i)^\s*(?:let me|i'?ll (?:now|start|first|check|look|read|run|update|create|add|fix)|now (?:let|i)|first,? (?:let|i)|next,? i|i will now|让我|我来|我先|现在(?:让|我)|接下来|まず|では|확인해|먼저)"
);
detector!(
    first_person_choice,
    r"(?i)\b(?:i(?:'ll| will)? (?:use|go with|chose|choose|pick|opt for|switch(?:ed)? to)|i decided|we(?:'ll| will) use|decided to|going with|chose|opted for|instead of|rather than|better (?:approach|option)|the (?:best|right) (?:choice|approach))\b|我(?:将|会|决定)?(?:使用|采用|改用|选择)|决定|采用|改用|を採用|にします|に決め|ことにし|로 (?:변경|결정)|하기로"
);
detector!(
    pasted,
    r"(?im)```|^\s*(?:traceback|error:|at [\w.]+\(|\$ |\[\d{4}-)|<(?:ide_|command-|local-command|system-reminder)"
);
detector!(activity, r"^(?:edited|created|deleted|read|committed|moved|renamed) ");
detector!(
    offers,
    r"(?im)(?:^|\n)\s*(?:\d+[.)]|[-*]\s*\*\*?(?:option|方案|案)|option [a-d1-9]|\*\*[a-d1-9][.)]|[a-d][.)]\s)|which (?:one|option|would you)|would you (?:like|prefer)|do you want|shall i|should i|prefer|哪(?:个|种|一)|选择|方案|どちら|どれ|いかがでしょう|よろしいでしょうか|어느|어떤|할까요|원하시"
);
detector!(
    recommends,
    r"(?i)\b(?:i (?:would )?recommend|i suggest|recommended|my recommendation|i'd go with|best option)\b|推荐|建议|おすすめ|推奨|추천|권장"
);
detector!(ide_context, r"(?s)^\s*(?:<ide_[a-z_]+>.*?</ide_[a-z_]+>\s*)+");
detector!(recommended_option, r"(?i)推荐|recommended|推奨|추천");

/// The text without the editor context some clients put before what the user typed.
fn typed(text: &str) -> &str {
    static R: OnceLock<Pattern> = OnceLock::new();
    let r = rx(&R, r"(?s)^\s*(?:<ide_[a-z_]+>.*?</ide_[a-z_]+>\s*)+");
    match r.find(text) {
        Some(m) => text.get(m.end()..).unwrap_or(text),
        None => text,
    }
}

/// The answers of an answer message (`question → answer (not: …)` lines): the answer parts.
pub(crate) fn answers(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.split_once(" → ").map(|(_, a)| a))
        .map(|a| a.split(" (not: ").next().unwrap_or(a).trim())
        .collect()
}

/// A prefix of at most `n` characters.
fn head(text: &str, n: usize) -> &str {
    crate::text::prefix_chars(text, n)
}

/// A suffix of at most `n` characters.
fn tail(text: &str, n: usize) -> &str {
    let count = text.chars().count();
    let skip = count.saturating_sub(n);
    text.char_indices().nth(skip).map_or(text, |(i, _)| text.get(i..).unwrap_or(text))
}

/// The features of a message in its context.
pub fn message_features(m: &InContext<'_>) -> MessageFeatures {
    let _ = ide_context;
    let mut f = [0.0_f32; MESSAGE_FEATURE_COUNT];
    let user = m.role == Role::User;
    let base = SHARED.len() + if user { 0 } else { PER_ROLE.len() };
    let mut set = |name: &str, v: f32| {
        if let Some(i) = PER_ROLE.iter().position(|n| *n == name) {
            f[base + i] = v;
        }
    };
    let text = typed(m.text);
    let len = text.chars().count();
    let first = head(text.trim(), 200);
    for (name, limit) in
        [("len<=15", 15), ("len<=40", 40), ("len<=100", 100), ("len<=250", 250), ("len<=600", 600), ("len<=1500", 1500)]
    {
        if len <= limit {
            set(name, 1.0);
            break;
        }
    }
    if len > 1500 {
        set("len>1500", 1.0);
    }
    let cjk = text.chars().filter(|c| is_cjk(*c)).count();
    set("cjk", f32::from(u8::from(cjk * 5 > len)));
    let flag = |b: bool| f32::from(u8::from(b));
    set("approve", flag(approves(head(first, 40))));
    set("pick", flag(picks(&head(first, 30).to_lowercase())));
    set("negation_first", flag(negation_first(head(first, 20))));
    set("revert", flag(reverts(first)));
    set("imperative_choice", flag(imperative_choice(first)));
    set("convention", flag(convention(first)));
    set("question", flag(question(first)));
    set("status", flag(status(first)));
    set("narration", flag(narration(first)));
    set("first_person_choice", flag(first_person_choice(head(text, 600))));
    set("pasted", flag(pasted(head(text, 400))));
    set("activity", flag(activity(text)));
    set("many_lines", flag(text.matches('\n').count() > 15));
    set("recommends", flag(recommends(head(text, 1500))));
    if let Some((role, p)) = m.previous {
        set("after_user", flag(role == Role::User));
        if role == Role::Assistant {
            let t = tail(p, 600);
            set("after_options", flag(offers(t)));
            set("after_recommendation", flag(recommends(t)));
            set("after_question", flag(question(tail(p, 200))));
            set("after_activity", flag(activity(p)));
        }
    }
    if let Some((role, n)) = m.next {
        let h = head(n, 60);
        if role == Role::User {
            set("next_rejects", flag(negation_first(h)));
            set("next_approves", flag(approves(h)));
            set("next_asks", flag(question(h)));
        } else if user {
            set("next_is_work", flag(activity(n)));
        }
    }
    set("first_message", flag(m.index == 0));
    set("early_message", flag(m.index > 0 && m.index < 3));
    set("rule", m.sentences.rule);
    set("sentence_score", m.sentences.score);
    set("sentence_kept", flag(m.sentences.kept));
    set("reply_rule", flag(m.sentences.reply));
    // Shared features.
    f[0] = 1.0;
    let is_answer = user && text.contains(" → ");
    if is_answer {
        f[1] = 1.0;
        f[2] = flag(text.contains("(not: "));
        let given = answers(text);
        f[3] = flag(given.iter().all(|a| a.chars().count() <= 25));
        f[4] = flag(given.iter().any(|a| recommended_option(a)));
    }
    if user
        && len <= 40
        && let Some((Role::Assistant, p)) = m.previous
    {
        f[5] = flag(offers(tail(p, 600)));
        f[6] = flag(question(tail(p, 200)));
    }
    f
}

/// The message model: weights over [`message_features`] and the probability at which a message
/// counts as deciding something.
#[derive(Debug, Clone, Copy)]
pub struct MessageScorer {
    /// One weight per feature.
    pub weights: MessageFeatures,
    /// A message decides something when its probability is at least this.
    pub threshold: f32,
}

impl MessageScorer {
    /// The probability that the message decides something.
    pub fn probability(&self, f: &MessageFeatures) -> f32 {
        let z: f32 = self.weights.iter().zip(f).map(|(w, x)| w * x).sum();
        1.0 / (1.0 + (-z).exp())
    }
}

impl Default for MessageScorer {
    /// The weights and threshold fitted on the development parts.
    fn default() -> Self {
        MessageScorer { weights: WEIGHTS, threshold: THRESHOLD }
    }
}

/// Fitted by `tests/integration/decision_eval.rs` on the development parts.
pub const WEIGHTS: MessageFeatures = [
    -3.6157, // bias
    0.8662,  // answer
    1.0785,  // answer_lists_others
    0.7584,  // answer_short
    0.1752,  // answer_recommended
    -0.6129, // short_reply_to_options
    0.4827,  // short_reply_to_question
    0.1052,  // user:len<=15
    0.6667,  // user:len<=40
    0.4052,  // user:len<=100
    1.0541,  // user:len<=250
    1.3383,  // user:len<=600
    0.0057,  // user:len<=1500
    0.3157,  // user:len>1500
    0.8376,  // user:cjk
    0.1974,  // user:approve
    0.7268,  // user:pick
    0.2063,  // user:negation_first
    1.1596,  // user:revert
    0.5616,  // user:imperative_choice
    0.7591,  // user:convention
    -0.5361, // user:question
    -0.0282, // user:status
    -0.4224, // user:narration
    0.1561,  // user:first_person_choice
    -0.1870, // user:pasted
    0.0000,  // user:activity
    -1.1494, // user:many_lines
    0.0662,  // user:recommends
    -0.1434, // user:after_user
    0.1449,  // user:after_options
    0.8222,  // user:after_recommendation
    0.4094,  // user:after_question
    0.6895,  // user:after_activity
    -0.0648, // user:next_rejects
    -0.2245, // user:next_approves
    0.9244,  // user:next_asks
    1.1039,  // user:next_is_work
    -0.4739, // user:first_message
    -0.9069, // user:early_message
    2.5000,  // user:rule
    2.2302,  // user:sentence_score
    0.3554,  // user:sentence_kept
    3.7559,  // user:reply_rule
    -1.1729, // assistant:len<=15
    -1.1767, // assistant:len<=40
    -0.8566, // assistant:len<=100
    -0.2959, // assistant:len<=250
    0.1108,  // assistant:len<=600
    -0.6230, // assistant:len<=1500
    0.1234,  // assistant:len>1500
    0.0460,  // assistant:cjk
    0.3896,  // assistant:approve
    -0.0429, // assistant:pick
    0.5923,  // assistant:negation_first
    0.4488,  // assistant:revert
    0.1516,  // assistant:imperative_choice
    0.6635,  // assistant:convention
    0.1861,  // assistant:question
    -0.1654, // assistant:status
    0.0480,  // assistant:narration
    0.3685,  // assistant:first_person_choice
    -0.4269, // assistant:pasted
    -1.7495, // assistant:activity
    -0.2492, // assistant:many_lines
    -0.2802, // assistant:recommends
    0.4772,  // assistant:after_user
    0.5413,  // assistant:after_options
    0.6272,  // assistant:after_recommendation
    0.3849,  // assistant:after_question
    0.4302,  // assistant:after_activity
    -0.2048, // assistant:next_rejects
    -0.6467, // assistant:next_approves
    -0.4727, // assistant:next_asks
    0.0000,  // assistant:next_is_work
    -0.1087, // assistant:first_message
    -0.2107, // assistant:early_message
    1.9113,  // assistant:rule
    3.2820,  // assistant:sentence_score
    0.7173,  // assistant:sentence_kept
    0.0000,  // assistant:reply_rule
];
/// The threshold with the best F1 out of fold on the development parts.
pub const THRESHOLD: f32 = 0.225;

/// How a decision was named, for its confidence: an explicit rule (0), a pick among offered
/// options or an answer to the assistant's question (1), an approved proposal (2), a sentence
/// the scorer kept that no rule matched (3), the message itself (4).
pub fn naming_class(rule: &str) -> usize {
    match rule {
        "picked_option" | "answered_question" | "answered_either_or" => 1,
        "approved_proposal" | "accepted_proposal" => 2,
        "scored" => 3,
        "message" => 4,
        _ => 0,
    }
}

/// Features of a decision's confidence: the constant, the message model's probability, and the
/// naming class ([`naming_class`]) as five flags.
pub const CALIBRATION_FEATURES: usize = 7;

/// The calibration's inputs for a decision named by `rule` in a message of probability `p`.
pub fn calibration_features(p: f32, rule: &str) -> [f32; CALIBRATION_FEATURES] {
    let mut x = [0.0; CALIBRATION_FEATURES];
    x[0] = 1.0;
    x[1] = p;
    x[2 + naming_class(rule)] = 1.0;
    x
}

/// A decision's confidence: the probability that it is one and that its summary names what was
/// decided, from the message model's probability and how it was named (a logistic fit on the
/// development parts' out-of-fold outcomes, [`CALIBRATION`]).
pub fn confidence(p: f32, rule: &str) -> f32 {
    let z: f32 = CALIBRATION.iter().zip(calibration_features(p, rule)).map(|(w, x)| w * x).sum();
    1.0 / (1.0 + (-z).exp())
}

/// Fitted by `tests/integration/decision_eval.rs` on the development parts' out-of-fold outcomes.
pub const CALIBRATION: [f32; CALIBRATION_FEATURES] = [-0.8567, 1.7311, 0.6018, 0.9169, -0.5149, -0.1922, -0.8115];

/// The lowest confidence at which the development parts' decisions were right at least 90 % of
/// the time out of fold (1.0 when no confidence was): the session-start brief and the prompt
/// hook show extracted decisions at or above it as in force, `convdex decisions` the rest as
/// candidates.
pub const TRUSTED_CONFIDENCE: f32 = 1.00;

#[cfg(test)]
mod tests {
    use super::*;

    fn at(role: Role, text: &str, previous: Option<(Role, &str)>) -> MessageFeatures {
        message_features(&InContext { role, text, previous, next: None, index: 5, sentences: SentenceView::default() })
    }

    fn named(f: &MessageFeatures, name: &str) -> f32 {
        f[message_feature_names().iter().position(|n| n == name).unwrap()]
    }

    #[test]
    fn replies_answers_and_roles_read_as_they_should() {
        let offer = "Two options:\n1. a cron job\n2. a queue worker\nWhich one do you prefer?";
        let f = at(Role::User, "2", Some((Role::Assistant, offer)));
        assert_eq!(named(&f, "user:pick"), 1.0);
        assert_eq!(named(&f, "user:after_options"), 1.0);
        assert_eq!(named(&f, "short_reply_to_options"), 1.0);
        assert_eq!(named(&f, "assistant:pick"), 0.0);
        let f = at(Role::User, "保存先は？ → SQLite (not: PostgreSQL)", Some((Role::Assistant, "確認します")));
        assert_eq!((named(&f, "answer"), named(&f, "answer_lists_others"), named(&f, "answer_short")), (1.0, 1.0, 1.0));
        let f = at(Role::User, "<ide_opened_file>x.ts</ide_opened_file>不要用 Redux，改成 context", None);
        assert_eq!(named(&f, "user:negation_first"), 1.0, "the editor context is not what the user typed");
        assert_eq!(named(&f, "user:imperative_choice"), 1.0);
        let f = at(Role::Assistant, "edited src/a.rs; created src/b.rs", None);
        assert_eq!(named(&f, "assistant:activity"), 1.0);
        assert_eq!(f[0], 1.0);
        assert_eq!(message_feature_names().len(), MESSAGE_FEATURE_COUNT);
    }
}
