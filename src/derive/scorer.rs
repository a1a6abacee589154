//! The decision scorer: a logistic regression over hand-made features of one sentence in its
//! message, which decides whether a sentence the rules matched (or one they did not) states a
//! decision, and gives the decision its confidence. Pure.
//!
//! The weights are fitted on the development part of the labelled set only
//! (`tests/data/decision_labels.json`, splits `dev` and `dev2`), by the fit in
//! `tests/integration/decision_eval.rs`, which also checks that refitting reproduces them: the
//! held-out part never shaped a weight or the threshold.

use std::sync::OnceLock;

use crate::text::pattern::Pattern;

use super::sentences::re;
use crate::lexical::tokenize::is_cjk;

/// Names of the features, in the order of [`Features`] (the first is the constant term).
pub const FEATURES: [&str; 36] = [
    "bias",
    "user",
    "rule_strong",
    "rule_mid",
    "rule_weak",
    "rule_cjk",
    "rule_user_only",
    "narrated_instead",
    "list_item",
    "message_asks",
    "first_sentence",
    "message_sentences",
    "sentence_length",
    "after_question",
    "code",
    "fix_or_error",
    "contrast",
    "choice_verb",
    "future",
    "first_person",
    "request",
    "recommendation",
    "report_of_work",
    "labelled",
    "ascii",
    "digits",
    "long_assistant_message",
    "exclamation",
    "refusal",
    "affirmation",
    "short_user_message",
    "imperative",
    "rule_by_assistant",
    "rule_with_code",
    "rule_with_fix",
    "reason",
];

/// One sentence's features, each in `[0, 1]`, in the order of [`FEATURES`].
pub type Features = [f32; FEATURES.len()];

/// Where a sentence sits and what matched it; the rest is read from its text.
#[derive(Debug, Clone, Copy)]
pub struct SentenceContext {
    /// Written by the user.
    pub user: bool,
    /// Confidence of the rule that matched the sentence, if one did.
    pub rule: Option<f32>,
    /// The matching rule is one of the Chinese, Japanese or Korean rules.
    pub rule_cjk: bool,
    /// The matching rule applies to the user's messages only (preferences, "I don't want").
    pub rule_user_only: bool,
    /// Matched as "let me … instead, since …".
    pub narrated: bool,
    /// The sentence is a list item.
    pub item: bool,
    /// The message (the assistant's) ends by asking something.
    pub asks: bool,
    /// Index of the sentence in its message.
    pub index: usize,
    /// Sentences in the message.
    pub sentences: usize,
    /// The message before is the assistant's and ends with a question.
    pub after_question: bool,
    /// Words in the message (CJK characters count as one word each).
    pub words: usize,
}

/// Phrases of one kind, in the languages of the corpus, each a case-insensitive regex.
struct Lexicon {
    code: Pattern,
    fix: Pattern,
    contrast: Pattern,
    choice: Pattern,
    future: Pattern,
    first_person: Pattern,
    request: Pattern,
    recommendation: Pattern,
    report: Pattern,
    labelled: Pattern,
    refusal: Pattern,
    affirmation: Pattern,
    imperative: Pattern,
    reason: Pattern,
}

fn lexicon() -> &'static Lexicon {
    static L: OnceLock<Lexicon> = OnceLock::new();
    L.get_or_init(|| Lexicon {
        code: re(r"`|::|\(\)|\b[\w-]+\.(?:rs|py|ts|js|json|toml|md|sh|yaml|yml|go|c|h|cpp|lua|conf)\b|/[\w.-]+/"),
        fix: re(r"(?i)\b(?:fix|bug|error|fails?|broken|crash|line \d+)\b|修复|错误|报错|问题|第\d+行|エラー|バグ|修正|오류|에러|버그|수정"),
        contrast: re(
            r"(?i)\b(?:instead|rather than|not\s+\S+\s+but|over)\b|而不是|而非|代替|取代|不要|别用|ではなく|じゃなく|代わりに|대신|말고|아니라",
        ),
        choice: re(
            r"(?i)\b(?:use|using|go with|switch|keep|adopt|stick with|stay|pin|choose|chose|pick|prefer|drop|remove)\b|用|采用|保留|换|選|使う|使用|採用|残す|사용|쓰|유지|선택",
        ),
        future: re(
            r"(?i)\b(?:will|'ll|going to|from now on|going forward|always|never|until)\b|以后|今后|一律|始终|总是|永远|これから|今後|常に|앞으로|항상|절대",
        ),
        first_person: re(r"(?i)\b(?:we|i|i'm|i've|let's|our|my)\b|我们|我|咱|私|僕|俺|우리|저는|제가|내가|나는"),
        request: re(r"(?i)\b(?:please|can you|could you)\b|请|麻烦|帮我|给我|ください|お願い|해줘|해 줘|주세요|해주"),
        recommendation: re(
            r"(?i)\b(?:should|recommend|suggest|i'd|consider|could)\b|建议|推荐|应该|可以考虑|べき|おすすめ|推奨|추천|권장|해야|하는 게 좋",
        ),
        report: re(
            r"(?i)\b(?:i've|i have|updated|fixed|added|created|done|completed|now (?:shows|works))\b|已经|已|完成|成功|しました|完了|했습니다|완료|됐습니다",
        ),
        labelled: re(r"(?i)^(?:decision|decided|conclusion|final)\s*[:：]|^(?:结论|决定|決定|結論|方針|결정|결론)\s*[:：]"),
        refusal: re(
            r"(?i)\b(?:don'?t|do not|no need|not needed|never|stop)\b|不需要|不用|不想|不要|别|いらない|不要|必要ない|やめ|필요\s*없|하지 마|안 해",
        ),
        reason: re(r"(?i)\b(?:because|since|so that|due to|as it|which means)\b|因为|由于|所以|因此|ため|ので|から、|때문|니까|므로"),
        imperative: re(
            r"(?i)^(?:(?:ok|okay|yes|no|so|then|just|please|lets|let's|now)[,\s]+)*(?:use|add|remove|delete|move|wipe|install|keep|drop|switch|change|make|set|put|go|skip|leave|create|proceed|do|don't|stop|revert|rename|replace|merge|push|deploy|write|update|disable|enable)\b",
        ),
        affirmation: re(r"(?i)^\W*(?:yes|yeah|ok|okay|sure|agreed|good|great)\b|^\W*(?:好|可以|行|对|是的|嗯|はい|ええ|네|예|응|좋아)"),
    })
}

/// The features of sentence `s` in its context.
pub fn features(s: &str, c: &SentenceContext) -> Features {
    let l = lexicon();
    let b = |x: bool| f32::from(u8::from(x));
    let letters = s.chars().filter(|ch| ch.is_alphabetic()).count().max(1);
    let ascii = s.chars().filter(|ch| ch.is_ascii_alphabetic()).count();
    let digits = s.chars().filter(char::is_ascii_digit).count();
    let chars = s.chars().count();
    // Length in words, a Chinese, Japanese or Korean character counting as half of one (as a
    // word there is one to three characters), so that length means the same in every language.
    let cjk = s.chars().filter(|ch| is_cjk(*ch)).count();
    let words = s.split_whitespace().filter(|w| !w.chars().all(is_cjk)).count() as f32 + cjk as f32 / 2.0;
    // Read once, used alone and with the rule.
    let (code, fix) = (l.code.is_match(s), l.fix.is_match(s));
    let rule = c.rule.unwrap_or(0.0);
    [
        1.0,
        b(c.user),
        b(c.rule.is_some() && rule >= 0.8),
        b(c.rule.is_some() && (0.6..0.8).contains(&rule)),
        b(c.rule.is_some() && rule < 0.6),
        b(c.rule_cjk),
        b(c.rule_user_only),
        b(c.narrated),
        b(c.item),
        b(c.asks),
        b(c.index == 0),
        // Lengths on a log scale, full from about 53 sentences or words on.
        (((1 + c.sentences) as f32).ln() / 4.0).min(1.0),
        ((1.0 + words).ln() / 4.0).min(1.0),
        b(c.after_question),
        b(code),
        b(fix),
        b(l.contrast.is_match(s)),
        b(l.choice.is_match(s)),
        b(l.future.is_match(s)),
        b(l.first_person.is_match(s)),
        b(l.request.is_match(s)),
        b(l.recommendation.is_match(s)),
        b(l.report.is_match(s)),
        b(l.labelled.is_match(s.trim())),
        b(ascii * 2 >= letters),
        b(digits * 10 > chars),
        b(!c.user && c.sentences >= 8),
        b(s.contains('!') || s.contains('！')),
        b(l.refusal.is_match(s)),
        b(l.affirmation.is_match(s)),
        b(c.user && c.words <= 30),
        b(l.imperative.is_match(s.trim())),
        b(c.rule.is_some() && !c.user),
        b(c.rule.is_some() && code),
        b(c.rule.is_some() && fix),
        b(l.reason.is_match(s)),
    ]
}

/// A fitted scorer: one weight per feature and the probability from which a sentence is a
/// decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Scorer {
    /// One weight per entry of [`FEATURES`].
    pub weights: Features,
    /// Sentences whose probability is at least this are decisions.
    pub threshold: f32,
}

impl Scorer {
    /// The probability that a sentence with these features states a decision.
    pub fn probability(&self, f: &Features) -> f32 {
        let z: f32 = self.weights.iter().zip(f).map(|(w, x)| w * x).sum();
        1.0 / (1.0 + (-z).exp())
    }
}

impl Default for Scorer {
    /// The weights fitted on the development part of the labelled set (see the module docs).
    fn default() -> Self {
        Scorer { weights: WEIGHTS, threshold: THRESHOLD }
    }
}

/// Fitted weights (`tests/integration/decision_eval.rs` refits them and prints the table).
// A fitted number may happen to sit near a mathematical constant.
#[allow(clippy::approx_constant)]
const WEIGHTS: Features = [
    -4.9541, // bias
    2.4945,  // user
    4.9179,  // rule_strong
    4.1631,  // rule_mid
    4.5876,  // rule_weak
    -2.8291, // rule_cjk
    -0.6808, // rule_user_only
    0.8023,  // narrated_instead
    0.2016,  // list_item
    -0.3582, // message_asks
    -0.8040, // first_sentence
    -4.5955, // message_sentences
    3.7191,  // sentence_length
    -0.0299, // after_question
    0.2259,  // code
    -0.6785, // fix_or_error
    1.2323,  // contrast
    0.9128,  // choice_verb
    -0.4647, // future
    -0.2105, // first_person
    -1.1366, // request
    0.9678,  // recommendation
    0.2649,  // report_of_work
    -0.3885, // labelled
    -0.4021, // ascii
    0.1703,  // digits
    1.8404,  // long_assistant_message
    0.0896,  // exclamation
    0.2556,  // refusal
    1.4313,  // affirmation
    0.0250,  // short_user_message
    0.6199,  // imperative
    1.4057,  // rule_by_assistant
    -0.4406, // rule_with_code
    0.1527,  // rule_with_fix
    -0.7552, // reason
];
const THRESHOLD: f32 = 0.200;

#[cfg(test)]
mod tests {
    use super::*;

    fn context(user: bool, rule: Option<f32>) -> SentenceContext {
        SentenceContext {
            user,
            rule,
            rule_cjk: false,
            rule_user_only: false,
            narrated: false,
            item: false,
            asks: false,
            index: 0,
            sentences: 1,
            after_question: false,
            words: 8,
        }
    }

    #[test]
    fn features_are_bounded_and_length_reads_alike_across_scripts() {
        let long = "word ".repeat(2_000);
        for s in ["We decided to use Postgres.", "决定使用 Postgres。", "", long.as_str()] {
            let f = features(s, &context(true, Some(0.9)));
            assert_eq!(f[0], 1.0, "the constant term");
            assert!(f.iter().all(|x| (0.0..=1.0).contains(x)), "{s:?}: {f:?}");
        }
        // Six words, or twelve Chinese characters (about six words): the same length feature.
        let at = FEATURES.iter().position(|n| *n == "sentence_length").expect("feature");
        let en = features("keep the old parser for now", &context(true, None))[at];
        let zh = features("暂时保留旧的解析器吧先这样", &context(true, None))[at];
        assert!((en - zh).abs() < 0.05, "{en} vs {zh}");
    }

    #[test]
    fn the_fitted_scorer_trusts_a_strong_rule_more_than_no_rule() {
        let s = Scorer::default();
        let sentence = "We decided to keep the monolith for now.";
        let ruled = s.probability(&features(sentence, &context(true, Some(0.9))));
        let bare = s.probability(&features(sentence, &context(true, None)));
        assert!(ruled >= s.threshold && bare < s.threshold, "{ruled} / {bare} (threshold {})", s.threshold);
        assert!((0.0..=1.0).contains(&ruled) && (0.0..=1.0).contains(&bare));
    }
}
